"""One attempt at a plan step: retrieve → implement → apply → test and gate, within the step's
budgets; its commit, and the tests it must make pass."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

from agent.errors import UnsafePath
from agent.execute.edits.paths import commit_refusal, repository_path
from agent.execute.prompts import ImplementRequest, build_implement_prompt
from agent.gate.gate_files import with_recorded_tests
from agent.gate.validation import run_validation
from agent.gate.verdict import file_of_test
from agent.git import repo as git
from agent.llm.budget import context_room, estimate_tokens, prompt_limit
from agent.models import (
    AttemptRecord,
    ContextPackage,
    PatchEdit,
    PlanStep,
    RefinementRequest,
    RunEvent,
    StepResult,
    TestChange,
    ValidationResult,
)
from agent.retrieval.indexing.scan import is_test_path
from agent.run.context import RunContext, StepRequest, StepState
from agent.run.landing.gate import changed_gate_files, file_diffs, gate_attempt
from agent.run.landing.stops import past_stops
from agent.runlog.store import ValidationKind

AUTHOR_NAME = "cra"
AUTHOR_EMAIL = "cra@users.noreply.github.com"


def step_state(run_context: RunContext, step: PlanStep, request: StepRequest) -> StepState:
    """A step's working set: its own coding client within the step's ceilings (ADR: ~30k
    tokens, a few calls), its classifier for retrieval, and its target tests (its own and the
    request's). Retrieval's yes/no questions are capped per retrieval
    (retrieval.max_classifier_calls) and count against the run budget."""
    coding, classifier = run_context.step_clients("step", task_run_id=request.task_run_id)
    exists = in_worktree(run_context.workspace.worktree)
    targets = [*step_target_tests(run_context.baseline, step, exists), *request.extra_targets]
    return StepState(
        run_context, step, request, coding, classifier, targets=list(dict.fromkeys(targets))
    )


def implement_attempt(
    state: StepState, number: int, failure: str | None, *, temperature: float | None = None
) -> tuple[AttemptRecord, int]:
    """One implement call (with its refinements) and its edits applied, recorded; the
    attempt and its id in the run log. `patch_applied` says whether the edits are in. With a
    `temperature`, the call is one of the candidates sampled after the retries failed."""
    stage = "implement" if number == 1 else "implement_retry"
    stage = "implement_sample" if temperature is not None else stage
    context = state.run_context.context.gather(
        state.run_context.task,
        mode="implement",
        files=state.step.target_files,
        symbols=state.step.target_symbols,
        failure=failure,
        budget_tokens=_context_budget(state, failure),
        classifier=state.classifier,
    )
    result = _implement(state, context, failure, stage, temperature)
    loops = 0
    while (request := _refinement(result, context, state)) is not None:
        if loops >= state.run_context.config.orchestrator.max_refinement_loops:
            break
        loops += 1
        focus = request.model_copy(update={"focus": state.step.description})
        context = state.run_context.context.refine(context, focus, classifier=state.classifier)
        result = _implement(state, context, failure, f"{stage}_refined", temperature)
    attempt = AttemptRecord(
        attempt=number,
        raw_response=result.raw_response,
        usage=result.usage,
        edits=result.edits,
        error_info=result.error_info,
    )
    if result.success:
        apply_attempt(state, attempt)
    return attempt, record_attempt(state, attempt)


def run_tests(state: StepState, attempt_id: int, kind: ValidationKind) -> ValidationResult:
    """The test command on the worktree as it is, recorded under the attempt as `kind`."""
    validation = state.run_context.timed(
        run_validation(
            state.run_context.workspace.worktree,
            state.run_context.config.testing,
            environ=state.run_context.runtime.environ,
            timeout=state.run_context.test_timeout,
            sandbox=state.run_context.runtime.sandbox,
        )
    )
    state.run_context.runtime.log.record_validation(
        state.task_run_id, validation, attempt_id=attempt_id, kind=kind
    )
    return validation


def test_and_gate(state: StepState, attempt: AttemptRecord, attempt_id: int) -> None:
    """The tests on the applied attempt, and the gate's verdict on them (attempt.gate)."""
    attempt.validation = past_stops(state, run_tests(state, attempt_id, "attempt"), attempt_id)
    gate_attempt(state, attempt, attempt_id)


def implement_request(state: StepState) -> ImplementRequest:
    """What the step's implement calls are asked."""
    return ImplementRequest(
        state.run_context.task,
        state.step,
        state.run_context.config.budget.reserved_tokens,
        plan=state.plan,
        cumulative_diff=state.cumulative_diff or None,
        landing=state.landing,
    )


def _implement(
    state: StepState,
    context: ContextPackage,
    failure: str | None,
    stage: str,
    temperature: float | None,
) -> StepResult:
    from agent.execute.implement import execute_implement  # not paid before a run's first call

    return execute_implement(
        context,
        implement_request(state),
        state.coding,
        failure=failure,
        stage=stage,
        temperature=temperature,
    )


def _refinement(
    result: StepResult, context: ContextPackage, state: StepState
) -> RefinementRequest | None:
    """Why the answer needs more context: it asked, or it edits a file it was not shown."""
    if result.refinement is not None:
        return result.refinement
    shown = {f.path for f in context.files}
    unseen = [
        e.file_path
        for e in result.edits
        if e.search and _unseen(state.run_context.workspace.worktree, e.file_path, shown)
    ]
    if not unseen:
        return None
    return RefinementRequest(
        reason="the answer edits files it was not shown", missing_files=list(dict.fromkeys(unseen))
    )


def _unseen(worktree: Path, rel: str, shown: set[str]) -> bool:
    """Whether an edit of `rel` changes an existing file the context did not show (by its own
    name or, through a symlink, its target's)."""
    if rel in shown:
        return False
    try:
        real = repository_path(worktree, rel)
    except UnsafePath:  # the edit engine refuses it, with its reason
        return False
    return real not in shown and (worktree / real).is_file()


def apply_attempt(state: StepState, attempt: AttemptRecord) -> None:
    """The attempt's edits written to the worktree (all or none), `patch_applied` and the
    diff set; a refused edit says why in `error_info`."""
    from agent.execute.edits.patch import apply_edits  # the edit engine: not before a first call

    refused = commit_refusal(state.run_context.workspace.worktree, attempt.edits)
    if refused is not None:  # the tests would run with a file the step's commit cannot take
        attempt.patch_applied = False
        attempt.error_info = f"edit rejected: {refused}"
        return
    patch = apply_edits(
        attempt.edits,
        state.run_context.workspace.worktree,
        protected=state.run_context.config.orchestrator.protected_paths,
    )
    attempt.patch_applied = patch.success
    attempt.unified_diff = patch.diff
    if not patch.success:
        attempt.error_info = f"edit rejected: {patch.error_info}\n{patch.hint}".strip()
    state.run_context.runtime.observer.on_event(
        RunEvent(  # a sign the run moves (the bot's stall check)
            kind="edits_applied",
            task_id=state.run_context.task_id,
            part_id=state.part_id,
            step_id=state.step.id,
            status="applied" if patch.success else "rejected",
        )
    )


def record_attempt(state: StepState, attempt: AttemptRecord) -> int:
    """The attempt kept among the step's and recorded under its task run; its id."""
    state.attempts.append(attempt)
    return state.run_context.runtime.log.record_attempt(state.task_run_id, attempt)


def allowed_test_changes(state: StepState, attempt: AttemptRecord) -> list[TestChange]:
    """The declared test changes the gate allowed, one entry per test file."""
    verdict = attempt.gate
    if verdict is None or not verdict.changed_tests:
        return []
    diffs = file_diffs(attempt.unified_diff)
    in_code = {c.path for c in changed_gate_files(state, attempt) if c.tests_only}
    files = [f for f in diffs if is_test_path(f) or f in in_code]  # tests inside a source file
    unplaced = [
        t for t in verdict.changed_tests if file_of_test(t, with_recorded_tests(files)) is None
    ]
    changes = []
    for path in files:
        own = with_recorded_tests([path])  # a snapshot's tests are its test file's
        tests = [t for t in verdict.changed_tests if file_of_test(t, own)] or unplaced
        tests = [t for t in tests if t != path] or tests  # the file itself, when named tests
        if tests:
            changes.append(
                TestChange(
                    path=path,
                    tests=tests,
                    diff=diffs[path],
                    reason=state.step.description,
                    step=f"{state.part_id}/{state.step.id}",
                )
            )
    return changes


def commit_edits(state: StepState, edits: Sequence[PatchEdit], description: str) -> str | None:
    """A commit of the files `edits` wrote, under `description` (its first line the
    subject) and the run's trailers; None when nothing changed."""
    step = f"{state.part_id}/{state.step.id}"
    return commit_written(state.run_context, edits, description, step=step)


def commit_written(
    run_context: RunContext, edits: Sequence[PatchEdit], description: str, *, step: str
) -> str | None:
    """A commit of exactly the files `edits` wrote in the run's worktree (never what a test
    run left behind), under `description` and the run's trailers; None when nothing changed."""
    worktree = run_context.workspace.worktree
    description = neutralise_closing_keywords(description.strip())
    message = f"{description.splitlines()[0][:72]}\n\n{description}"
    # by the paths git knows them by (an edit through a symlink wrote its target)
    known = {e.file_path: repository_path(worktree, e.file_path) for e in edits}
    return git.commit_all(
        worktree,
        message,
        author_name=AUTHOR_NAME,
        author_email=AUTHOR_EMAIL,
        trailers={"Cra-Run": run_context.task_id, "Cra-Step": step},
        paths=sorted(set(known.values())),
        new_paths=sorted({known[e.file_path] for e in edits if not e.search}),
    )


def _context_budget(state: StepState, failure: str | None) -> int:
    """What the step's files may take: what an implement pass needs (its files, whole while
    they fit: retrieval.implement_context_tokens), within the window left once the prompt frame
    and the failure text are counted."""
    model = state.coding.config
    reserved = state.run_context.config.budget.reserved_tokens
    frame = build_implement_prompt(
        ContextPackage(task=state.run_context.task), implement_request(state), model
    )
    room = context_room(*frame, model=model, reserved_tokens=reserved)
    if failure:
        room = max(room - min(estimate_tokens(failure), prompt_limit(model, reserved) // 4), 0)
    return min(room, state.run_context.config.retrieval.implement_context_tokens)


_CLOSING = re.compile(r"\b(close[sd]?|fix(?:e[sd])?|resolve[sd]?)(\s*:?\s+)(?=[\w./-]*#\d)", re.I)


def neutralise_closing_keywords(text: str) -> str:
    """Model-written text must not close issues on merge ("fixes #12" → "fixes issue #12")."""
    return _CLOSING.sub(lambda m: f"{m.group(1)}{m.group(2)}issue ", text)


_FENCED = re.compile(r"^([ \t]*)(`{3,}|~{3,}).*?^\1\2[ \t]*$", re.M | re.S)


def task_target_tests(baseline: ValidationResult, task: str) -> list[str]:
    """Baseline-failing tests the task text names, as precisely as it names them: by their
    ids when it names any; else by their names (`test_x`, every parameter of it); else every
    failure of a test file it names. What its prose names first: a test that only a quoted
    test output names (in a fenced block) failed beside the task's, it is not asked to pass."""
    prose = _FENCED.sub("", task)
    for text in dict.fromkeys([prose, task]):
        found = _named_targets(baseline.failing_tests, text)
        if found:
            return found
    return []


def _named_targets(failing: Sequence[str], text: str) -> list[str]:
    exact = [t for t in failing if _named_in(t, text)]
    if exact:
        return exact
    named = [t for t in failing if _named_in(t.split("::")[-1].split("[")[0], text)]
    return named or [t for t in failing if _named_in(t.split("::")[0], text)]


def _named_in(name: str, text: str) -> bool:
    """Whether `text` names `name` whole (not as the start of a longer name or id)."""
    return bool(name) and re.search(rf"(?<![\w.]){re.escape(name)}(?![\w\[])", text) is not None


def step_target_tests(
    baseline: ValidationResult, step: PlanStep, exists: Callable[[str], bool]
) -> list[str]:
    """The step's own tests: its test files, and baseline failures inside its target files. A
    test file that exists (`exists`) and that no test of the baseline run is named after holds
    no test to pass — a snapshot, a fixture, a helper (tap's `tap-snapshots/test/x.js.test.cjs`)
    — and is not a target; one the step creates is."""
    named = [*baseline.passing_tests, *baseline.failing_tests, *baseline.report.outcomes]
    files = [
        f
        for f in step.target_files
        if is_test_path(f) and (not exists(f) or any(file_of_test(t, [f]) for t in named))
    ]
    failing = [t for t in baseline.failing_tests if t.split("::")[0] in step.target_files]
    return list(dict.fromkeys([*files, *failing]))


def in_worktree(worktree: Path) -> Callable[[str], bool]:
    """Whether a path exists in `worktree` now."""
    return lambda path: (worktree / path).exists()
