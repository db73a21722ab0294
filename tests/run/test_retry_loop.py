"""The one landing path's pure pieces: the error-to-outcome mapping, the one failure describer,
the commit message, and a single step landing as a group of one with a single step's outcome."""

from __future__ import annotations

from typing import Any, cast

import pytest

from agent.errors import BudgetExhausted, LLMError, PromptTooLarge
from agent.models import AttemptRecord, GateVerdict, GroupRound, PlanStep, ValidationResult
from agent.run.context import RunContext, StepRequest, StepState
from agent.run.landing.loop import landing_note
from agent.run.landing.outcome import (
    Failure,
    Piece,
    Unit,
    account,
    closer,
    commit_description,
    describe_failure,
    failed,
    failure_of,
    set_aside,
    standing,
)

S1 = PlanStep(id="s1", description="area in square units", target_files=["geometry.py"])
S2 = PlanStep(id="s2", description="report the area", target_files=["report.py"])
REQUEST = StepRequest(
    part_id="p1", plan=None, cumulative_diff="", task_run_id=7, base="abc123", extra_targets=()
)
UNUSED: Any = None  # what failed() and account() never read: runtime, workspace, clients


def new_run_context() -> RunContext:
    baseline = ValidationResult(success=True)
    return RunContext("task", "run", UNUSED, UNUSED, UNUSED, baseline, UNUSED, UNUSED)


def state(rc: RunContext, step: PlanStep, *attempts: AttemptRecord) -> StepState:
    return StepState(rc, step, REQUEST, cast(Any, None), None, attempts=list(attempts))


def unit_of(*steps: PlanStep, attempts: int = 1) -> Unit:
    rc = new_run_context()
    tried = [AttemptRecord(attempt=n, error_info="unparseable") for n in range(1, attempts + 1)]
    pieces = [Piece(state(rc, s, *tried)) for s in steps]
    whole = pieces[0].state if len(pieces) == 1 else state(rc, s1_and_s2())
    unit = Unit(rc, pieces, whole)
    unit.rounds = [GroupRound(number=n.attempt, attempt=n) for n in tried]
    return unit


def s1_and_s2() -> PlanStep:
    return PlanStep(id="s1+s2", description="These steps land together")


def gate_failure() -> AttemptRecord:
    return AttemptRecord(
        attempt=1,
        patch_applied=True,
        unified_diff="diff --git a/geometry.py b/geometry.py\n",
        validation=ValidationResult(
            success=False,
            failing_tests=["tests/test_geometry.py::test_area"],
            test_output="E 3 != 4",
        ),
        gate=GateVerdict(passed=False, problems=["a test fails"]),
        error_info="tests/test_geometry.py::test_area fails",
    )


# --- the error-to-outcome mapping ---------------------------------------------------------


def test_a_budget_that_ran_out_names_the_budget() -> None:
    failure = failure_of(BudgetExhausted("max_tokens_per_step", used=31_000, limit=30_000))
    assert failure == Failure(
        "budget 'max_tokens_per_step' exhausted: used 31000 of 30000",
        budget="max_tokens_per_step",
    )


def test_a_model_call_that_failed_for_good_is_a_model_failure() -> None:
    failure = failure_of(LLMError("connection refused", status=None))
    assert failure == Failure("a model call failed: connection refused", model_failed=True)


def test_a_prompt_too_large_is_its_message_alone() -> None:
    exc = PromptTooLarge(tokens=9000, limit=8000, stage="implement")
    assert failure_of(exc) == Failure(str(exc))


def test_a_failure_becomes_a_step_outcomes_fields() -> None:
    failure = Failure("budget gone", budget="max_tokens_per_run")
    assert failure.fields() == {
        "error": "budget gone",
        "budget_exhausted": "max_tokens_per_run",
        "model_failed": False,
    }


# --- the one failure describer --------------------------------------------------------------


def test_an_unusable_answer_is_described_with_how_to_answer() -> None:
    text = describe_failure(AttemptRecord(attempt=1, error_info="no <edit> blocks"))
    assert text == (
        "Your previous answer could not be used: no <edit> blocks\n"
        "Answer only with <edit> blocks whose search text is copied exactly from the files."
    )


def test_a_gate_failure_shows_the_edits_the_failing_tests_and_the_output() -> None:
    text = describe_failure(gate_failure())
    assert text.startswith("Your previous edits applied, but they did not pass the test gate.")
    assert "- tests/test_geometry.py::test_area" in text
    assert text.endswith("Test output (end):\nE 3 != 4")


def test_a_single_step_is_described_as_itself_not_as_a_group() -> None:
    assert describe_failure(gate_failure(), [S1]) == describe_failure(gate_failure())


def test_a_group_failure_is_said_of_every_step_of_the_group() -> None:
    text = describe_failure(gate_failure(), [S1, S2])
    assert text.startswith("The steps s1, s2 landed together and were judged together. ")
    assert "Their edits applied" in text
    assert "The edits of every step of the group:" in text
    assert text.endswith("change your step so that the group passes.")


# --- the closest attempt so far ------------------------------------------------------------


def ran(passing: int, failing: int) -> AttemptRecord:
    validation = ValidationResult(
        success=False,
        passing_tests=[f"pass{n}" for n in range(passing)],
        failing_tests=[f"fail{n}" for n in range(failing)],
    )
    return AttemptRecord(attempt=1, patch_applied=True, validation=validation)


def test_an_attempt_stands_by_its_tests_passing_then_by_fewer_failing() -> None:
    assert standing(ran(3, 1)) == (3, -1)
    assert closer(ran(3, 1), ran(2, 0))  # more passing first
    assert closer(ran(3, 1), ran(3, 2))  # then fewer failing
    assert not closer(ran(3, 1), ran(3, 1))  # a tie is not closer: the last is kept


def test_an_attempt_whose_edits_never_ran_stands_nowhere() -> None:
    unusable = AttemptRecord(attempt=1, error_info="no <edit> blocks")
    assert standing(unusable) is None
    assert closer(ran(0, 5), unusable)
    assert not closer(unusable, ran(0, 5))


def test_the_attempt_set_aside_is_named_with_both_counts() -> None:
    text = set_aside(ran(1, 3), ran(3, 1))
    assert text.startswith(
        "The last attempt did worse than an earlier one (1 passing and 3 failing tests, "
        "against 3 passing and 1 failing) and was set aside."
    )
    assert text.endswith("start from it, keep what it got right and change what it got wrong.\n")


# --- a single step is a group of one --------------------------------------------------------


def test_a_single_step_commits_under_its_own_description() -> None:
    assert commit_description([S1]) == "area in square units"


def test_a_group_commits_under_one_subject_with_every_step_in_the_body() -> None:
    assert commit_description([S1, S2]) == (
        "area in square units (and 1 more landing with it)\n\n"
        "These steps land together (one gate, one commit):\n"
        "- s1: area in square units\n- s2: report the area"
    )


def test_a_step_landing_alone_gets_no_landing_note() -> None:
    assert landing_note(unit_of(S1).pieces, 0) is None


def test_a_step_landing_with_others_is_told_of_them() -> None:
    note = landing_note(unit_of(S1, S2).pieces, 1)
    assert note is not None
    assert "- s1 (before yours): area in square units [geometry.py]" in note
    assert "- s2 (your step): report the area [report.py]" in note


def test_a_group_of_one_that_failed_is_a_single_steps_outcome() -> None:
    landing = failed(unit_of(S1, attempts=2), Failure("no attempt passed the tests (2 attempts)"))
    assert landing.group is None
    assert landing.outcome is landing.steps[0]
    assert (landing.outcome.step_id, landing.outcome.group) == ("s1", None)
    assert landing.outcome.error == "no attempt passed the tests (2 attempts)"
    assert len(landing.outcome.attempts) == 2
    assert landing.outcome.task_run_id == 7


def test_a_group_of_one_says_it_ran_out_of_attempts() -> None:
    assert unit_of(S1, attempts=3).exhausted() == "no attempt passed the tests (3 attempts)"
    assert unit_of(S1, S2, attempts=3).exhausted() == (
        "no round of the group passed the tests (3 rounds)"
    )


def test_a_group_that_failed_has_its_own_outcome_and_each_steps() -> None:
    failure = failure_of(LLMError("timed out"))
    landing = failed(unit_of(S1, S2), failure)
    assert landing.group is not None
    assert (landing.group.group_id, landing.group.step_ids) == ("s1+s2", ["s1", "s2"])
    assert [o.group for o in landing.steps] == ["s1+s2", "s1+s2"]
    outcome = landing.outcome
    assert (outcome.step_id, outcome.group, outcome.status) == ("s1+s2", "s1+s2", "failed")
    assert outcome.model_failed
    assert (
        outcome.description
        == "These steps land together:\n- s1: area in square units\n- s2: report the area"
    )


@pytest.mark.parametrize("steps", [(S1,), (S1, S2)])
def test_a_landing_without_model_calls_costs_nothing(steps: tuple[PlanStep, ...]) -> None:
    unit = unit_of(*steps)
    landing = account(unit, failed(unit, Failure("x")))
    assert all(o.usage.calls == 0 for o in landing.steps)
    assert unit.run_context.usage_by_role == {}
