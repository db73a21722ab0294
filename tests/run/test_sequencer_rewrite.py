"""A wrong reproduction recovered in the sequencer: when the run's last step fails only on the
reproduction, the test is judged (one yes/no) and, when wrong, written again on the base commit,
the passed steps carried onto it, and the last step landed again."""

from __future__ import annotations

from typing import Any

from tests.fakes.scripted_model import edit, meta_plan, part_plan, plan_step
from tests.run.conftest import Sequencer
from tests.run.test_sequencer_reproduction import (
    BUGGY,
    FIX_STEP,
    FIXED,
    ISSUE,
    MUL_TEST,
    REPRO_ID,
    REPRODUCTION,
    buggy,
    script_fix,
)

ON: dict[str, Any] = {"reproduce": True}
WRONG = edit("test_mul.py", "", MUL_TEST.format(expected=5))  # fails on the base, as a bug would
FIX = edit("calc.py", BUGGY.rstrip(), FIXED.rstrip())


def test_a_test_judged_wrong_is_written_again_and_the_fix_lands_on_it(
    sequencer: Sequencer,
) -> None:
    buggy(sequencer)
    sequencer.models.script("reproduce", WRONG)
    script_fix(sequencer)
    sequencer.models.script("implement_retry", FIX)
    sequencer.models.script("reproduction_wrong", "yes")
    sequencer.models.script("reproduce_retry", REPRODUCTION)
    sequencer.models.script("implement", FIX)

    result = sequencer.solve(ISSUE, orchestrator=ON)

    assert result.status == "complete", result.error
    found = result.reproduction
    assert found is not None and found.status == "reproduced" and found.passes is True
    assert found.tests == [REPRO_ID] and "AssertionError: 7 != 6" in found.before
    assert len(found.rewritten) == 1 and "judged wrong" in found.rewritten[0]
    assert result.branch is not None
    assert sequencer.commits(result.branch) == [
        "Fix mul in calc.py",
        f"Reproduce the issue: {ISSUE}",
    ]
    assert "mul(2, 3), 6)" in sequencer.show(result.branch, "test_mul.py")
    assert [s.status for s in result.steps] == ["passed"]  # the superseded landing is not kept
    judged = sequencer.models.prompts("reproduction_wrong")[0]
    assert "mul(2, 3), 5)" in judged and "6 != 5" in judged and "return a * b" in judged
    rewrite = sequencer.models.prompts("reproduce_retry")[0]
    assert "judged wrong" in rewrite and "mul(2, 3), 5)" in rewrite
    assert sequencer.state(result, "reproduction")["rewritten"] == found.rewritten


def test_a_test_judged_right_stands_and_the_run_is_not_complete(sequencer: Sequencer) -> None:
    buggy(sequencer)
    sequencer.models.script("reproduce", REPRODUCTION)
    wrong_fix = edit("calc.py", BUGGY.rstrip(), BUGGY.rstrip().replace("+ 1", "+ 2"))
    script_fix(sequencer, fix=BUGGY.replace("+ 1", "+ 2"))
    sequencer.models.script("implement_retry", wrong_fix)
    sequencer.models.script("reproduction_wrong", "no")

    result = sequencer.solve(ISSUE, orchestrator=ON)

    assert result.status != "complete"
    found = result.reproduction
    assert found is not None and found.rewritten == [] and found.passes is False
    assert "reproduce_retry" not in sequencer.models.stages
    assert sequencer.state(result, "reproduction_judged") == "right"


def test_the_same_test_written_again_is_no_rewrite(sequencer: Sequencer) -> None:
    buggy(sequencer)
    sequencer.models.script("reproduce", WRONG)
    script_fix(sequencer)
    sequencer.models.script("implement_retry", FIX)
    sequencer.models.script("reproduction_wrong", "yes")
    sequencer.models.script("reproduce_retry", WRONG, WRONG, WRONG)

    result = sequencer.solve(ISSUE, orchestrator=ON)

    assert result.status != "complete"
    found = result.reproduction
    assert found is not None and found.rewritten == [] and found.passes is False
    retries = sequencer.models.prompts("reproduce_retry")
    assert len(retries) == 3 and "written again" in retries[1]
    assert result.branch is not None  # the worktree is back on the run's head
    assert "mul(2, 3), 5)" in sequencer.show(result.branch, "test_mul.py")


def test_the_steps_that_passed_are_carried_onto_the_new_test(sequencer: Sequencer) -> None:
    """A first part that passed on the wrong test is carried onto the rewritten one."""
    buggy(sequencer)
    sequencer.models.script("reproduce", WRONG)
    sequencer.models.script(
        "meta_plan",
        meta_plan(("p1", "Note", ["NOTES.md"]), ("p2", "Fix mul", ["calc.py"]), depends={}),
    )
    sequencer.models.script(
        "part_plan",
        part_plan("p1", plan_step("s1", "Add a note", ["NOTES.md"])),
        part_plan("p2", FIX_STEP),
    )
    sequencer.models.script("implement", edit("NOTES.md", "", "mul multiplies."), FIX, FIX)
    sequencer.models.script("implement_retry", FIX)
    sequencer.models.script("reproduction_wrong", "yes")
    sequencer.models.script("reproduce_retry", REPRODUCTION)

    result = sequencer.solve(ISSUE, orchestrator=ON)

    assert result.status == "complete", result.error
    assert result.branch is not None
    assert sequencer.commits(result.branch) == [
        "Fix mul in calc.py",
        "Add a note",
        f"Reproduce the issue: {ISSUE}",
    ]
    assert sequencer.show(result.branch, "NOTES.md").strip() == "mul multiplies."
    assert "NOTES.md" in result.diff and "mul(2, 3), 5)" not in result.diff


def test_no_judgment_when_rewrites_are_off(sequencer: Sequencer) -> None:
    buggy(sequencer)
    sequencer.models.script("reproduce", WRONG)
    script_fix(sequencer)
    sequencer.models.script("implement_retry", FIX)

    result = sequencer.solve(ISSUE, orchestrator={**ON, "max_reproduction_rewrites": 0})

    assert result.status != "complete"
    assert "reproduction_wrong" not in sequencer.models.stages


def test_no_judgment_when_the_fix_also_breaks_another_test(sequencer: Sequencer) -> None:
    """Only a failure the reproduction alone holds against the fix may be the test's fault."""
    buggy(sequencer)
    sequencer.models.script("reproduce", WRONG)
    breaking = FIXED.replace("return a + b", "return a - b")
    script_fix(sequencer, fix=breaking)
    sequencer.models.script("implement_retry", edit("calc.py", BUGGY.rstrip(), breaking.rstrip()))

    result = sequencer.solve(ISSUE, orchestrator=ON)

    assert result.status != "complete"
    assert "reproduction_wrong" not in sequencer.models.stages
