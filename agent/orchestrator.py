"""solve(): the deterministic pass sequencer; here the single pass driven by a plan file."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agent import git
from agent.config import SolveConfig
from agent.errors import AgentError, BudgetExhausted, LLMError, PromptTooLarge
from agent.execute.implement import execute_implement
from agent.execute.patch import apply_edits
from agent.llm.budget import TaskBudget, prompt_limit
from agent.llm.logged import LoggedLLMClient
from agent.llm.router import ModelRouter
from agent.models import (
    AttemptRecord,
    ContextPackage,
    OrchestratorResult,
    PlanArtifact,
    PlanStep,
    Usage,
    ValidationResult,
)
from agent.retrieval.pipeline import context_from_files
from agent.store import RunLog
from agent.validation import passes_gate, run_validation

AUTHOR_NAME = "cra"
AUTHOR_EMAIL = "cra@users.noreply.github.com"
_FAILURE_OUTPUT_CHARS = 6000


@dataclass(frozen=True)
class Runtime:
    """What a solve run is given: the run log, the models, the environment, a work dir."""

    log: RunLog
    models: ModelRouter
    environ: Mapping[str, str]
    work_dir: Path
    new_id: Callable[[], str] = field(default=lambda: str(uuid.uuid4()))


@dataclass
class _Run:
    """The mutable state of one single-pass run."""

    task: str
    task_id: str
    task_run_id: int
    repo: Path
    config: SolveConfig
    worktree: Path
    branch: str
    base: str
    attempts: list[AttemptRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)


def slugify(text: str, *, limit: int = 40) -> str:
    """A branch-safe slug of the task text."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:limit].rstrip("-") or "task"


def run_single_pass(
    task: str,
    repo: Path,
    plan: PlanArtifact,
    config: SolveConfig,
    runtime: Runtime,
    *,
    in_place: bool = False,
) -> OrchestratorResult:
    """Implement `plan` in a worktree on a new branch: test, retry with the failure, commit."""
    config.require_test_command()
    repo = repo.resolve()
    task_id = runtime.new_id()
    base = git.head_commit(repo)
    task_run_id = runtime.log.start_task_run(
        task_id=task_id, repo_path=str(repo), task_description=task, mode="single_pass",
        config_json=config.model_dump_json(),
    )
    branch = git.unique_branch(repo, f"cra/{slugify(plan.task_summary or task)}")
    worktree = runtime.work_dir / "worktrees" / f"{slugify(task, limit=24)}-{task_id[:8]}"
    run = _Run(task, task_id, task_run_id, repo, config, worktree, branch, base)
    result = OrchestratorResult(task_id=task_id, status="failed", task_run_id=task_run_id)
    try:
        worktree.parent.mkdir(parents=True, exist_ok=True)
        git.add_worktree(repo, worktree, commit=base, branch=branch)
        result = _solve_in_worktree(run, plan, runtime)
    except AgentError as exc:
        result = result.model_copy(update={"status": "failed", "error": str(exc)})
    finally:
        _close_run(run, result, runtime)
    return _final_result(run, result, in_place=in_place)


def _solve_in_worktree(run: _Run, plan: PlanArtifact, runtime: Runtime) -> OrchestratorResult:
    baseline = run_validation(run.worktree, run.config.testing, environ=runtime.environ)
    runtime.log.record_validation(run.task_run_id, baseline, attempt_id=None, kind="baseline")
    llm = _coding_client(run, runtime)
    step = _step_from_plan(run.task, plan)
    context = _context(run, step, llm)
    targets = _target_tests(baseline, plan, run.task)
    commit: str | None = None
    error: str | None = None
    failure: str | None = None
    for number in range(1, run.config.orchestrator.max_retries_per_step + 2):
        git.reset_clean(run.worktree, run.base)
        try:
            attempt = _attempt(run, number, context, step, llm, failure, runtime)
        except (BudgetExhausted, LLMError, PromptTooLarge) as exc:
            error = str(exc)
            _record_attempt(run, AttemptRecord(attempt=number, error_info=error), runtime)
            break
        if _passed(attempt, baseline, targets):
            commit = git.commit_all(
                run.worktree, _commit_message(run, plan), author_name=AUTHOR_NAME,
                author_email=AUTHOR_EMAIL, trailers={"Cra-Run": run.task_id},
            )
            break
        failure = describe_failure(attempt)
    run.usage = llm.usage
    status = "complete" if commit else "failed"
    if commit is None and error is None:
        error = f"no attempt passed the tests ({len(run.attempts)} attempts)"
    return OrchestratorResult(
        task_id=run.task_id, task_run_id=run.task_run_id, status=status,
        branch=run.branch if commit else None, base_commit=run.base, commit=commit,
        diff=git.diff(run.worktree, run.base, commit) if commit else "",
        attempts=run.attempts, baseline=baseline, steps_completed=1 if commit else 0,
        parts_completed=1 if commit else 0, usage=run.usage, error=None if commit else error,
    )


def _attempt(
    run: _Run,
    number: int,
    context: ContextPackage,
    step: PlanStep,
    llm: LoggedLLMClient,
    failure: str | None,
    runtime: Runtime,
) -> AttemptRecord:
    stage = "implement" if number == 1 else "implement_retry"
    step_result = execute_implement(
        context, run.task, step, llm, reserved_tokens=run.config.budget.reserved_tokens,
        failure=failure, stage=stage,
    )
    attempt = AttemptRecord(
        attempt=number, raw_response=step_result.raw_response, usage=step_result.usage,
        edits=step_result.edits, error_info=step_result.error_info,
    )
    if step_result.success:
        patch = apply_edits(
            step_result.edits, run.worktree,
            protected=run.config.orchestrator.protected_paths,
        )
        attempt.patch_applied = patch.success
        attempt.unified_diff = patch.diff
        if not patch.success:
            attempt.error_info = f"edit rejected: {patch.error_info}\n{patch.hint}".strip()
    attempt_id = _record_attempt(run, attempt, runtime)
    if attempt.patch_applied:
        attempt.validation = run_validation(
            run.worktree, run.config.testing, environ=runtime.environ
        )
        runtime.log.record_validation(
            run.task_run_id, attempt.validation, attempt_id=attempt_id, kind="attempt"
        )
    return attempt


def _record_attempt(run: _Run, attempt: AttemptRecord, runtime: Runtime) -> int:
    run.attempts.append(attempt)
    return runtime.log.record_attempt(run.task_run_id, attempt)


def _passed(attempt: AttemptRecord, baseline: ValidationResult, targets: Sequence[str]) -> bool:
    if not attempt.patch_applied or attempt.validation is None or not attempt.edits:
        return False
    return passes_gate(baseline, attempt.validation, target_tests=targets)


def describe_failure(attempt: AttemptRecord) -> str:
    """What went wrong in an attempt, for the next attempt's prompt."""
    if attempt.validation is None:
        return (
            f"Your previous answer could not be used: {attempt.error_info}\n"
            "Answer only with <edit> blocks whose search text is copied exactly from the files."
        )
    validation = attempt.validation
    failing = "\n".join(f"- {t}" for t in validation.failing_tests) or "- (not identified)"
    output = (validation.test_output or "")[-_FAILURE_OUTPUT_CHARS:]
    return (
        f"Your previous edits applied, but the tests failed.\nYour edits:\n{attempt.unified_diff}\n"
        f"Failing tests:\n{failing}\nTest output (end):\n{output}"
    )


def _coding_client(run: _Run, runtime: Runtime) -> LoggedLLMClient:
    budget = run.config.budget
    step_budget = TaskBudget(
        "step", max_tokens=budget.max_tokens_per_step,
        max_calls=run.config.orchestrator.max_calls_per_step,
        tokens_label="max_tokens_per_step", calls_label="max_calls_per_step",
    )
    run_budget = TaskBudget(
        "run", max_tokens=budget.max_tokens_per_run, max_calls=None,
        tokens_label="max_tokens_per_run",
    )
    return LoggedLLMClient(
        runtime.models.client("coding"), runtime.log, role="coding",
        reserved_tokens=budget.reserved_tokens, task_run_id=run.task_run_id,
        budgets=[step_budget, run_budget],
    )


def _context(run: _Run, step: PlanStep, llm: LoggedLLMClient) -> ContextPackage:
    """The context seam: the plan's files, whole, within the coding window's budget."""
    limit = prompt_limit(llm.config, run.config.budget.reserved_tokens)
    return context_from_files(
        run.task, run.worktree, step.target_files, budget_tokens=max(limit // 2, 1)
    )


def _step_from_plan(task: str, plan: PlanArtifact) -> PlanStep:
    changes = "\n".join(
        f"- {f.path} ({f.role}): {f.changes}".rstrip(": ") for f in plan.affected_files
    )
    description = "\n".join(filter(None, [plan.task_summary or task, changes, plan.rationale]))
    return PlanStep(
        id="s1", description=description, target_files=[f.path for f in plan.affected_files]
    )


def _target_tests(baseline: ValidationResult, plan: PlanArtifact, task: str) -> list[str]:
    """Baseline-failing tests the plan or the task names: this pass must make them pass."""
    files = {f.path for f in plan.affected_files}
    return [
        test for test in baseline.failing_tests
        if test.split("::")[0] in files or test in task or test.split("::")[-1] in task
    ]


def _commit_message(run: _Run, plan: PlanArtifact) -> str:
    summary = (plan.task_summary or run.task).strip().splitlines()[0][:72]
    return f"{summary}\n\n{run.task}"


def _close_run(run: _Run, result: OrchestratorResult, runtime: Runtime) -> None:
    runtime.log.set_state(run.task_id, "orchestrator_progress", {"status": result.status})
    runtime.log.set_state(run.task_id, "cumulative_diff", result.diff)
    runtime.log.finish_task_run(
        run.task_run_id, status=result.status, success=result.status == "complete",
        usage=run.usage, final_diff=result.diff or None, branch=result.branch, error=result.error,
    )


def _final_result(run: _Run, result: OrchestratorResult, *, in_place: bool) -> OrchestratorResult:
    """Apply in place if asked; remove the worktree; keep the branch only when it carries the
    result (a diff that does not apply to the user's tree leaves the branch for them)."""
    keep_branch = result.commit is not None
    if in_place and result.commit is not None:
        try:
            git.apply_diff(run.repo, result.diff)
            keep_branch = False
        except AgentError as exc:
            error = f"could not apply the result to {run.repo}: {exc}; it is on {run.branch}"
            result = result.model_copy(update={"error": error})
    if run.worktree.exists():
        git.remove_worktree(run.repo, run.worktree)
    if not keep_branch and git.branch_exists(run.repo, run.branch):
        git.delete_branch(run.repo, run.branch)
    update: dict[str, object] = {"worktree": None, "usage": run.usage}
    if not keep_branch:
        update["branch"] = None
    return result.model_copy(update=update)
