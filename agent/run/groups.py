"""Steps that land together, gated as one: each piece implemented by its own call on its own
file and applied in order, the tests run after each for information, the gate judging the group
once its last piece is in; a group that fails is rolled back whole and retried at the pieces its
failure points to, the others applied again as they were.

One commit per group: only the group's final state was judged, so a commit per piece would put
commits on the branch that break the tests (and `git bisect` with them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agent.errors import BudgetExhausted, LLMError, PromptTooLarge
from agent.execute.groups import group_id, merged_step
from agent.execute.prompts import last_chars
from agent.git import repo as git
from agent.git import worktrees
from agent.models import (
    AttemptRecord,
    GroupOutcome,
    GroupRound,
    PartPlan,
    PatchEdit,
    PlanStep,
    StepOutcome,
    Usage,
    ValidationResult,
)
from agent.run.blame import implicated
from agent.run.context import RunContext, StepState
from agent.run.steps import (
    allowed_test_changes,
    apply_attempt,
    commit_edits,
    describe_failure,
    implement_attempt,
    run_tests,
    step_state,
    test_and_gate,
)

_NOTE_DIFF_CHARS = 4000
_NOTE_OUTPUT_CHARS = 1500
_NOTE_FAILING = 10


@dataclass
class _Piece:
    """One step of a group: its working set, and its edits as last applied."""

    st: StepState
    edits: list[PatchEdit] = field(default_factory=list)
    diff: str = ""
    tests_after: ValidationResult | None = None  # the tests once it was applied (information)

    @property
    def step(self) -> PlanStep:
        return self.st.step


@dataclass
class GroupRun:
    """What became of a group: its outcome and each piece's."""

    group: GroupOutcome
    steps: list[StepOutcome]

    @property
    def passed(self) -> bool:
        return self.group.status == "passed"


@dataclass
class _Group:
    """The working set of one group run."""

    rc: RunContext
    pieces: list[_Piece]
    whole: StepState  # the group as one step: what the gate and the commit read
    rounds: list[GroupRound] = field(default_factory=list)


def run_group(
    rc: RunContext,
    steps: Sequence[PlanStep],
    *,
    part_id: str,
    plan: PartPlan | None,
    cumulative_diff: str,
    task_run_id: int,
    extra_targets: Sequence[str] = (),
    base: str,
) -> GroupRun:
    """Land `steps` together (see the module's docstring); a pass is committed once, a failure
    leaves the tree as it was at `base`."""
    pieces = [
        _Piece(
            step_state(
                rc,
                s,
                part_id=part_id,
                plan=plan,
                task_run_id=task_run_id,
                cumulative_diff=cumulative_diff,
                base=base,
            )
        )
        for s in steps
    ]
    targets = list(dict.fromkeys([*(t for p in pieces for t in p.st.targets), *extra_targets]))
    whole = step_state(
        rc,
        merged_step(steps),
        part_id=part_id,
        plan=plan,
        base=base,
        cumulative_diff=cumulative_diff,
        task_run_id=task_run_id,
    )
    whole.targets = targets
    group = _Group(rc, pieces, whole)
    try:
        run = _rounds(group)
    except BudgetExhausted as exc:
        run = _failed(group, str(exc), budget=exc.budget)
    except LLMError as exc:
        run = _failed(group, f"a model call failed: {exc}", model_failed=True)
    except PromptTooLarge as exc:
        run = _failed(group, str(exc))
    _account(group, run)
    if not run.passed:
        worktrees.reset_clean(rc.ws.worktree, base)
    elif run.group.validation is not None:
        rc.reference = run.group.validation
    return run


def _rounds(group: _Group) -> GroupRun:
    """Rounds until the gate passes the group or the retries (per group) run out."""
    failure: str | None = None
    redo = {p.step.id for p in group.pieces}
    for number in range(1, group.rc.config.orchestrator.max_retries_per_step + 2):
        if number > 1:  # back to the accepted state: the group is retried whole
            worktrees.reset_clean(group.rc.ws.worktree, group.whole.base)
        attempt, redone, broken = _apply_pieces(group, number, failure, redo)
        group.rounds.append(GroupRound(number=number, redone=redone, attempt=attempt))
        if broken is not None:  # a piece's answer could not be used: retry that piece
            failure, redo = describe_failure(broken.st.attempts[-1]), {broken.step.id}
            continue
        attempt_id = group.rc.runtime.log.record_attempt(group.whole.task_run_id, attempt)
        test_and_gate(group.whole, attempt, attempt_id)
        if attempt.gate is not None and attempt.gate.passed:
            return _landed(group, attempt)
        failure = describe_group_failure(attempt, [p.step for p in group.pieces])
        redo = implicated(
            [p.step for p in group.pieces], attempt, {p.step.id: p.diff for p in group.pieces}
        )
    return _failed(group, f"no round of the group passed the tests ({len(group.rounds)} rounds)")


def as_one_step(run: GroupRun, step: PlanStep) -> StepOutcome:
    """The group's outcome as one step's (`step` the group merged): what the plan's adjustment
    judges and the run's events name."""
    usage = Usage()
    for outcome in run.steps:
        usage = usage + outcome.usage
    group = run.group
    return StepOutcome(
        part_id=group.part_id,
        step_id=group.group_id,
        description=step.description,
        status=group.status,
        attempts=[r.attempt for r in group.rounds],
        commit=group.commit,
        diff=group.diff,
        error=group.error,
        validation=group.validation,
        usage=usage,
        model_failed=any(o.model_failed for o in run.steps),
        group=group.group_id,
        budget_exhausted=next((o.budget_exhausted for o in run.steps if o.budget_exhausted), None),
        task_run_id=run.steps[0].task_run_id if run.steps else None,
    )


def _apply_pieces(
    group: _Group, number: int, failure: str | None, redo: set[str]
) -> tuple[AttemptRecord, list[str], _Piece | None]:
    """Every piece applied in order: those in `redo` (or that no longer apply) implemented
    anew with the failure, the others as they were. The round's attempt, the pieces
    implemented anew, and the piece whose answer could not be used (None when all applied)."""
    redone: list[str] = []
    for index, piece in enumerate(group.pieces):
        if piece.edits and piece.step.id not in redo and _reapplied(piece):
            continue
        redone.append(piece.step.id)
        piece.st.landing = landing_note(group.pieces, index)
        attempt, attempt_id = implement_attempt(
            piece.st, number, failure if (piece.step.id in redo) else None
        )
        if not attempt.patch_applied:
            piece.edits, piece.diff = [], ""
            why = f"step {piece.step.id}: {attempt.error_info or 'no usable edits'}"
            return AttemptRecord(attempt=number, error_info=why), redone, piece
        piece.edits, piece.diff = list(attempt.edits), attempt.unified_diff
        if index < len(group.pieces) - 1:  # the last piece's run is the gate's
            piece.tests_after = attempt.validation = run_tests(piece.st, attempt_id, "piece")
    edits = [e for p in group.pieces for e in p.edits]
    diff = git.diff(group.rc.ws.worktree, group.whole.base)
    return (
        AttemptRecord(attempt=number, edits=edits, patch_applied=True, unified_diff=diff),
        redone,
        None,
    )


def _reapplied(piece: _Piece) -> bool:
    """Whether a kept piece's edits applied again as they were."""
    again = AttemptRecord(attempt=0, edits=piece.edits)
    apply_attempt(piece.st, again)
    if again.patch_applied:
        piece.diff = again.unified_diff
    return again.patch_applied


def landing_note(pieces: Sequence[_Piece], index: int) -> str:
    """What the implementer of piece `index` is told of the steps it lands with: the order,
    the changes before it and, when they failed, the tests after them."""
    lines = [
        "Your step lands together with the steps below: each is made by its own call on "
        "its own file, they are applied in this order, and the tests judge them once all "
        "are in, so the tests may fail until the last one is applied. Make only your "
        "step's change, consistent with the others (the same names and signatures)."
    ]
    for n, piece in enumerate(pieces):
        where = "your step" if n == index else "before yours" if n < index else "after yours"
        lines.append(
            f"- {piece.step.id} ({where}): {piece.step.description} "
            f"[{', '.join(piece.step.target_files)}]"
        )
    before = "\n".join(p.diff for p in pieces[:index] if p.diff)
    if before:
        lines += [
            "The changes of the steps before yours (already in the files):",
            last_chars(before, _NOTE_DIFF_CHARS, "changes"),
        ]
    tests = pieces[index - 1].tests_after if index else None
    if tests is not None and not tests.success:
        failing = ", ".join(tests.failing_tests[:_NOTE_FAILING]) or "(not identified)"
        lines += [
            "The tests after the steps before yours (for information only: the group is "
            f"judged once all are in). Failing: {failing}",
            last_chars(tests.test_output or "", _NOTE_OUTPUT_CHARS),
        ]
    return "\n".join(lines)


def describe_group_failure(attempt: AttemptRecord, steps: Sequence[PlanStep]) -> str:
    """What went wrong with the group, for the retry of the pieces it points to."""
    named = ", ".join(s.id for s in steps)
    return (
        f"The steps {named} landed together and were judged together. "
        + describe_failure(attempt)
        .replace("Your previous edits", "Their edits", 1)
        .replace("Your edits:", "The edits of every step of the group:", 1)
        + "\nThe steps this failure does not point to are applied again as they were; "
        "change your step so that the group passes."
    )


def _landed(group: _Group, attempt: AttemptRecord) -> GroupRun:
    """The group committed once, each piece passed with it."""
    commit = commit_edits(
        group.whole, attempt.edits, commit_description([p.step for p in group.pieces])
    )
    changes = allowed_test_changes(group.whole, attempt)
    outcome = _outcome(
        group,
        "passed",
        commit=commit,
        diff=attempt.unified_diff if commit else "",
        validation=attempt.validation,
        tests_changed=changes,
    )
    steps = [
        _step_outcome(group, p, "passed", commit=commit, validation=attempt.validation)
        for p in group.pieces
    ]
    return GroupRun(outcome, steps)


def _failed(
    group: _Group, error: str, *, budget: str | None = None, model_failed: bool = False
) -> GroupRun:
    """The group failed whole: every piece failed with it."""
    last = next(
        (r.attempt.validation for r in reversed(group.rounds) if r.attempt.validation is not None),
        None,
    )
    outcome = _outcome(group, "failed", validation=last, error=error)
    steps = [
        _step_outcome(
            group,
            p,
            "failed",
            validation=last,
            error=error,
            budget=budget,
            model_failed=model_failed,
        )
        for p in group.pieces
    ]
    return GroupRun(outcome, steps)


def _outcome(group: _Group, status: str, **fields: object) -> GroupOutcome:
    steps = [p.step for p in group.pieces]
    return GroupOutcome.model_validate(
        {
            "part_id": group.whole.part_id,
            "group_id": group_id(steps),
            "step_ids": [s.id for s in steps],
            "reason": group_reason(steps),
            "status": status,
            "rounds": group.rounds,
            **fields,
        }
    )


def _step_outcome(
    group: _Group,
    piece: _Piece,
    status: str,
    *,
    commit: str | None = None,
    validation: ValidationResult | None,
    error: str | None = None,
    budget: str | None = None,
    model_failed: bool = False,
) -> StepOutcome:
    passed = status == "passed"
    return StepOutcome.model_validate(
        {
            "part_id": piece.st.part_id,
            "step_id": piece.step.id,
            "description": piece.step.description,
            "status": status,
            "attempts": piece.st.attempts,
            "commit": commit,
            "diff": piece.diff if passed else "",
            "error": error,
            "budget_exhausted": budget,
            "model_failed": model_failed,
            "validation": validation,
            "task_run_id": piece.st.task_run_id,
            "group": group_id([p.step for p in group.pieces]),
        }
    )


def _account(group: _Group, run: GroupRun) -> None:
    """Each piece's model calls on its outcome (the gate's own questions on the last)."""
    rc = group.rc
    for piece, outcome in zip(group.pieces, run.steps, strict=True):
        outcome.usage = rc.account(piece.st.coding, piece.st.classifier, *piece.st.judge_clients)
    extra = rc.account(*group.whole.judge_clients)
    if extra != Usage() and run.steps:
        run.steps[-1].usage = run.steps[-1].usage + extra


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
    """The group's commit message: one subject, every step in the body."""
    origin = {s.split_from for s in steps}
    subject = steps[0].description.splitlines()[0]
    if len(origin) == 1 and "" not in origin:
        subject = subject.rsplit(" (part 1 of ", 1)[0]
    else:
        subject = f"{subject} (and {len(steps) - 1} more landing with it)"
    body = "\n".join(f"- {s.id}: {s.description.splitlines()[0]}" for s in steps)
    return f"{subject}\n\nThese steps land together (one gate, one commit):\n{body}"
