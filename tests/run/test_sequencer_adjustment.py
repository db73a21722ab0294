"""The sequencer in-process: after a step, the adjustment pass revises the steps left — after a
failure it may drop or replace them; a step whose dependency did not pass is skipped."""

from __future__ import annotations

from tests.fakes.scripted_model import adjustment, edit, meta_plan, part_plan, plan_step
from tests.run.conftest import CALC, Sequencer

ADD_SUB = plan_step("s1", "Add sub to calc.py", ["calc.py"])
ADD_MUL = plan_step("s2", "Add mul to calc.py", ["calc.py"], depends_on=["s1"])
ADD_NEG = plan_step("s3", "Add neg to calc.py", ["calc.py"])
WITH_SUB = edit("calc.py", CALC.rstrip(), CALC.rstrip() + "\n\n\ndef sub(a, b):\n    return a - b")
NEG = "\n\n\ndef neg(a):\n    return -a"
WITH_NEG = edit("calc.py", CALC.rstrip(), CALC.rstrip() + NEG)
BREAKS_ADD = edit("calc.py", "    return a + b", "    return a - b")


def plan(run: Sequencer) -> None:
    run.models.script("meta_plan", meta_plan(("p1", "Add sub and mul", ["calc.py"])))
    run.models.script("part_plan", part_plan("p1", ADD_SUB, ADD_MUL))


def test_after_a_failed_step_the_adjustment_replaces_the_steps_left(sequencer: Sequencer) -> None:
    plan(sequencer)
    sequencer.models.script("implement", BREAKS_ADD, WITH_NEG)
    sequencer.models.script("implement_retry", BREAKS_ADD)
    sequencer.models.script(
        "adjustment", adjustment(ADD_NEG, rationale="sub cannot be done; neg instead")
    )

    result = sequencer.solve("Add sub and mul")

    assert [(o.step_id, o.status) for o in result.steps] == [("s1", "failed"), ("s3", "passed")]
    assert result.status == "partial"
    [record] = result.adjustments
    assert (record.part_id, record.after_step, record.error) == ("p1", "s1", None)
    assert record.adjustment is not None
    assert [s.id for s in record.adjustment.revised_steps] == ["s3"]
    assert result.branch is not None
    assert sequencer.commits(result.branch) == ["Add neg to calc.py"]


def test_the_adjustment_after_a_failure_is_shown_the_failing_test(sequencer: Sequencer) -> None:
    plan(sequencer)
    sequencer.models.script("implement", BREAKS_ADD)
    sequencer.models.script("implement_retry", BREAKS_ADD)
    sequencer.models.script("adjustment", adjustment(rationale="give up"))

    sequencer.solve("Add sub and mul")

    [prompt] = sequencer.models.prompts("adjustment")
    assert "test_add" in prompt and "Add mul to calc.py" in prompt


def test_a_step_whose_dependency_failed_is_skipped_with_the_reason(sequencer: Sequencer) -> None:
    plan(sequencer)
    sequencer.models.script("implement", BREAKS_ADD)
    sequencer.models.script("implement_retry", BREAKS_ADD)
    sequencer.models.script("adjustment", adjustment(ADD_MUL, rationale="keep mul"))

    result = sequencer.solve("Add sub and mul")

    assert [(o.step_id, o.status) for o in result.steps] == [("s1", "failed"), ("s2", "skipped")]
    assert result.steps[1].error == "skipped: it depends on s1, which did not pass"
    assert sequencer.models.stages.count("implement") == 1
    assert result.status == "failed"


def test_a_step_that_already_passed_is_not_run_again_when_re_listed(
    sequencer: Sequencer,
) -> None:
    sequencer.models.script("meta_plan", meta_plan(("p1", "Add sub and neg", ["calc.py"])))
    sequencer.models.script("part_plan", part_plan("p1", ADD_SUB, ADD_NEG))
    neg_after_sub = edit("calc.py", "    return a - b", "    return a - b" + NEG)
    sequencer.models.script("implement", WITH_SUB, neg_after_sub)
    sequencer.models.script("adjustment", adjustment(ADD_SUB, ADD_NEG))

    result = sequencer.solve("Add sub and neg")

    assert [(o.step_id, o.status) for o in result.steps] == [("s1", "passed"), ("s3", "passed")]
    [record] = result.adjustments
    assert record.adjustment is not None
    assert record.adjustment.changes_made == ["ignored re-listed completed steps: s1"]


def test_with_adjustments_off_the_plan_runs_as_made(sequencer: Sequencer) -> None:
    plan(sequencer)
    mul = "    return a - b\n\n\ndef mul(a, b):\n    return a * b"
    sequencer.models.script("implement", WITH_SUB, edit("calc.py", "    return a - b", mul))

    result = sequencer.solve("Add sub and mul", orchestrator={"max_adjustment_rounds": 0})

    assert result.status == "complete", result.error
    assert "adjustment" not in sequencer.models.stages
    assert result.adjustments == []


def test_a_decomposed_adjustment_asks_yes_no_questions_then_finalizes(
    sequencer: Sequencer,
) -> None:
    plan(sequencer)
    sequencer.models.script("implement", BREAKS_ADD)
    sequencer.models.script("implement_retry", BREAKS_ADD)
    sequencer.models.script("adjustment_step_viability", "no")
    sequencer.models.script("adjustment_new_step", "no")
    sequencer.models.script("adjustment_finalize", adjustment(rationale="s2 needed s1"))

    result = sequencer.solve("Add sub and mul", orchestrator={"decomposed_adjustment": True})

    [record] = result.adjustments
    assert record.mode == "decomposed"
    assert record.verdicts is not None and record.verdicts.step_viability == {"s2": False}
    assert record.adjustment is not None and record.adjustment.revised_steps == []
    viability = next(c for c in sequencer.models.calls if c.stage == "adjustment_step_viability")
    finalize = next(c for c in sequencer.models.calls if c.stage == "adjustment_finalize")
    assert (viability.model, finalize.model) == ("classifier-model", "reasoning-model")
    assert [(o.step_id, o.status) for o in result.steps] == [("s1", "failed")]
