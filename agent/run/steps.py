"""One plan step: retrieve → implement → apply → test → retry → commit, within its budgets."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from agent.errors import BudgetExhausted, LLMError, PromptTooLarge, UnsafePath
from agent.execute.paths import commit_refusal, repository_path
from agent.execute.prompts import build_implement_prompt
from agent.gate.validation import run_validation
from agent.gate.verdict import (
    file_of_test,
)
from agent.git import repo as git
from agent.git import worktrees
from agent.llm.budget import TaskBudget, context_room, estimate_tokens, prompt_limit
from agent.models import (
    AttemptRecord,
    ContextPackage,
    PartPlan,
    PatchEdit,
    PlanStep,
    RefinementRequest,
    RunEvent,
    StepOutcome,
    StepResult,
    TestChange,
    ValidationResult,
)
from agent.retrieval.scan import is_test_path
from agent.run.context import RunContext, StepState
from agent.run.step_gate import changed_gate_files, file_diffs, gate_attempt
from agent.runlog.store import ValidationKind

AUTHOR_NAME = "cra"
AUTHOR_EMAIL = "cra@users.noreply.github.com"
_FAILURE_OUTPUT_CHARS = 6000


def run_step(
    rc: RunContext,
    step: PlanStep,
    *,
    part_id: str,
    plan: PartPlan | None,
    cumulative_diff: str,
    task_run_id: int,
    extra_targets: Sequence[str] = (),
    base: str | None = None,
) -> StepOutcome:
    """Implement one step with retries; a pass is committed, a failure leaves the tree as it was.

    `extra_targets` are tests this step must make pass besides its own (the task's named tests
    in single-pass mode); `base` is the worktree's HEAD when the caller knows it."""
    st = step_state(
        rc,
        step,
        part_id=part_id,
        plan=plan,
        cumulative_diff=cumulative_diff,
        task_run_id=task_run_id,
        base=base or git.head_commit(rc.ws.worktree),
        extra_targets=extra_targets,
    )
    outcome = _attempts(st)
    outcome.usage = rc.account(st.coding, st.classifier, *st.judge_clients)
    if outcome.status != "passed":
        worktrees.reset_clean(rc.ws.worktree, st.base)
    elif outcome.validation is not None:
        rc.reference = outcome.validation
    return outcome


def step_state(
    rc: RunContext,
    step: PlanStep,
    *,
    part_id: str,
    plan: PartPlan | None,
    cumulative_diff: str,
    task_run_id: int,
    base: str,
    extra_targets: Sequence[str] = (),
) -> StepState:
    """A step's working set: its own coding client within the step's ceilings (ADR: ~30k
    tokens, a few calls), its classifier for retrieval, its base and its target tests.
    Retrieval's yes/no questions are capped per retrieval (retrieval.max_classifier_calls)
    and count against the run budget."""
    budget = TaskBudget(
        "step",
        max_tokens=rc.config.budget.max_tokens_per_step,
        max_calls=rc.config.orchestrator.max_calls_per_step,
        tokens_label="max_tokens_per_step",
        calls_label="max_calls_per_step",
    )
    coding = rc.client("coding", task_run_id=task_run_id, budgets=[budget])
    classifier = (
        rc.client("classifier", task_run_id=task_run_id) if rc.config.retrieval.stages else None
    )
    targets = list(dict.fromkeys([*step_target_tests(rc.baseline, step), *extra_targets]))
    return StepState(
        rc,
        step,
        part_id,
        plan,
        cumulative_diff,
        task_run_id,
        coding,
        classifier,
        base=base,
        targets=targets,
    )


def _attempts(st: StepState) -> StepOutcome:
    failure: str | None = None
    try:
        for number in range(1, st.rc.config.orchestrator.max_retries_per_step + 2):
            if number > 1:  # a step starts clean: its caller committed or reset the last one
                worktrees.reset_clean(st.rc.ws.worktree, st.base)
            attempt = _attempt(st, number, failure)
            if _passed(attempt):
                return _commit(st, attempt)
            failure = describe_failure(attempt)
    except BudgetExhausted as exc:
        _record(st, AttemptRecord(attempt=len(st.attempts) + 1, error_info=str(exc)))
        return _failed(st, str(exc), budget=exc.budget)
    except (LLMError, PromptTooLarge) as exc:
        _record(st, AttemptRecord(attempt=len(st.attempts) + 1, error_info=str(exc)))
        if isinstance(exc, LLMError):
            return _failed(st, f"a model call failed: {exc}", model_failed=True)
        return _failed(st, str(exc))
    return _failed(st, f"no attempt passed the tests ({len(st.attempts)} attempts)")


def _attempt(st: StepState, number: int, failure: str | None) -> AttemptRecord:
    attempt, attempt_id = implement_attempt(st, number, failure)
    if attempt.patch_applied:
        test_and_gate(st, attempt, attempt_id)
    return attempt


def implement_attempt(st: StepState, number: int, failure: str | None) -> tuple[AttemptRecord, int]:
    """One implement call (with its refinements) and its edits applied, recorded; the
    attempt and its id in the run log. `patch_applied` says whether the edits are in."""
    stage = "implement" if number == 1 else "implement_retry"
    context = st.rc.context.gather(
        st.rc.task,
        mode="implement",
        files=st.step.target_files,
        failure=failure,
        budget_tokens=_context_budget(st, failure),
        classifier=st.classifier,
    )
    result = _implement(st, context, failure, stage)
    loops = 0
    while (request := _refinement(result, context, st)) is not None:
        if loops >= st.rc.config.orchestrator.max_refinement_loops:
            break
        loops += 1
        context = st.rc.context.refine(context, request, classifier=st.classifier)
        result = _implement(st, context, failure, f"{stage}_refined")
    attempt = AttemptRecord(
        attempt=number,
        raw_response=result.raw_response,
        usage=result.usage,
        edits=result.edits,
        error_info=result.error_info,
    )
    if result.success:
        apply_attempt(st, attempt)
    return attempt, _record(st, attempt)


def run_tests(st: StepState, attempt_id: int, kind: ValidationKind) -> ValidationResult:
    """The test command on the worktree as it is, recorded under the attempt as `kind`."""
    validation = st.rc.timed(
        run_validation(
            st.rc.ws.worktree,
            st.rc.config.testing,
            environ=st.rc.runtime.environ,
            timeout=st.rc.test_timeout,
            sandbox=st.rc.runtime.sandbox,
        )
    )
    st.rc.runtime.log.record_validation(
        st.task_run_id, validation, attempt_id=attempt_id, kind=kind
    )
    return validation


def test_and_gate(st: StepState, attempt: AttemptRecord, attempt_id: int) -> None:
    """The tests on the applied attempt, and the gate's verdict on them (attempt.gate)."""
    attempt.validation = run_tests(st, attempt_id, "attempt")
    gate_attempt(st, attempt, attempt_id)


def _implement(
    st: StepState, context: ContextPackage, failure: str | None, stage: str
) -> StepResult:
    from agent.execute.implement import execute_implement  # not paid before a run's first call

    return execute_implement(
        context,
        st.rc.task,
        st.step,
        st.coding,
        reserved_tokens=st.rc.config.budget.reserved_tokens,
        plan=st.plan,
        cumulative_diff=st.cumulative_diff or None,
        failure=failure,
        stage=stage,
        landing=st.landing,
    )


def _refinement(
    result: StepResult, context: ContextPackage, st: StepState
) -> RefinementRequest | None:
    """Why the answer needs more context: it asked, or it edits a file it was not shown."""
    if result.refinement is not None:
        return result.refinement
    shown = {f.path for f in context.files}
    unseen = [
        e.file_path
        for e in result.edits
        if e.search and _unseen(st.rc.ws.worktree, e.file_path, shown)
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


def apply_attempt(st: StepState, attempt: AttemptRecord) -> None:
    """The attempt's edits written to the worktree (all or none), `patch_applied` and the
    diff set; a refused edit says why in `error_info`."""
    from agent.execute.patch import apply_edits  # the edit engine: not before a first call

    refused = commit_refusal(st.rc.ws.worktree, attempt.edits)
    if refused is not None:  # the tests would run with a file the step's commit cannot take
        attempt.patch_applied = False
        attempt.error_info = f"edit rejected: {refused}"
        return
    patch = apply_edits(
        attempt.edits, st.rc.ws.worktree, protected=st.rc.config.orchestrator.protected_paths
    )
    attempt.patch_applied = patch.success
    attempt.unified_diff = patch.diff
    if not patch.success:
        attempt.error_info = f"edit rejected: {patch.error_info}\n{patch.hint}".strip()
    st.rc.runtime.observer.on_event(
        RunEvent(  # a sign the run moves (the bot's stall check)
            kind="edits_applied",
            run_id=st.rc.run_id,
            part_id=st.part_id,
            step_id=st.step.id,
            status="applied" if patch.success else "rejected",
        )
    )


def _record(st: StepState, attempt: AttemptRecord) -> int:
    st.attempts.append(attempt)
    return st.rc.runtime.log.record_attempt(st.task_run_id, attempt)


def _passed(attempt: AttemptRecord) -> bool:
    return (
        attempt.patch_applied
        and bool(attempt.edits)
        and attempt.gate is not None
        and attempt.gate.passed
    )


def allowed_test_changes(st: StepState, attempt: AttemptRecord) -> list[TestChange]:
    """The declared test changes the gate allowed, one entry per test file."""
    verdict = attempt.gate
    if verdict is None or not verdict.changed_tests:
        return []
    diffs = file_diffs(attempt.unified_diff)
    in_code = {c.path for c in changed_gate_files(st, attempt) if c.tests_only}
    files = [f for f in diffs if is_test_path(f) or f in in_code]  # tests inside a source file
    unplaced = [t for t in verdict.changed_tests if file_of_test(t, files) is None]
    changes = []
    for path in files:
        tests = [t for t in verdict.changed_tests if file_of_test(t, [path])] or unplaced
        tests = [t for t in tests if t != path] or tests  # the file itself, when named tests
        if tests:
            changes.append(
                TestChange(
                    path=path,
                    tests=tests,
                    diff=diffs[path],
                    reason=st.step.description,
                    step=f"{st.part_id}/{st.step.id}",
                )
            )
    return changes


def commit_edits(st: StepState, edits: Sequence[PatchEdit], description: str) -> str | None:
    """A commit of the files `edits` wrote, under `description` (its first line the
    subject) and the run's trailers; None when nothing changed."""
    worktree = st.rc.ws.worktree
    description = neutralise_closing_keywords(description.strip())
    message = f"{description.splitlines()[0][:72]}\n\n{description}"
    # Only the edited files are committed, never what the test run left behind; by the paths
    # git knows them by (an edit through a symlink wrote its target).
    known = {e.file_path: repository_path(worktree, e.file_path) for e in edits}
    edited = sorted(set(known.values()))
    created = sorted({known[e.file_path] for e in edits if not e.search})
    return git.commit_all(
        worktree,
        message,
        author_name=AUTHOR_NAME,
        author_email=AUTHOR_EMAIL,
        trailers={"Cra-Run": st.rc.run_id, "Cra-Step": f"{st.part_id}/{st.step.id}"},
        paths=edited,
        new_paths=created,
    )


def _commit(st: StepState, attempt: AttemptRecord) -> StepOutcome:
    commit = commit_edits(st, attempt.edits, st.step.description)
    return StepOutcome(
        part_id=st.part_id,
        step_id=st.step.id,
        description=st.step.description,
        status="passed",
        attempts=st.attempts,
        commit=commit,
        diff=attempt.unified_diff if commit else "",
        validation=attempt.validation,
        task_run_id=st.task_run_id,
        tests_changed=allowed_test_changes(st, attempt),
    )


def _failed(
    st: StepState, error: str, *, budget: str | None = None, model_failed: bool = False
) -> StepOutcome:
    last = next((a.validation for a in reversed(st.attempts) if a.validation), None)
    return StepOutcome(
        part_id=st.part_id,
        step_id=st.step.id,
        description=st.step.description,
        status="failed",
        attempts=st.attempts,
        error=error,
        budget_exhausted=budget,
        validation=last,
        task_run_id=st.task_run_id,
        model_failed=model_failed,
    )


def _context_budget(st: StepState, failure: str | None) -> int:
    """What the step's files may take: what an implement pass needs (its files, whole while
    they fit: retrieval.implement_context_tokens), within the window left once the prompt frame
    and the failure text are counted."""
    model = st.coding.config
    reserved = st.rc.config.budget.reserved_tokens
    frame = build_implement_prompt(
        ContextPackage(task=st.rc.task),
        st.rc.task,
        st.step,
        model=model,
        reserved_tokens=reserved,
        plan=st.plan,
        cumulative_diff=st.cumulative_diff or None,
        landing=st.landing,
    )
    room = context_room(*frame, model=model, reserved_tokens=reserved)
    if failure:
        room = max(room - min(estimate_tokens(failure), prompt_limit(model, reserved) // 4), 0)
    return min(room, st.rc.config.retrieval.implement_context_tokens)


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


def step_target_tests(baseline: ValidationResult, step: PlanStep) -> list[str]:
    """The step's own tests: its test files, and baseline failures inside its target files."""
    files = [f for f in step.target_files if is_test_path(f)]
    failing = [t for t in baseline.failing_tests if t.split("::")[0] in step.target_files]
    return list(dict.fromkeys([*files, *failing]))


def describe_failure(attempt: AttemptRecord) -> str:
    """What went wrong in an attempt, for the next attempt's prompt."""
    if attempt.validation is None:
        return (
            f"Your previous answer could not be used: {attempt.error_info}\n"
            "Answer only with <edit> blocks whose search text is copied exactly from the files."
        )
    validation = attempt.validation
    if attempt.original is not None and not (attempt.gate and attempt.gate.passed):
        validation = attempt.original  # where the rejection showed
    failing = "\n".join(f"- {t}" for t in validation.failing_tests) or "- (not identified)"
    output = (validation.test_output or "")[-_FAILURE_OUTPUT_CHARS:]
    verdict = attempt.error_info or "The tests failed."
    return (
        f"Your previous edits applied, but they did not pass the test gate.\n{verdict}\n"
        f"Your edits:\n{attempt.unified_diff}\nFailing tests:\n{failing}\n"
        f"Test output (end):\n{output}"
    )
