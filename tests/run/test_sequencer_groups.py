"""The sequencer in-process: a part of several steps, one commit each, and steps that must land
together gated once and committed once."""

from __future__ import annotations

import pytest

from tests.fakes.repos import git_in
from tests.fakes.scripted_model import adjustment, edit, meta_plan, part_plan, plan_step
from tests.run.conftest import CALC, Sequencer, Solved

SUB = "\n\n\ndef sub(a, b):\n    return a - b"
MUL = "\n\n\ndef mul(a, b):\n    return a * b"
ADD_SUB = plan_step("s1", "Add sub to calc.py", ["calc.py"])
ADD_MUL = plan_step("s2", "Add mul to calc.py", ["calc.py"], depends_on=["s1"])
REPORT = "from calc import sub\n\n\ndef difference(a, b):\n    return sub(a, b)"
USE_SUB = plan_step(
    "s2", "Add report.py using sub", ["report.py"], depends_on=["s1"], lands_with=["s1"]
)
WITH_SUB = edit("calc.py", CALC.rstrip(), CALC.rstrip() + SUB)
WITH_MUL = edit("calc.py", "    return a - b", "    return a - b" + MUL)
WITH_REPORT = edit("report.py", "", REPORT)
BREAKS_ADD = edit("calc.py", CALC.rstrip(), CALC.rstrip().replace("a + b", "a - b") + SUB)


@pytest.fixture(scope="module")
def in_sequence(module_sequencer: Sequencer) -> Solved:
    run = module_sequencer
    run.models.script("meta_plan", meta_plan(("p1", "Add sub and mul", ["calc.py"])))
    run.models.script("part_plan", part_plan("p1", ADD_SUB, ADD_MUL))
    run.models.script("implement", WITH_SUB, WITH_MUL)
    run.models.script("adjustment", adjustment(ADD_MUL))
    return Solved(run, run.solve("Add sub and mul"))


def test_steps_in_sequence_land_one_commit_each_in_order(in_sequence: Solved) -> None:
    sequencer, result = in_sequence.run, in_sequence.result

    assert result.status == "complete", result.error
    assert [(o.step_id, o.status) for o in result.steps] == [("s1", "passed"), ("s2", "passed")]
    assert result.branch is not None
    assert sequencer.commits(result.branch) == ["Add mul to calc.py", "Add sub to calc.py"]
    assert result.steps[1].commit == result.commit


def test_a_later_step_is_shown_what_the_earlier_ones_changed(in_sequence: Solved) -> None:
    first, second = in_sequence.run.models.prompts("implement")
    assert "+def sub(a, b):" not in first
    assert "+def sub(a, b):" in second


def test_steps_that_land_together_are_gated_once_and_committed_once(sequencer: Sequencer) -> None:
    sequencer.models.script("meta_plan", meta_plan(("p1", "Add sub", ["calc.py", "report.py"])))
    sequencer.models.script("part_plan", part_plan("p1", ADD_SUB, USE_SUB))
    sequencer.models.script("implement", WITH_SUB, WITH_REPORT)

    result = sequencer.solve("Add sub and a report of differences")

    assert result.status == "complete", result.error
    assert sequencer.models.stages == ["meta_plan", "part_plan", "implement", "implement"]
    [group] = result.groups
    assert (group.group_id, group.step_ids, group.status) == ("s1+s2", ["s1", "s2"], "passed")
    assert [(o.step_id, o.status) for o in result.steps] == [("s1", "passed"), ("s2", "passed")]
    assert result.branch is not None
    assert sequencer.commits(result.branch) == ["Add sub to calc.py (and 1 more landing with it)"]
    assert "def difference" in sequencer.show(result.branch, "report.py")


def test_a_group_that_never_passes_is_rolled_back_whole(sequencer: Sequencer) -> None:
    sequencer.models.script("meta_plan", meta_plan(("p1", "Add sub", ["calc.py", "report.py"])))
    sequencer.models.script("part_plan", part_plan("p1", ADD_SUB, USE_SUB))
    sequencer.models.script("implement", BREAKS_ADD, WITH_REPORT)
    sequencer.models.script("implement_retry", BREAKS_ADD, WITH_REPORT)
    sequencer.models.script("adjustment", adjustment(rationale="nothing left"))

    result = sequencer.solve("Add sub and a report of differences")

    assert result.status == "failed"
    [group] = result.groups
    assert group.status == "failed" and group.commit is None
    assert len(group.rounds) == 2
    assert [(o.step_id, o.status) for o in result.steps] == [("s1", "failed"), ("s2", "failed")]
    assert result.branch is None and result.commit is None
    assert git_in(sequencer.repo, "branch", "--list", "cra/*") == ""
