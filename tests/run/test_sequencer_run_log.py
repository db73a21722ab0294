"""The sequencer in-process: every pass, model call, attempt and piece of state of a run is on
record in the run log, and the observer sees the run in order."""

from __future__ import annotations

import pytest

from tests.fakes.scripted_model import adjustment, edit, meta_plan, part_plan, plan_step
from tests.run.conftest import CALC, Sequencer, Solved

ADD_SUB = plan_step("s1", "Add sub to calc.py", ["calc.py"])
ADD_MUL = plan_step("s2", "Add mul to calc.py", ["calc.py"], depends_on=["s1"])
ADD_NEG = plan_step("s1", "Add neg to calc.py", ["calc.py"])
SUB, MUL, NEG = (
    "\n\n\ndef sub(a, b):\n    return a - b",
    "\n\n\ndef mul(a, b):\n    return a * b",
    "\n\n\ndef neg(a):\n    return -a",
)


def script_two_parts(run: Sequencer) -> None:
    """Part p1 (sub, then mul) and part p2 (neg): three steps, one adjustment (after p1/s1)."""
    run.models.script(
        "meta_plan",
        meta_plan(("p1", "Add sub and mul", ["calc.py"]), ("p2", "Add neg", ["calc.py"])),
    )
    run.models.script("part_plan", part_plan("p1", ADD_SUB, ADD_MUL), part_plan("p2", ADD_NEG))
    run.models.script(
        "implement",
        edit("calc.py", CALC.rstrip(), CALC.rstrip() + SUB),
        edit("calc.py", "    return a - b", "    return a - b" + MUL),
        edit("calc.py", "    return a * b", "    return a * b" + NEG),
    )
    run.models.script("adjustment", adjustment(ADD_MUL))


@pytest.fixture(scope="module")
def solved(module_sequencer: Sequencer) -> Solved:
    script_two_parts(module_sequencer)
    return Solved(module_sequencer, module_sequencer.solve("Add sub, mul and neg"))


def test_every_pass_is_recorded_in_order_and_linked_to_its_part_and_step(solved: Solved) -> None:
    sequencer, result = solved.run, solved.result

    run = sequencer.recorded(result)
    assert [(p.pass_type, p.part_id, p.step_id) for p in run.passes] == [
        ("baseline", None, None),
        ("meta_plan", None, None),
        ("part_plan", "p1", None),
        ("implement", "p1", "s1"),
        ("adjustment", "p1", "s1"),
        ("implement", "p1", "s2"),
        ("part_plan", "p2", None),
        ("implement", "p2", "s1"),
    ]
    assert [p.sequence_order for p in run.passes] == list(range(1, 9))
    assert (run.status, run.total_parts, run.parts_completed) == ("complete", 2, 2)
    assert (run.total_steps, run.steps_completed) == (3, 3)


def test_every_model_call_is_recorded_under_its_pass(solved: Solved) -> None:
    sequencer, result = solved.run, solved.result

    recorded = []
    for recorded_pass in sequencer.recorded(result).passes:
        task_run = sequencer.log.get_task_run(recorded_pass.task_run_id)
        assert task_run is not None
        stages = [c.record.stage for c in task_run.llm_calls]
        assert all(recorded_pass.pass_type in stage for stage in stages)
        recorded += stages
    assert recorded == sequencer.models.stages
    assert len(recorded) == 7


def test_each_attempt_is_recorded_with_the_test_run_that_judged_it(solved: Solved) -> None:
    sequencer, result = solved.run, solved.result

    passes = sequencer.recorded(result).passes
    baseline = sequencer.log.get_task_run(passes[0].task_run_id)
    assert baseline is not None and [v.result.success for v in baseline.baseline] == [True]
    for implement in (p for p in passes if p.pass_type == "implement"):
        task_run = sequencer.log.get_task_run(implement.task_run_id)
        assert task_run is not None and task_run.status == "complete"
        [attempt] = task_run.attempts
        assert attempt.patch_applied
        assert [(v.kind, v.result.success) for v in attempt.validations] == [("attempt", True)]


def test_the_session_state_holds_the_plans_results_and_progress(solved: Solved) -> None:
    sequencer, result = solved.run, solved.result

    keys = sequencer.state_keys(result)
    assert {
        "meta_plan",
        "part_plan:p1",
        "part_plan:p2",
        "step_result:p1:s1",
        "step_result:p1:s2",
        "step_result:p2:s1",
        "adjustment:p1:after_s1",
        "cumulative_diff",
        "orchestrator_progress",
    } <= keys
    progress = sequencer.state(result, "orchestrator_progress")
    assert progress is not None and progress["status"] == "complete"
    cumulative = sequencer.state(result, "cumulative_diff")
    assert isinstance(cumulative, str)
    assert [f"+def {name}(" in cumulative for name in ("sub", "mul", "neg")] == [True] * 3


def test_the_observer_sees_the_run_from_start_to_finish(solved: Solved) -> None:
    kinds = [e.kind for e in solved.run.events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert kinds.count("pass_started") == kinds.count("pass_finished") == 8
    assert kinds.count("plan_made") == 2 and kinds.count("adjustment_made") == 1
    assert kinds.count("step_passed") == 3 and kinds.count("edits_applied") == 3
    assert kinds.index("edits_applied") < kinds.index("step_passed")
