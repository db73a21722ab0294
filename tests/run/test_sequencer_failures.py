"""The sequencer in-process: a failed model call or an exhausted budget becomes a failed step,
a failed part or a stopped run, with the reason, never an exception out of `solve`."""

from __future__ import annotations

from tests.fakes.scripted_model import (
    Answer,
    adjustment,
    edit,
    failure,
    meta_plan,
    part_plan,
    plan_step,
)
from tests.run.conftest import CALC, Sequencer

ADD_SUB = plan_step("s1", "Add sub to calc.py", ["calc.py"])
ADD_MUL = plan_step("s2", "Add mul to calc.py", ["calc.py"])
WITH_SUB = edit("calc.py", CALC.rstrip(), CALC.rstrip() + "\n\n\ndef sub(a, b):\n    return a - b")
WITH_MUL = edit("calc.py", CALC.rstrip(), CALC.rstrip() + "\n\n\ndef mul(a, b):\n    return a * b")
BREAKS_ADD = edit("calc.py", "    return a + b", "    return a - b")
GARBAGE = "I am not sure what you want. {not json"


def plan_two_steps(run: Sequencer) -> None:
    run.models.script("meta_plan", meta_plan(("p1", "Add sub and mul", ["calc.py"])))
    run.models.script("part_plan", part_plan("p1", ADD_SUB, ADD_MUL))


def test_a_failed_implement_call_fails_its_step_and_the_next_step_still_runs(
    sequencer: Sequencer,
) -> None:
    plan_two_steps(sequencer)
    sequencer.models.script("implement", failure("the model server answered 503"), WITH_MUL)
    sequencer.models.script("adjustment", adjustment(ADD_MUL))

    result = sequencer.solve("Add sub and mul")

    assert result.status == "partial"
    failed, passed = result.steps
    assert (failed.step_id, failed.status, failed.model_failed) == ("s1", "failed", True)
    assert failed.error == "a model call failed: the model server answered 503"
    assert (passed.step_id, passed.status) == ("s2", "passed")
    assert result.branch is not None
    assert sequencer.commits(result.branch) == ["Add mul to calc.py"]


def test_the_step_call_ceiling_fails_the_step_and_names_the_budget(sequencer: Sequencer) -> None:
    sequencer.models.script("meta_plan", meta_plan(("p1", "Add sub", ["calc.py"])))
    sequencer.models.script("part_plan", part_plan("p1", ADD_SUB))
    sequencer.models.script("implement", BREAKS_ADD)
    sequencer.models.script("adjustment", adjustment())

    result = sequencer.solve("Add sub", orchestrator={"max_calls_per_step": 1})

    [outcome] = result.steps
    assert outcome.status == "failed"
    assert outcome.budget_exhausted == "max_calls_per_step"
    assert "max_calls_per_step" in (outcome.attempts[-1].error_info or "")
    assert "implement_retry" not in sequencer.models.stages
    assert result.status == "failed"


def test_the_run_budget_running_out_stops_the_run_keeping_what_landed(
    sequencer: Sequencer,
) -> None:
    """Each call reserves room for its answer (2048 tokens): after the first step reported
    98 120 tokens of 100 000, the adjustment's call could cross the run's ceiling."""
    sequencer.models.script(
        "meta_plan", Answer(meta_plan(("p1", "Add sub and mul", ["calc.py"])), usage=(60_000, 0))
    )
    sequencer.models.script("part_plan", part_plan("p1", ADD_SUB, ADD_MUL))
    sequencer.models.script("implement", Answer(WITH_SUB, usage=(38_000, 0)), WITH_MUL)
    sequencer.models.script("adjustment", adjustment(ADD_MUL))

    result = sequencer.solve("Add sub and mul", budget={"max_tokens_per_run": 100_000})

    assert result.status == "partial"
    assert result.budget_exhausted == "max_tokens_per_run"
    assert result.error is not None and "max_tokens_per_run" in result.error
    assert [(o.step_id, o.status) for o in result.steps] == [("s1", "passed")]
    assert sequencer.models.stages == ["meta_plan", "part_plan", "implement"]
    assert result.branch is not None
    assert sequencer.commits(result.branch) == ["Add sub to calc.py"]


def test_a_failed_meta_plan_call_fails_the_run(sequencer: Sequencer) -> None:
    sequencer.models.script("meta_plan", failure("connection refused"))

    result = sequencer.solve("Add sub")

    assert result.status == "failed" and result.steps == []
    assert result.error is not None and "connection refused" in result.error
    assert sequencer.models.stages == ["meta_plan"]
    assert result.branch is None


def test_a_meta_plan_that_is_not_json_twice_fails_the_run(sequencer: Sequencer) -> None:
    sequencer.models.script("meta_plan", GARBAGE)
    sequencer.models.script("meta_plan_reask", GARBAGE)

    result = sequencer.solve("Add sub")

    assert result.status == "failed" and result.steps == []
    assert result.error is not None and "JSON" in result.error
    assert sequencer.models.stages == ["meta_plan", "meta_plan_reask"]


def test_a_part_plan_that_cannot_be_used_fails_that_part_only(sequencer: Sequencer) -> None:
    sequencer.models.script(
        "meta_plan", meta_plan(("p1", "Add sub", ["calc.py"]), ("p2", "Add mul", ["calc.py"]))
    )
    sequencer.models.script("part_plan", GARBAGE, part_plan("p2", ADD_MUL))
    sequencer.models.script("part_plan_reask", GARBAGE)
    sequencer.models.script("implement", WITH_MUL)

    result = sequencer.solve("Add sub and mul")

    assert result.status == "partial"
    assert [(o.part_id, o.status) for o in result.steps] == [("p2", "passed")]
    assert result.error is not None and result.error.startswith("part p1:")
