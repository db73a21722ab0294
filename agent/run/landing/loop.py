"""The one landing path: a plan step and the steps that land together with it (a single step
is a group of one) implemented, applied, gated and retried until the gate passes or the retries
run out; a pass is committed once, a failure leaves the tree as it was.

Each piece is implemented by its own call on its own file and applied in order, the tests run
after each for information, the gate judging the group once its last piece is in; a group that
fails is rolled back whole and retried at the pieces its failure points to, the others applied
again as they were. A group of one is gated on its step's own attempt. A retry starts from the
closest attempt so far: the last, unless an earlier one passed more of the gate (more tests
passing, then fewer failing) — then the last is set aside, the retry is told of the earlier one
and, in a group, the pieces go back to their edits in it.

One commit per group: only the group's final state was judged, so a commit per piece would put
commits on the branch that break the tests (and `git bisect` with them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agent.execute.grouping import merged_step
from agent.execute.prompts import last_chars
from agent.git import repo as git
from agent.git import worktrees
from agent.models import AttemptRecord, GroupRound, PlanStep
from agent.run.context import RunContext, StepRequest
from agent.run.landing.attempt import (
    apply_attempt,
    implement_attempt,
    record_attempt,
    run_tests,
    step_state,
    test_and_gate,
)
from agent.run.landing.blame import implicated
from agent.run.landing.outcome import (
    LANDING_ERRORS,
    Closest,
    Failure,
    Landing,
    Piece,
    Unit,
    account,
    closer,
    describe_failure,
    failed,
    failure_of,
    landed,
    set_aside,
)

_NOTE_DIFF_CHARS = 4000
_NOTE_OUTPUT_CHARS = 1500
_NOTE_FAILING = 10


@dataclass
class _Round:
    """One round's pieces applied: the attempt the gate judges and its id in the run log, the
    pieces implemented anew, and the piece whose answer could not be used."""

    attempt: AttemptRecord
    attempt_id: int  # 0 when the round's attempt was not recorded (a piece was broken)
    redone: list[str] = field(default_factory=list)
    broken: Piece | None = None


def land(run_context: RunContext, steps: Sequence[PlanStep], request: StepRequest) -> Landing:
    """Land `steps` together (see the module's docstring): committed once when the gate passes
    them, else the tree reset to `request.base`."""
    unit = _unit(run_context, steps, request)
    try:
        landing = _rounds(unit)
    except LANDING_ERRORS as exc:
        if unit.single:  # a single step keeps the failed call among its attempts
            record_attempt(
                unit.whole, AttemptRecord(attempt=len(unit.whole.attempts) + 1, error_info=str(exc))
            )
        landing = failed(unit, failure_of(exc))
    landing = account(unit, landing)
    if not landing.passed:
        worktrees.reset_clean(run_context.workspace.worktree, request.base)
    elif landing.outcome.validation is not None:
        run_context.reference = landing.outcome.validation
    return landing


def _unit(run_context: RunContext, steps: Sequence[PlanStep], request: StepRequest) -> Unit:
    """The working set of one landing: a piece per step, and the whole the gate reads (for a
    group of one, its step's own state)."""
    pieces = [Piece(step_state(run_context, s, request)) for s in steps]
    if len(pieces) == 1:
        return Unit(run_context, pieces, pieces[0].state)
    # the merged step's targets are its steps' together (step_target_tests, per file)
    return Unit(run_context, pieces, step_state(run_context, merged_step(steps), request))


def _rounds(unit: Unit) -> Landing:
    """The retry loop: rounds until the gate passes or the retries (per step or group) run out,
    each retry told of the closest attempt so far (the last, unless an earlier one passed more
    of the gate: then the last is set aside and the retry starts from the earlier); then the
    samples (`orchestrator.samples`): candidates drawn from the last retry's prompt —
    the last failure, the same pieces redone — at `orchestrator.sample_temperature`, the first
    the gate passes kept."""
    orchestrator = unit.run_context.config.orchestrator
    tries = orchestrator.max_retries_per_step + 1
    failure: str | None = None
    redo = {p.step.id for p in unit.pieces}
    for number in range(1, tries + orchestrator.samples + 1):
        sampled = number > tries  # another draw from the same prompt: it changes neither
        temperature = orchestrator.sample_temperature if sampled else None
        if number > 1:  # back to the accepted state: the unit is retried whole
            worktrees.reset_clean(unit.run_context.workspace.worktree, unit.whole.base)
        applied = _apply_pieces(unit, number, failure, redo, temperature)
        unit.rounds.append(
            GroupRound(number=number, redone=applied.redone, attempt=applied.attempt)
        )
        if applied.broken is not None:  # a piece's answer could not be used: retry that piece
            if not sampled:
                failure = describe_failure(applied.broken.state.attempts[-1])
                redo = {applied.broken.step.id}
            continue
        attempt = applied.attempt
        test_and_gate(unit.whole, attempt, applied.attempt_id)
        if _passed(attempt):
            return landed(unit, attempt)
        if not sampled:
            closest = _keep_closest(unit, attempt)
            failure = describe_failure(closest.attempt, unit.steps)
            if closest.attempt is not attempt:
                failure = set_aside(attempt, closest.attempt) + failure
            redo = implicated(unit.steps, closest.attempt, {p.step.id: p.diff for p in unit.pieces})
    return failed(unit, Failure(unit.exhausted()))


def _keep_closest(unit: Unit, attempt: AttemptRecord) -> Closest:
    """The closest attempt once `attempt` has been gated, kept on `unit`: `attempt` itself
    unless an earlier one passed strictly more of the gate (`closer`) — then the pieces go back
    to their edits in that one, and the retry starts from it."""
    closest = unit.closest
    if closest is None or not closer(closest.attempt, attempt):
        closest = Closest(attempt, tuple((list(p.edits), p.diff) for p in unit.pieces))
    else:
        for piece, (edits, diff) in zip(unit.pieces, closest.pieces, strict=True):
            piece.edits, piece.diff = list(edits), diff
    unit.closest = closest
    return closest


def _passed(attempt: AttemptRecord) -> bool:
    return (
        attempt.patch_applied
        and bool(attempt.edits)
        and attempt.gate is not None
        and attempt.gate.passed
    )


def _apply_pieces(
    unit: Unit, number: int, failure: str | None, redo: set[str], temperature: float | None
) -> _Round:
    """Every piece applied in order: those in `redo` (or that no longer apply) implemented
    anew with the failure (sampled at `temperature` when given), the others as they were."""
    redone: list[str] = []
    for index, piece in enumerate(unit.pieces):
        if piece.edits and piece.step.id not in redo and _reapplied(piece):
            continue
        redone.append(piece.step.id)
        piece.state.landing = landing_note(unit.pieces, index)
        again = piece.step.id in redo
        attempt, attempt_id = implement_attempt(
            piece.state,
            number,
            failure if again else None,
            temperature=temperature if again else None,
        )
        if not attempt.patch_applied:
            piece.edits, piece.diff = [], ""
            why = f"step {piece.step.id}: {attempt.error_info or 'no usable edits'}"
            return _Round(AttemptRecord(attempt=number, error_info=why), 0, redone, piece)
        piece.edits, piece.diff = list(attempt.edits), attempt.unified_diff
        if unit.single:  # a group of one is gated on its step's own attempt
            return _Round(attempt, attempt_id, redone)
        if index < len(unit.pieces) - 1:  # the last piece's run is the gate's
            piece.tests_after = attempt.validation = run_tests(piece.state, attempt_id, "piece")
    edits = [e for p in unit.pieces for e in p.edits]
    diff = git.diff(unit.run_context.workspace.worktree, unit.whole.base)
    attempt = AttemptRecord(attempt=number, edits=edits, patch_applied=True, unified_diff=diff)
    return _Round(
        attempt,
        unit.run_context.runtime.log.record_attempt(unit.whole.task_run_id, attempt),
        redone,
    )


def _reapplied(piece: Piece) -> bool:
    """Whether a kept piece's edits applied again as they were."""
    again = AttemptRecord(attempt=0, edits=piece.edits)
    apply_attempt(piece.state, again)
    if again.patch_applied:
        piece.diff = again.unified_diff
    return again.patch_applied


def landing_note(pieces: Sequence[Piece], index: int) -> str | None:
    """What the implementer of piece `index` is told of the steps it lands with: the order,
    the changes before it and, when they failed, the tests after them; None for a step that
    lands alone."""
    if len(pieces) < 2:
        return None
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
