"""The reproduction pass in the sequencer: before any fix, a test that fails on the base commit
the way the issue describes is written, committed alone, and made the run's gate."""

from __future__ import annotations

from typing import Any

from agent.models import PlanStep, Reproduction, ValidationResult
from agent.run.reproduction import final_state
from tests.fakes.repos import git_in, write_files
from tests.fakes.scripted_model import edit, meta_plan, part_plan, plan_step
from tests.run.conftest import CALC, Sequencer

BUGGY = CALC + "\n\ndef mul(a, b):\n    return a * b + 1\n"
FIXED = CALC + "\n\ndef mul(a, b):\n    return a * b\n"
ISSUE = "mul(2, 3) returns 7; it should return 6."
MUL_TEST = """import unittest

from calc import mul


class MulTest(unittest.TestCase):
    def test_mul(self):
        self.assertEqual(mul(2, 3), {expected})
"""
REPRODUCTION = edit("test_mul.py", "", MUL_TEST.format(expected=6))
REPRO_ID = "test_mul.MulTest.test_mul"
FIX_STEP = plan_step("s1", "Fix mul in calc.py", ["calc.py"])
ON: dict[str, Any] = {"reproduce": True}


def buggy(run: Sequencer) -> None:
    """The repository with mul's bug committed on main (its tests do not test mul)."""
    write_files(run.repo, {"calc.py": BUGGY})
    git_in(run.repo, "commit", "--quiet", "-am", "Add mul")


def script_fix(run: Sequencer, fix: str = FIXED) -> None:
    run.models.script("meta_plan", meta_plan(("p1", "Fix mul", ["calc.py"])))
    run.models.script("part_plan", part_plan("p1", FIX_STEP))
    run.models.script("implement", edit("calc.py", BUGGY.rstrip(), fix.rstrip()))


def test_a_reproduction_is_committed_alone_first_and_passes_once_the_fix_lands(
    sequencer: Sequencer,
) -> None:
    buggy(sequencer)
    sequencer.models.script("reproduce", REPRODUCTION)
    script_fix(sequencer)

    result = sequencer.solve(ISSUE, orchestrator=ON)

    assert result.status == "complete", result.error
    found = result.reproduction
    assert found is not None and found.status == "reproduced", found
    assert found.tests == [REPRO_ID] and found.files == ["test_mul.py"]
    assert "AssertionError: 7 != 6" in found.before
    assert found.passes is True and "pass" in found.after
    assert result.branch is not None
    assert sequencer.commits(result.branch) == [
        "Fix mul in calc.py",
        f"Reproduce the issue: {ISSUE}",
    ]
    assert [c.stage for c in sequencer.models.calls][:2] == ["reproduce", "meta_plan"]
    planner = sequencer.models.prompts("meta_plan")[0]
    assert "test_mul.py" in planner  # the planner is shown the reproduction
    assert sequencer.state(result, "reproduction")["passes"] is True


def test_a_fix_that_leaves_the_reproduction_failing_is_not_complete(sequencer: Sequencer) -> None:
    """The honest gate: an edit that applies and breaks nothing, but does not fix the issue,
    does not end the run complete (the existing tests alone would have let it through)."""
    buggy(sequencer)
    sequencer.models.script("reproduce", REPRODUCTION)
    wrong = CALC + "\n\ndef mul(a, b):\n    return b * a + 1\n"
    script_fix(sequencer, fix=wrong)
    sequencer.models.script("implement_retry", edit("calc.py", BUGGY.rstrip(), wrong.rstrip()))

    result = sequencer.solve(ISSUE, orchestrator=ON)

    assert result.status != "complete"
    assert result.reproduction is not None and result.reproduction.passes is False
    last = result.steps[0].attempts[-1].validation
    assert last is not None and REPRO_ID in last.failing_tests


def test_a_test_that_passes_before_the_fix_is_asked_again_with_why(sequencer: Sequencer) -> None:
    buggy(sequencer)
    passing = edit("test_mul.py", "", MUL_TEST.format(expected=7))
    sequencer.models.script("reproduce", passing)
    sequencer.models.script("reproduce_retry", REPRODUCTION)
    script_fix(sequencer)

    result = sequencer.solve(ISSUE, orchestrator=ON)

    assert result.status == "complete", result.error
    assert result.reproduction is not None and result.reproduction.attempts == 2
    retry = sequencer.models.prompts("reproduce_retry")[0]
    assert "passes on the code before the fix" in retry


def test_a_test_that_cannot_run_is_not_a_reproduction(sequencer: Sequencer) -> None:
    """An import of something that is not there fails, but not the way the issue describes."""
    buggy(sequencer)
    broken = edit("test_mul.py", "", MUL_TEST.format(expected=6).replace("mul\n", "multiply\n", 1))
    sequencer.models.script("reproduce", broken)
    sequencer.models.script("reproduce_retry", broken, broken)
    script_fix(sequencer)

    result = sequencer.solve(ISSUE, orchestrator=ON)

    found = result.reproduction
    assert found is not None and found.status == "none" and found.attempts == 3
    assert "ImportError" in found.why and "cannot run" in found.why
    assert result.status == "complete"  # gated by the existing tests, and it says so
    assert result.branch is not None and sequencer.commits(result.branch) == ["Fix mul in calc.py"]


def test_a_reproduction_that_changes_code_is_refused(sequencer: Sequencer) -> None:
    buggy(sequencer)
    cheat = edit("calc.py", BUGGY.rstrip(), FIXED.rstrip())
    sequencer.models.script("reproduce", cheat)
    sequencer.models.script("reproduce_retry", REPRODUCTION)
    script_fix(sequencer)

    result = sequencer.solve(ISSUE, orchestrator=ON)

    assert result.reproduction is not None and result.reproduction.status == "reproduced"
    retry = sequencer.models.prompts("reproduce_retry")[0]
    assert "changes only test files" in retry and "calc.py" in retry


def test_a_declined_reproduction_says_why_and_the_run_goes_on(sequencer: Sequencer) -> None:
    buggy(sequencer)
    sequencer.models.script(
        "reproduce", "<no_reproduction>only a comment changes</no_reproduction>"
    )
    script_fix(sequencer)

    result = sequencer.solve(ISSUE, orchestrator=ON)

    assert result.status == "complete", result.error
    found = result.reproduction
    assert found is not None and found.status == "none" and "only a comment changes" in found.why


def test_an_issue_naming_its_failing_test_needs_no_reproduction(sequencer: Sequencer) -> None:
    buggy(sequencer)
    sequencer.commit_files({"test_mul.py": MUL_TEST.format(expected=6)}, "A failing test")
    script_fix(sequencer)

    result = sequencer.solve(f"{ISSUE} See {REPRO_ID}.", orchestrator=ON)

    assert result.status == "complete", result.error
    assert result.reproduction is not None and result.reproduction.status == "named"
    assert result.reproduction.tests == [REPRO_ID]
    assert "reproduce" not in sequencer.models.stages


def test_a_step_that_weakens_the_reproduction_is_refused(sequencer: Sequencer) -> None:
    """Once committed, the reproduction is an existing test: a fix that rewrites it to pass on
    the buggy code is refused on the reproduction as committed."""
    buggy(sequencer)
    sequencer.models.script("reproduce", REPRODUCTION)
    sequencer.models.script("meta_plan", meta_plan(("p1", "Fix mul", ["test_mul.py"])))
    weaken = plan_step("s1", "Make the test expect 7", ["test_mul.py"])
    sequencer.models.script("part_plan", part_plan("p1", weaken))
    cheat = edit("test_mul.py", "mul(2, 3), 6)", "mul(2, 3), 7)")
    sequencer.models.script("implement", cheat)
    sequencer.models.script("implement_retry", cheat)

    result = sequencer.solve(ISSUE, orchestrator=ON)

    assert result.status != "complete"
    assert result.reproduction is not None and result.reproduction.passes is False


def test_a_declared_change_of_the_reproduction_is_refused_even_when_the_task_would_allow_it(
    sequencer: Sequencer,
) -> None:
    """The reproduction's files are never an existing test the task asks to change: a step
    declaring it changes them, told yes, is still judged on the reproduction as committed."""
    buggy(sequencer)
    sequencer.models.script("reproduce", REPRODUCTION)
    sequencer.models.script("meta_plan", meta_plan(("p1", "Fix mul", ["test_mul.py"])))
    weaken = PlanStep(
        id="s1",
        description="Make the test expect 7",
        target_files=["test_mul.py"],
        changes_existing_tests=True,
    )
    sequencer.models.script("part_plan", part_plan("p1", weaken))
    cheat = edit("test_mul.py", "mul(2, 3), 6)", "mul(2, 3), 7)")
    sequencer.models.script("implement", cheat)
    sequencer.models.script("implement_retry", cheat)
    sequencer.models.script("gate_test_change", "yes", "yes")

    result = sequencer.solve(ISSUE, orchestrator=ON)

    assert result.status != "complete"
    assert result.reproduction is not None and result.reproduction.passes is False
    assert result.steps[0].status == "failed"


def test_the_end_state_of_a_reproduction_named_by_its_file_reads_as_the_gate_reads_it() -> None:
    """A test file that could not be collected before the fix (an import of the name the issue
    asks for) is its own id: it passes when the tests in it pass."""
    found = Reproduction(status="reproduced", tests=["tests/test_flags.py"], files=["x"])
    after = ValidationResult(
        success=True, passing_tests=["tests/test_flags.py::test_flags", "tests/test_a.py::t"]
    )
    assert final_state(found, after).passes is True
    failing = ValidationResult(success=False, failing_tests=["tests/test_flags.py::test_flags"])
    assert final_state(found, failing).passes is False


AREA = "def ratio(total, count):\n    return total / count\n"
REPORT = """from geometry.area import ratio


def summary(items):
    return ratio(sum(items), len(items))
"""
REPORT_TEST = """import unittest

from report import summary


class SummaryTest(unittest.TestCase):
    def test_empty(self):
        self.assertEqual(summary([]), 0)
"""


def test_the_planner_is_shown_the_code_the_reproduction_fails_in(sequencer: Sequencer) -> None:
    """Recall-first: the module the reproduction's traceback reaches (an absolute path in the
    worktree) is in the plan's context, though the issue's words never name it."""
    sequencer.commit_files(
        {"geometry/__init__.py": "", "geometry/area.py": AREA, "report.py": REPORT}, "Reports"
    )
    sequencer.models.script("reproduce", edit("test_report.py", "", REPORT_TEST))
    sequencer.models.script("meta_plan", meta_plan(("p1", "Guard the ratio", ["report.py"])))
    sequencer.models.script("part_plan", part_plan("p1", plan_step("s1", "Guard", ["report.py"])))
    guard = "    return ratio(sum(items), len(items)) if items else 0"
    sequencer.models.script("implement", edit("report.py", REPORT.splitlines()[-1], guard))

    result = sequencer.solve(
        "An empty report crashes instead of summing to zero.",
        orchestrator=ON,
    )

    assert result.status == "complete", result.error
    assert result.reproduction is not None and "ZeroDivisionError" in result.reproduction.before
    planner = sequencer.models.prompts("meta_plan")[0]
    assert '<file path="geometry/area.py"' in planner
