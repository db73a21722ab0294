"""The sequencer in-process: a run asked to stop ends between passes, keeping what landed."""

from __future__ import annotations

import pytest

from agent.models import RunEvent
from tests.fakes.scripted_model import adjustment, edit, meta_plan, part_plan, plan_step
from tests.run.conftest import CALC, Sequencer, Solved

ADD_SUB = plan_step("s1", "Add sub to calc.py", ["calc.py"])
ADD_MUL = plan_step("s2", "Add mul to calc.py", ["calc.py"], depends_on=["s1"])
WITH_SUB = edit("calc.py", CALC.rstrip(), CALC.rstrip() + "\n\n\ndef sub(a, b):\n    return a - b")
WITH_MUL = edit(
    "calc.py", "    return a - b", "    return a - b\n\n\ndef mul(a, b):\n    return a * b"
)


def script_two_steps(run: Sequencer) -> None:
    run.models.script("meta_plan", meta_plan(("p1", "Add sub and mul", ["calc.py"])))
    run.models.script("part_plan", part_plan("p1", ADD_SUB, ADD_MUL))
    run.models.script("implement", WITH_SUB, WITH_MUL)
    run.models.script("adjustment", adjustment(ADD_MUL))


def after_first_step(events: list[RunEvent]) -> bool:
    return any(e.kind == "step_passed" for e in events)


@pytest.fixture(scope="module")
def solved(module_sequencer: Sequencer) -> Solved:
    script_two_steps(module_sequencer)
    module_sequencer.cancel_when = after_first_step
    return Solved(module_sequencer, module_sequencer.solve("Add sub and mul"))


def test_a_cancel_after_a_step_keeps_its_commit_and_asks_nothing_more(solved: Solved) -> None:
    sequencer, result = solved.run, solved.result

    assert result.status == "cancelled"
    assert [(o.step_id, o.status) for o in result.steps] == [("s1", "passed")]
    assert sequencer.models.stages == ["meta_plan", "part_plan", "implement"]
    assert result.branch is not None
    assert sequencer.commits(result.branch) == ["Add sub to calc.py"]


def test_a_cancelled_run_still_tells_the_observer_it_finished(solved: Solved) -> None:
    last = solved.run.events[-1]
    assert (last.kind, last.status) == ("run_finished", "cancelled")


def test_a_run_cancelled_before_its_first_pass_calls_no_model(sequencer: Sequencer) -> None:
    script_two_steps(sequencer)
    sequencer.cancel_when = lambda events: True

    result = sequencer.solve("Add sub and mul")

    assert result.status == "cancelled" and result.steps == []
    assert sequencer.models.calls == []
    assert result.branch is None
