"""`cra plan`: one meta-plan pass over the repository, turned into a PlanArtifact."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from agent.config.files import SolveConfig
from agent.errors import AgentError, Interrupted
from agent.execute.plan import plan_meta, plan_to_artifact
from agent.execute.plan_material import PlanRequest, plan_context_room
from agent.llm.budget import TaskBudget
from agent.llm.logged import LoggedLLMClient
from agent.models import MetaPlan, ModelRole, PlanArtifact
from agent.run.runtime import Runtime
from agent.run.sources import ContextSource, SeededFiles


def plan_task(
    task: str,
    repo: Path,
    config: SolveConfig,
    runtime: Runtime,
    *,
    context: ContextSource | None = None,
) -> PlanArtifact:
    """Plan `task` over the repository as it is (nothing is changed); the pass is recorded."""
    source = context if context is not None else SeededFiles(repo)
    task_run = runtime.log.start_task_run(
        task_id=runtime.new_id(),
        repo_path=str(repo),
        task_description=task,
        mode="plan",
        config_json=config.model_dump_json(),
    )
    budget = TaskBudget(
        "run",
        max_tokens=config.budget.max_tokens_per_run,
        max_calls=None,
        tokens_label="max_tokens_per_run",
    )
    reasoning = _client(runtime, config, "reasoning", task_run, budget)
    classifier = _client(runtime, config, "classifier", task_run, budget)
    try:
        meta = _meta_plan(task, source, reasoning, classifier, config)
    except AgentError as exc:
        _finish(runtime, task_run, "failed", reasoning, classifier, error=str(exc))
        raise
    except Interrupted as exc:  # SIGINT or SIGTERM to `cra plan`: recorded, then said
        _finish(runtime, task_run, "cancelled", reasoning, classifier, error=str(exc))
        raise
    _finish(runtime, task_run, "complete", reasoning, classifier)
    runtime.log.set_state(str(task_run), "meta_plan", meta)
    return plan_to_artifact(meta)


def _meta_plan(
    task: str,
    source: ContextSource,
    reasoning: LoggedLLMClient,
    classifier: LoggedLLMClient,
    config: SolveConfig,
) -> MetaPlan:
    reserved = config.budget.reserved_tokens
    room = min(
        plan_context_room(
            task,
            pass_type="meta_plan",
            model=reasoning.config,
            reserved_tokens=reserved,
            step_token_budget=config.budget.max_tokens_per_step,
        ),
        config.retrieval.plan_context_tokens,
    )
    package = source.gather(
        task,
        mode="plan",
        files=(),
        failure=None,
        budget_tokens=room,
        classifier=classifier if config.retrieval.stages else None,
    )
    request = PlanRequest(
        package,
        task,
        reserved_tokens=reserved,
        step_token_budget=config.budget.max_tokens_per_step,
    )
    meta = plan_meta(request, reasoning)
    return meta


def _client(
    runtime: Runtime, config: SolveConfig, role: ModelRole, task_run: int, budget: TaskBudget
) -> LoggedLLMClient:
    return LoggedLLMClient(
        runtime.models.client(role),
        runtime.log,
        role=role,
        reserved_tokens=config.budget.reserved_tokens,
        task_run_id=task_run,
        budgets=[budget],
    )


def _finish(
    runtime: Runtime,
    task_run: int,
    status: Literal["complete", "failed", "cancelled"],
    *clients: LoggedLLMClient,
    error: str | None = None,
) -> None:
    usage = clients[0].usage
    for c in clients[1:]:
        usage = usage + c.usage
    runtime.log.finish_task_run(
        task_run, status=status, success=status == "complete", usage=usage, error=error
    )
