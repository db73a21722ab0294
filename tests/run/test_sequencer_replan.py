"""A part planned again: when every step of a part failed, nothing landed, and what they met
shows the plan was wrong — no attempt found anything to change in the files it names, or the
failure's traceback never reaches them — the part is planned once more, shown why, its context
seeded with the failure (orchestrator.max_replans)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.execute.plan_material import format_step_results
from agent.execute.plan_rules import replan_evidence
from agent.models import AttemptRecord, PatchEdit, PlanStep, StepOutcome
from agent.run.plan_passes import Replan
from agent.run.sources import mentioned_paths
from tests.fakes.repos import write_files
from tests.fakes.scripted_model import edit, meta_plan, part_plan, plan_step
from tests.run.conftest import Sequencer
from tests.run.test_sequencer_reproduction import AREA, REPORT, REPORT_TEST

ISSUE = "An empty report crashes instead of summing to zero."
CANNOT = "I cannot see the code this step must change, so I cannot write an edit for it."
GUARD = "    return ratio(sum(items), len(items)) if items else 0"
ON: dict[str, Any] = {"reproduce": True, "max_replans": 1}


def reports(run: Sequencer) -> None:
    """The repository with the report module's bug committed on main."""
    run.commit_files(
        {"geometry/__init__.py": "", "geometry/area.py": AREA, "report.py": REPORT}, "Reports"
    )
    run.models.script("reproduce", edit("test_report.py", "", REPORT_TEST))


def wrong_plan(run: Sequencer) -> None:
    """A plan on calc.py, where no attempt finds anything to change."""
    run.models.script("meta_plan", meta_plan(("p1", "Guard the ratio", ["calc.py"])))
    run.models.script("part_plan", part_plan("p1", plan_step("s1", "Guard it", ["calc.py"])))
    run.models.script("implement", CANNOT)
    run.models.script("implement_retry", CANNOT)


def test_a_part_whose_steps_found_nothing_to_change_is_planned_again(
    sequencer: Sequencer,
) -> None:
    reports(sequencer)
    wrong_plan(sequencer)
    step = plan_step("s1", "Return 0 for no items", ["report.py"])
    sequencer.models.script("part_plan_retry", part_plan("p1", step))
    sequencer.models.script("implement", edit("report.py", REPORT.splitlines()[-1], GUARD))

    result = sequencer.solve(ISSUE, orchestrator=ON)

    assert result.status == "complete", result.error
    assert result.branch is not None
    assert sequencer.commits(result.branch) == [
        "Return 0 for no items",
        f"Reproduce the issue: {ISSUE}",
    ]
    [plan] = result.part_plans  # the failed plan left the result; the run log keeps it
    assert "planned again: no attempt found anything to change in calc.py" in plan.rationale
    assert "the failure's traceback runs through report.py, geometry/area.py" in plan.rationale
    assert [(s.step_id, s.status) for s in result.steps] == [("s1", "passed")]
    again = sequencer.models.prompts("part_plan_retry")[0]
    assert "A plan of this part failed" in again
    assert '<file path="geometry/area.py"' in again  # its context seeded with the traceback
    # retrieved for the issue too: the part's description came from the plan that was wrong
    assert sequencer.gathered[2] == "Guard the ratio"  # the first part plan: its description
    assert f"{ISSUE}\n\nGuard the ratio" in sequencer.gathered
    assert all(c.stage.startswith("adjustment") for c in sequencer.models.unscripted)


def test_no_plan_is_made_again_by_default(sequencer: Sequencer) -> None:
    reports(sequencer)
    wrong_plan(sequencer)

    result = sequencer.solve(ISSUE, orchestrator={"reproduce": True})

    assert result.status != "complete"
    assert "part_plan_retry" not in sequencer.models.stages


def test_a_failed_plan_is_made_again_at_most_max_replans_times(sequencer: Sequencer) -> None:
    reports(sequencer)
    wrong_plan(sequencer)
    sequencer.models.script(
        "part_plan_retry", part_plan("p1", plan_step("s1", "Again", ["calc.py"]))
    )
    sequencer.models.script("implement", CANNOT)
    sequencer.models.script("implement_retry", CANNOT)

    result = sequencer.solve(ISSUE, orchestrator=ON)

    assert result.status != "complete"
    assert sequencer.models.stages.count("part_plan_retry") == 1
    assert len(result.part_plans) == 1 and len(result.steps) == 1  # the last plan's


def failed(step_id: str, *, edits: bool) -> StepOutcome:
    found = [PatchEdit(file_path="a.py", search="x", replacement="y")] if edits else []
    attempt = AttemptRecord(attempt=1, raw_response="", edits=found)
    return StepOutcome(
        part_id="p1", step_id=step_id, description="", status="failed", attempts=[attempt]
    )


STEPS = [PlanStep(id="s1", description="", target_files=["a.py"])]


def test_the_evidence_that_a_plan_was_wrong() -> None:
    # an edit made in a file the traceback reaches: the code was wrong, not the plan
    assert replan_evidence(STEPS, [failed("s1", edits=True)], ["tests/test_a.py", "a.py"]) is None
    assert replan_evidence(STEPS, [failed("s1", edits=True)], []) is None
    # no edit anywhere: the code to change is elsewhere
    why = replan_evidence(STEPS, [failed("s1", edits=False)], [])
    assert why == "no attempt found anything to change in a.py"
    # a traceback through source files no step changes (test files do not count)
    why = replan_evidence(STEPS, [failed("s1", edits=True)], ["tests/test_b.py", "b.py", "b.py"])
    assert why == "the failure's traceback runs through b.py, which no step changes"
    # a step that passed, or none attempted: nothing shows the plan wrong
    passed = failed("s1", edits=True).model_copy(update={"status": "passed"})
    assert replan_evidence(STEPS, [passed, failed("s2", edits=False)], []) is None
    skipped = StepOutcome(part_id="p1", step_id="s1", description="", status="skipped")
    assert replan_evidence(STEPS, [skipped], ["b.py"]) is None


def test_a_planner_is_shown_why_however_long_the_failure() -> None:
    shown = format_step_results([Replan("no attempt found anything", "x" * 10_000).as_result()])
    assert "A plan of this part failed: no attempt found anything." in shown


def test_a_traceback_is_read_as_the_host_and_the_sandbox_see_the_worktree(tmp_path: Path) -> None:
    write_files(tmp_path, {"report.py": REPORT, "geometry/area.py": AREA})
    failure = (
        f'  File "{tmp_path}/report.py", line 5, in summary\n'
        '  File "/cra/work/geometry/area.py", line 2, in ratio\n'
        '  File "/usr/lib/python3.11/unittest/case.py", line 57, in testPartExecutor\n'
    )
    assert mentioned_paths(tmp_path, failure) == ["report.py", "geometry/area.py"]
