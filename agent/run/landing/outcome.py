"""What became of a landing (agent.run.landing.loop): its working set, the error-to-outcome mapping,
the one failure describer, how close an attempt came (the best attempt so far is what a retry
starts from), and the outcomes of its steps and of their group."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agent.errors import BudgetExhausted, LLMError, PromptTooLarge
from agent.execute.grouping import group_id, merged_step
from agent.models import (
    AttemptRecord,
    GroupOutcome,
    GroupRound,
    PatchEdit,
    PlanStep,
    StepOutcome,
    Usage,
    ValidationResult,
)
from agent.run.context import RunContext, StepState
from agent.run.landing.attempt import allowed_test_changes, commit_edits

LandingError = BudgetExhausted | LLMError | PromptTooLarge
LANDING_ERRORS = (BudgetExhausted, LLMError, PromptTooLarge)  # what ends a landing as failed
_FAILURE_OUTPUT_CHARS = 6000


@dataclass
class Piece:
    """One step of a landing: its working set, and its edits as last applied."""

    state: StepState
    edits: list[PatchEdit] = field(default_factory=list)
    diff: str = ""
    tests_after: ValidationResult | None = None  # the tests once it was applied (information)

    @property
    def step(self) -> PlanStep:
        return self.state.step


@dataclass(frozen=True)
class Closest:
    """The attempt that came closest to passing so far (`closer`), and each piece's edits and
    diff as they were in it."""

    attempt: AttemptRecord
    pieces: tuple[tuple[list[PatchEdit], str], ...]


@dataclass
class Unit:
    """The working set of one landing: its pieces, the whole the gate and the commit read (a
    group of one's is its step's own state), its rounds and the closest attempt among them."""

    run_context: RunContext
    pieces: list[Piece]
    whole: StepState
    rounds: list[GroupRound] = field(default_factory=list)
    closest: Closest | None = None

    @property
    def single(self) -> bool:
        """Whether the step lands alone (a group of one)."""
        return len(self.pieces) == 1

    @property
    def steps(self) -> list[PlanStep]:
        return [p.step for p in self.pieces]

    def exhausted(self) -> str:
        """Why the unit failed when no round passed."""
        if self.single:
            return f"no attempt passed the tests ({len(self.whole.attempts)} attempts)"
        return f"no round of the group passed the tests ({len(self.rounds)} rounds)"


@dataclass
class Landing:
    """What became of a landing: each step's outcome, and the group's (None for a step that
    landed alone, whose outcome says it all)."""

    steps: list[StepOutcome]
    group: GroupOutcome | None = None
    description: str = ""  # the steps' merged description (a group's)

    @property
    def passed(self) -> bool:
        return self.outcome.status == "passed"

    @property
    def outcome(self) -> StepOutcome:
        """The landing as one step's outcome: what the plan's adjustment judges, the pass
        records and the run's events name."""
        group = self.group
        if group is None:
            return self.steps[0]
        usage = Usage()
        for outcome in self.steps:
            usage = usage + outcome.usage
        return StepOutcome(
            part_id=group.part_id,
            step_id=group.group_id,
            description=self.description,
            status=group.status,
            attempts=[r.attempt for r in group.rounds],
            commit=group.commit,
            diff=group.diff,
            error=group.error,
            validation=group.validation,
            usage=usage,
            model_failed=any(o.model_failed for o in self.steps),
            group=group.group_id,
            budget_exhausted=next(
                (o.budget_exhausted for o in self.steps if o.budget_exhausted), None
            ),
            task_run_id=self.steps[0].task_run_id if self.steps else None,
        )


@dataclass(frozen=True)
class Failure:
    """Why a landing failed, as its outcomes say it."""

    error: str
    budget: str | None = None  # the budget that ran out
    model_failed: bool = False  # a model call failed for good

    def fields(self) -> dict[str, object]:
        """The failure as a step outcome's fields."""
        return {
            "error": self.error,
            "budget_exhausted": self.budget,
            "model_failed": self.model_failed,
        }


def failure_of(exc: LandingError) -> Failure:
    """The failure an error that ends a landing stands for: a budget that ran out, a model
    call that failed for good, a prompt that cannot fit the window."""
    if isinstance(exc, BudgetExhausted):
        return Failure(str(exc), budget=exc.budget)
    if isinstance(exc, LLMError):
        return Failure(f"a model call failed: {exc}", model_failed=True)
    return Failure(str(exc))


def describe_failure(attempt: AttemptRecord, landed_with: Sequence[PlanStep] = ()) -> str:
    """What went wrong in an attempt, for the next attempt's prompt; said of the group when
    the attempt was of the several steps `landed_with`, for the retry of those it points to."""
    if attempt.validation is None:
        text = (
            f"Your previous answer could not be used: {attempt.error_info}\n"
            "Answer only with <edit> blocks whose search text is copied exactly from the files."
        )
    else:
        validation = attempt.validation
        if attempt.original is not None and not (attempt.gate and attempt.gate.passed):
            validation = attempt.original  # where the rejection showed
        failing = "\n".join(f"- {t}" for t in validation.failing_tests) or "- (not identified)"
        output = (validation.test_output or "")[-_FAILURE_OUTPUT_CHARS:]
        verdict = attempt.error_info or "The tests failed."
        text = (
            f"Your previous edits applied, but they did not pass the test gate.\n{verdict}\n"
            f"Your edits:\n{attempt.unified_diff}\nFailing tests:\n{failing}\n"
            f"Test output (end):\n{output}"
        )
    if len(landed_with) < 2:
        return text
    named = ", ".join(s.id for s in landed_with)
    return (
        f"The steps {named} landed together and were judged together. "
        + text.replace("Your previous edits", "Their edits", 1).replace(
            "Your edits:", "The edits of every step of the group:", 1
        )
        + "\nThe steps this failure does not point to are applied again as they were; "
        "change your step so that the group passes."
    )


def standing(attempt: AttemptRecord) -> tuple[int, int] | None:
    """How much of the gate an attempt's test run passed, to compare attempts by: its tests
    passing, then fewer failing; None for an attempt whose edits never ran."""
    validation = attempt.validation
    if validation is None or not attempt.patch_applied:
        return None
    return len(validation.passed_tests), -len(validation.failing_tests)


def closer(attempt: AttemptRecord, than: AttemptRecord) -> bool:
    """Whether `attempt` passed strictly more of the gate than `than` (an attempt that ran is
    closer than one that never did)."""
    mine, theirs = standing(attempt), standing(than)
    return mine is not None and (theirs is None or mine > theirs)


def set_aside(last: AttemptRecord, closest: AttemptRecord) -> str:
    """What the next attempt is told when the last did worse than an earlier, closer one: the
    earlier's failure follows it (describe_failure), the last's edits are not shown."""

    def counts(attempt: AttemptRecord) -> str:
        passing, failing = standing(attempt) or (0, 0)
        return f"{passing} passing and {-failing} failing"

    return (
        f"The last attempt did worse than an earlier one ({counts(last)} tests, against "
        f"{counts(closest)}) and was set aside. The earlier, closer attempt is described "
        "below: start from it, keep what it got right and change what it got wrong.\n"
    )


def landed(unit: Unit, attempt: AttemptRecord) -> Landing:
    """The unit committed once, each of its steps passed with it."""
    commit = commit_edits(unit.whole, attempt.edits, commit_description(unit.steps))
    diff = attempt.unified_diff if commit else ""
    changes = allowed_test_changes(unit.whole, attempt)
    if unit.single:
        fields = {"commit": commit, "diff": diff, "tests_changed": changes}
        return Landing(
            [_step_outcome(unit, unit.pieces[0], "passed", validation=attempt.validation, **fields)]
        )
    group = _group_outcome(
        unit,
        "passed",
        commit=commit,
        diff=diff,
        validation=attempt.validation,
        tests_changed=changes,
    )
    steps = [
        _step_outcome(unit, p, "passed", commit=commit, diff=p.diff, validation=attempt.validation)
        for p in unit.pieces
    ]
    return Landing(steps, group, merged_step(unit.steps).description)


def failed(unit: Unit, failure: Failure) -> Landing:
    """The unit failed whole: each of its steps failed with it, on the test run of its closest
    attempt (the adjustment and a re-plan read it), else of its last that ran."""
    closest = unit.closest.attempt.validation if unit.closest is not None else None
    last = closest or next(
        (r.attempt.validation for r in reversed(unit.rounds) if r.attempt.validation is not None),
        None,
    )
    steps = [
        _step_outcome(unit, p, "failed", validation=last, **failure.fields()) for p in unit.pieces
    ]
    if unit.single:
        return Landing(steps)
    group = _group_outcome(unit, "failed", validation=last, error=failure.error)
    return Landing(steps, group, merged_step(unit.steps).description)


def _group_outcome(unit: Unit, status: str, **fields: object) -> GroupOutcome:
    steps = unit.steps
    return GroupOutcome.model_validate(
        {
            "part_id": unit.whole.part_id,
            "group_id": group_id(steps),
            "step_ids": [s.id for s in steps],
            "reason": group_reason(steps),
            "status": status,
            "rounds": unit.rounds,
            **fields,
        }
    )


def _step_outcome(unit: Unit, piece: Piece, status: str, **fields: object) -> StepOutcome:
    return StepOutcome.model_validate(
        {
            "part_id": piece.state.part_id,
            "step_id": piece.step.id,
            "description": piece.step.description,
            "status": status,
            "attempts": piece.state.attempts,
            "task_run_id": piece.state.task_run_id,
            "group": None if unit.single else group_id(unit.steps),
            **fields,
        }
    )


def account(unit: Unit, landing: Landing) -> Landing:
    """Each step's model calls on its outcome (a group's gate questions on its last step's)."""
    run_context = unit.run_context
    for piece, outcome in zip(unit.pieces, landing.steps, strict=True):
        outcome.usage = run_context.account(
            piece.state.coding, piece.state.classifier, *piece.state.judge_clients
        )
    extra = Usage() if unit.single else run_context.account(*unit.whole.judge_clients)
    if extra != Usage() and landing.steps:
        landing.steps[-1].usage = landing.steps[-1].usage + extra
    return landing


def group_reason(steps: Sequence[PlanStep]) -> str:
    """Why these steps land together, in a sentence."""
    origin = {s.split_from for s in steps}
    if len(origin) == 1 and "" not in origin:
        return (
            f"step {origin.pop()} changes {len(steps)} source files: each file is its own "
            "step, and the tests can pass only once all of them are in"
        )
    return "the plan says they land together: the tests cannot pass with one of them alone"


def commit_description(steps: Sequence[PlanStep]) -> str:
    """The commit message of the steps landed: a single step's description; a group's one
    subject, every step in the body."""
    if len(steps) == 1:
        return steps[0].description
    origin = {s.split_from for s in steps}
    subject = steps[0].description.splitlines()[0]
    if len(origin) == 1 and "" not in origin:
        subject = subject.rsplit(" (part 1 of ", 1)[0]
    else:
        subject = f"{subject} (and {len(steps) - 1} more landing with it)"
    body = "\n".join(f"- {s.id}: {s.description.splitlines()[0]}" for s in steps)
    return f"{subject}\n\nThese steps land together (one gate, one commit):\n{body}"
