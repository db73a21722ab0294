"""The sequencer in-process: a step whose first edit fails the tests is retried, told why."""

from __future__ import annotations

import pytest

from tests.fakes.scripted_model import adjustment, edit, meta_plan, part_plan, plan_step
from tests.run.conftest import CALC, Sequencer, Solved

ADD_SUB = plan_step("s1", "Add sub to calc.py", ["calc.py"])
SUB = "\n\n\ndef sub(a, b):\n    return a - b"
BREAKS_ADD = edit("calc.py", CALC.rstrip(), CALC.rstrip().replace("a + b", "a - b") + SUB)
LANDS = edit("calc.py", CALC.rstrip(), CALC.rstrip() + SUB)


def script(run: Sequencer, *implements: str) -> None:
    run.models.script("meta_plan", meta_plan(("p1", "Add sub", ["calc.py"])))
    run.models.script("part_plan", part_plan("p1", ADD_SUB))
    first, *retries = implements
    run.models.script("implement", first)
    run.models.script("implement_retry", *retries)
    run.models.script("adjustment", adjustment(rationale="nothing left"))


@pytest.fixture(scope="module")
def solved(module_sequencer: Sequencer) -> Solved:
    script(module_sequencer, BREAKS_ADD, LANDS)
    return Solved(module_sequencer, module_sequencer.solve("Add a sub function"))


def test_a_step_whose_first_edit_fails_the_tests_lands_on_its_retry(solved: Solved) -> None:
    sequencer, result = solved.run, solved.result

    assert result.status == "complete", result.error
    [outcome] = result.steps
    assert outcome.status == "passed"
    assert [a.attempt for a in outcome.attempts] == [1, 2]
    first, second = outcome.attempts
    assert first.validation is not None and not first.validation.success
    assert first.gate is not None and not first.gate.passed
    assert second.gate is not None and second.gate.passed
    assert result.branch is not None
    assert sequencer.commits(result.branch) == ["Add sub to calc.py"]
    assert "return a + b" in sequencer.show(result.branch, "calc.py")


def test_the_retry_is_told_which_test_failed_and_what_the_edits_were(solved: Solved) -> None:
    [retry] = solved.run.models.prompts("implement_retry")
    assert "did not pass the test gate" in retry
    assert "test_add" in retry
    assert "-    return a + b" in retry and "+    return a - b" in retry


def test_the_retry_starts_from_the_clean_tree_not_the_failed_edit(solved: Solved) -> None:
    """The retry's edit searches for the original code: it applies only on a reset tree."""
    first, second = solved.result.steps[0].attempts
    assert first.unified_diff.count("+    return a - b") == 2  # add broken, sub added
    assert second.patch_applied and "-    return a + b" not in second.unified_diff


def test_a_step_failing_every_attempt_fails_the_run_and_leaves_no_branch(
    sequencer: Sequencer,
) -> None:
    script(sequencer, BREAKS_ADD, BREAKS_ADD)

    result = sequencer.solve("Add a sub function")

    assert result.status == "failed"
    [outcome] = result.steps
    assert outcome.status == "failed" and len(outcome.attempts) == 2
    assert outcome.error == "no attempt passed the tests (2 attempts)"
    assert result.branch is None and result.commit is None
    stages = ["meta_plan", "part_plan", "implement", "implement_retry", "adjustment"]
    assert sequencer.models.stages == stages  # a failed step is followed by an adjustment


def test_max_retries_per_step_bounds_the_attempts(sequencer: Sequencer) -> None:
    script(sequencer, BREAKS_ADD, BREAKS_ADD, BREAKS_ADD)

    result = sequencer.solve("Add a sub function", orchestrator={"max_retries_per_step": 2})

    assert [a.attempt for a in result.steps[0].attempts] == [1, 2, 3]
    assert sequencer.models.stages.count("implement_retry") == 2


def test_after_the_retries_fail_candidates_are_sampled_and_the_first_that_passes_lands(
    sequencer: Sequencer,
) -> None:
    """`orchestrator.samples`: once the retries failed, more draws from the last retry's
    prompt at `sample_temperature`; the gate keeps the first that passes."""
    script(sequencer, BREAKS_ADD, BREAKS_ADD)
    sequencer.models.script("implement_sample", BREAKS_ADD, LANDS, LANDS)

    result = sequencer.solve(
        "Add a sub function", orchestrator={"samples": 3, "sample_temperature": 0.9}
    )

    assert result.status == "complete", result.error
    [outcome] = result.steps
    assert [a.attempt for a in outcome.attempts] == [1, 2, 3, 4]
    samples = [c for c in sequencer.models.calls if c.stage == "implement_sample"]
    assert len(samples) == 2 and {c.temperature for c in samples} == {0.9}
    assert samples[0].user == samples[1].user  # the same prompt: the last retry's failure
    assert {c.temperature for c in sequencer.models.calls if c.stage != "implement_sample"} == {
        None
    }


def test_no_samples_by_default(sequencer: Sequencer) -> None:
    script(sequencer, BREAKS_ADD, BREAKS_ADD)

    result = sequencer.solve("Add a sub function")

    assert result.status != "complete"
    assert "implement_sample" not in sequencer.models.stages


CLOSE = edit(  # add(-1, 1) fails: 2 of the 3 tests pass
    "calc.py", CALC.rstrip(), "def add(a, b):\n    return a + b if a >= 0 else b" + SUB
)
FAR = edit("calc.py", CALC.rstrip(), "def add(a, b):\n    return a * b" + SUB)  # all 3 fail
MORE_TESTS = """import unittest

from calc import add


class MoreTest(unittest.TestCase):
    def test_zero(self):
        self.assertEqual(add(0, 3), 3)

    def test_negative(self):
        self.assertEqual(add(-1, 1), 0)
"""


def test_a_retry_after_a_worse_attempt_starts_from_the_closest_one(sequencer: Sequencer) -> None:
    """The best attempt so far is kept: a retry that did worse is set aside, and the next is
    told of the earlier attempt that passed more of the gate, not of the last."""
    sequencer.commit_files({"test_more.py": MORE_TESTS})
    script(sequencer, CLOSE, FAR, LANDS)

    result = sequencer.solve("Add a sub function", orchestrator={"max_retries_per_step": 2})

    assert result.status == "complete", result.error
    first_retry, second_retry = sequencer.models.prompts("implement_retry")
    assert "a * b" not in first_retry and "set aside" not in first_retry
    assert "+    return a + b if a >= 0 else b" in first_retry
    assert (
        "The last attempt did worse than an earlier one (0 passing and 3 failing tests, "
        "against 2 passing and 1 failing) and was set aside." in second_retry
    )
    assert "+    return a + b if a >= 0 else b" in second_retry  # the closest attempt's edits
    assert "a * b" not in second_retry  # not the last's


def test_a_step_that_fails_every_attempt_ends_on_its_closest_attempts_test_run(
    sequencer: Sequencer,
) -> None:
    """What the adjustment and a re-plan read of a failed step is its closest attempt's run."""
    sequencer.commit_files({"test_more.py": MORE_TESTS})
    script(sequencer, CLOSE, FAR)

    result = sequencer.solve("Add a sub function")

    assert result.status == "failed"
    [outcome] = result.steps
    first, last = outcome.attempts
    assert outcome.validation is not None and first.validation is not None
    assert outcome.validation == first.validation != last.validation
    assert len(outcome.validation.failing_tests) == 1
