"""The sequencer in-process: the limits on parts and steps — steps over a part's limit are not
run, a part whose dependency did not complete is not planned."""

from __future__ import annotations

from tests.fakes.scripted_model import adjustment, edit, meta_plan, part_plan, plan_step
from tests.run.conftest import CALC, Sequencer

ADD_SUB = plan_step("s1", "Add sub to calc.py", ["calc.py"])
ADD_MUL = plan_step("s2", "Add mul to calc.py", ["calc.py"], depends_on=["s1"])
WITH_SUB = edit("calc.py", CALC.rstrip(), CALC.rstrip() + "\n\n\ndef sub(a, b):\n    return a - b")
BREAKS_ADD = edit("calc.py", "    return a + b", "    return a - b")


def test_steps_over_max_steps_per_part_are_skipped_with_the_limit_named(
    sequencer: Sequencer,
) -> None:
    sequencer.models.script("meta_plan", meta_plan(("p1", "Add sub and mul", ["calc.py"])))
    sequencer.models.script("part_plan", part_plan("p1", ADD_SUB, ADD_MUL))
    sequencer.models.script("implement", WITH_SUB)
    sequencer.models.script("adjustment", adjustment(ADD_MUL))

    result = sequencer.solve("Add sub and mul", orchestrator={"max_steps_per_part": 1})

    assert [(o.step_id, o.status) for o in result.steps] == [("s1", "passed"), ("s2", "skipped")]
    assert result.steps[1].error == "over orchestrator.max_steps_per_part (1)"
    assert sequencer.models.stages.count("implement") == 1
    assert result.status == "partial"


def test_a_part_whose_dependency_did_not_complete_is_not_planned(sequencer: Sequencer) -> None:
    sequencer.models.script(
        "meta_plan",
        meta_plan(
            ("p1", "Add sub", ["calc.py"]),
            ("p2", "Add mul", ["calc.py"]),
            depends={"p2": ["p1"]},
        ),
    )
    sequencer.models.script("part_plan", part_plan("p1", ADD_SUB))
    sequencer.models.script("implement", BREAKS_ADD)
    sequencer.models.script("implement_retry", BREAKS_ADD)
    sequencer.models.script("adjustment", adjustment(rationale="nothing left"))

    result = sequencer.solve("Add sub, then mul")

    assert result.status == "failed"
    assert sequencer.models.stages.count("part_plan") == 1
    assert sequencer.state(result, "part_skipped:p2") == {
        "reason": "part p2 skipped: it depends on p1, which did not complete"
    }
    assert result.parts_completed == 0


def test_a_part_that_completed_unblocks_the_part_depending_on_it(sequencer: Sequencer) -> None:
    sequencer.models.script(
        "meta_plan",
        meta_plan(
            ("p1", "Add sub", ["calc.py"]),
            ("p2", "Add mul", ["calc.py"]),
            depends={"p2": ["p1"]},
        ),
    )
    mul_step = plan_step("s1", "Add mul to calc.py", ["calc.py"])
    sequencer.models.script("part_plan", part_plan("p1", ADD_SUB), part_plan("p2", mul_step))
    mul = "    return a - b\n\n\ndef mul(a, b):\n    return a * b"
    sequencer.models.script("implement", WITH_SUB, edit("calc.py", "    return a - b", mul))

    result = sequencer.solve("Add sub, then mul")

    assert result.status == "complete", result.error
    assert [(o.part_id, o.status) for o in result.steps] == [("p1", "passed"), ("p2", "passed")]
    assert result.parts_completed == 2
