"""The single pass: one step built from a plan file, implemented with retries in a worktree."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent.config.files import SolveConfig
from agent.errors import AgentError, Interrupted
from agent.git import repo as git
from agent.git.workspace import Workspace, apply_in_place, close_workspace, open_workspace
from agent.models import OrchestratorResult, PlanArtifact, PlanStep, StepOutcome
from agent.retrieval.indexing.scan import is_test_path
from agent.run.context import RunContext, StepRequest, run_budget
from agent.run.environment import open_environment, run_baseline
from agent.run.landing.attempt import task_target_tests
from agent.run.landing.loop import land
from agent.run.runtime import Runtime
from agent.run.sources import ContextFactory, ContextSource, SeededFiles


def run_single_pass(
    task: str,
    repo: Path,
    plan: PlanArtifact,
    config: SolveConfig,
    runtime: Runtime,
    *,
    in_place: bool = False,
    context_factory: ContextFactory = SeededFiles,
) -> OrchestratorResult:
    """Implement `plan` in a worktree on a new branch: test, retry with the failure, commit."""
    config.require_test_command()
    repo = repo.resolve()
    task_id = runtime.new_id()
    started = runtime.clock()
    task_run_id = runtime.log.start_task_run(
        task_id=task_id,
        repo_path=str(repo),
        task_description=task,
        mode="single_pass",
        config_json=config.model_dump_json(),
    )
    result = OrchestratorResult(task_id=task_id, status="failed", task_run_id=task_run_id)
    workspace: Workspace | None = None
    try:
        workspace = open_workspace(
            repo, work_dir=runtime.work_dir, run_id=task_id, branch_hint=plan.task_summary or task
        )
        context = context_factory(workspace.worktree)
        try:
            run = _SingleRun(task, task_id, task_run_id, config, runtime)
            result = _solve(run, plan, workspace, context)
        finally:
            context.close()
    except AgentError as exc:
        result = result.model_copy(update={"status": "failed", "error": str(exc)})
    except Interrupted as exc:  # SIGINT or SIGTERM to `cra`: end the run cleanly, then say so
        result = result.model_copy(
            update={"status": "cancelled", "error": f"interrupted by {exc.name}"}
        )
    finally:
        result = _finish(result, workspace, runtime, in_place=in_place, started=started)
    return result


@dataclass(frozen=True)
class _SingleRun:
    """The single pass on record: its task, its run's id and task run, what it runs with."""

    task: str
    task_id: str
    task_run_id: int
    config: SolveConfig
    runtime: Runtime


def _solve(
    run: _SingleRun, plan: PlanArtifact, workspace: Workspace, context: ContextSource
) -> OrchestratorResult:
    task, task_id, task_run_id = run.task, run.task_id, run.task_run_id
    config, runtime = run.config, run.runtime
    runtime, env = open_environment(
        runtime, workspace, config.testing, task_id=task_id, task_run_id=task_run_id
    )
    try:
        baseline = run_baseline(runtime, workspace, config.testing, task_run_id=task_run_id)
        run_context = RunContext(
            task, task_id, runtime, config, workspace, baseline, context, run_budget(config)
        )
        request = StepRequest(
            part_id="single",
            plan=None,
            cumulative_diff="",
            task_run_id=task_run_id,
            base=git.head_commit(workspace.worktree),
            extra_targets=task_target_tests(baseline, task),
        )
        outcome = land(run_context, [step_from_plan(task, plan)], request).outcome
    finally:
        env.close()
    runtime.log.set_state(task_id, "step_result:single:s1", outcome)
    result = _result(task_id, task_run_id, workspace, outcome, run_context)
    return result.model_copy(update={"environment": env.report})


def _result(
    task_id: str,
    task_run_id: int,
    workspace: Workspace,
    outcome: StepOutcome,
    run_context: RunContext,
) -> OrchestratorResult:
    passed = outcome.status == "passed"
    return OrchestratorResult(
        task_id=task_id,
        task_run_id=task_run_id,
        status="complete" if passed else "failed",
        branch=workspace.branch if passed else None,
        base_commit=workspace.base,
        commit=outcome.commit,
        diff=git.diff(workspace.worktree, workspace.base, outcome.commit) if outcome.commit else "",
        attempts=outcome.attempts,
        baseline=run_context.baseline,
        final_validation=outcome.validation if passed else run_context.baseline,
        steps=[outcome],
        steps_completed=int(passed),
        steps_failed=int(not passed),
        parts_completed=int(passed),
        usage=run_context.usage,
        usage_by_role=run_context.usage_by_role,
        budget_exhausted=outcome.budget_exhausted,
        error=outcome.error,
    )


READ_ROLES = frozenset({"read", "context", "reference", "create"})


def step_from_plan(task: str, plan: PlanArtifact) -> PlanStep:
    """The one step a plan file describes: its summary, its files and their changes."""
    changes = "\n".join(
        f"- {f.path} ({f.role}): {f.changes}".rstrip(": ") for f in plan.affected_files
    )
    description = "\n".join(filter(None, [plan.task_summary or task, changes, plan.rationale]))
    changes_tests = any(
        is_test_path(f.path) and f.role.strip().lower() not in READ_ROLES
        for f in plan.affected_files
    )
    return PlanStep(
        id="s1",
        description=description,
        target_files=[f.path for f in plan.affected_files],
        changes_existing_tests=changes_tests,
    )


def _finish(
    result: OrchestratorResult,
    workspace: Workspace | None,
    runtime: Runtime,
    *,
    in_place: bool,
    started: float,
) -> OrchestratorResult:
    """Record the end, apply in place if asked, remove the worktree, keep a carrying branch."""
    update: dict[str, object] = {"wall_ms": int((runtime.clock() - started) * 1000)}
    keep_branch = result.commit is not None
    if workspace is not None and in_place and result.commit is not None:
        error = apply_in_place(workspace, result.diff)
        keep_branch = error is not None
        update["error"] = error
    if not keep_branch:
        update["branch"] = None
    result = result.model_copy(update=update)
    assert result.task_run_id is not None
    runtime.log.set_state(result.task_id, "orchestrator_progress", {"status": result.status})
    runtime.log.set_state(result.task_id, "cumulative_diff", result.diff)
    runtime.log.finish_task_run(
        result.task_run_id,
        status=result.status,
        success=result.status == "complete",
        usage=result.usage,
        final_diff=result.diff or None,
        branch=result.branch,
        error=result.error,
    )
    if workspace is not None:
        close_workspace(workspace, keep_branch=keep_branch)
    return result
