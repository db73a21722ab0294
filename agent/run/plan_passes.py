"""The planning passes of a run: meta-plan, part plan and the adjustment after each step.

Each is a pass of its own, with its own task run and a freshly retrieved context package.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from agent.errors import AgentError, BudgetExhausted, StopRun
from agent.execute.parsers import topological_order
from agent.execute.plan import execute_plan
from agent.execute.plan_material import plan_context_room
from agent.execute.prompts import PlanPassType
from agent.llm.logged import LoggedLLMClient
from agent.models import (
    AdjustmentRecord,
    ContextPackage,
    MetaPlan,
    MetaPlanPart,
    PartPlan,
    PlanAdjustment,
    PlanStep,
    StepOutcome,
)
from agent.run.context import RunContext
from agent.run.passes import PassRecorder


class PlanPasses:
    """The reasoning passes of one run, recorded by its PassRecorder."""

    def __init__(self, rc: RunContext, passes: PassRecorder) -> None:
        self.rc, self.passes, self.config = rc, passes, rc.config

    def plan(
        self,
        pass_type: PlanPassType,
        key: str,
        *,
        task: str,
        files: Sequence[str],
        cumulative_diff: str,
        part_id: str | None = None,
    ) -> MetaPlan | PartPlan | PlanAdjustment:
        """A meta-plan or part-plan pass with its own task run and fresh context."""
        self.passes.check_cancel()
        task_run = self.passes.open_pass(pass_type, key, part_id)
        reasoning = self.rc.client("reasoning", task_run_id=task_run)
        clients = [reasoning]
        try:
            context = self.context_for(
                reasoning,
                task_run,
                clients,
                task=task,
                files=files,
                failure=None,
                pass_type=pass_type,
            )
            plan = execute_plan(
                context,
                task,
                reasoning,
                pass_type=pass_type,
                reserved_tokens=self.config.budget.reserved_tokens,
                step_token_budget=self.config.budget.max_tokens_per_step,
                cumulative_diff=cumulative_diff or None,
                expected_part_id=part_id,
                max_group_steps=self.config.orchestrator.max_group_steps,
            )
        except BudgetExhausted as exc:
            self.passes.close_pass(
                task_run, "failed", usage=self.rc.account(*clients), error=str(exc)
            )
            raise StopRun(exc.budget, str(exc)) from exc
        except AgentError as exc:
            self.passes.close_pass(
                task_run,
                "failed",
                usage=self.rc.account(*clients),
                error=f"{type(exc).__name__}: {exc}",
            )
            raise
        self.passes.close_pass(task_run, "complete", usage=self.rc.account(*clients))
        return plan

    def adjust(
        self,
        part: MetaPlanPart,
        step: PlanStep,
        outcome: StepOutcome,
        remaining: list[PlanStep],
        done: list[PlanStep],
        *,
        cumulative_diff: str,
    ) -> tuple[AdjustmentRecord | None, list[PlanStep]]:
        """The adjustment pass after a step: its record (None when adjustments are off) and
        the new remaining steps; on failure the remaining steps stay as they were.
        `orchestrator.max_adjustment_rounds = 0` turns adjustments off."""
        if self.config.orchestrator.max_adjustment_rounds == 0:
            return None, remaining
        self.passes.check_cancel()
        mode: Literal["monolithic", "decomposed"] = (
            "decomposed" if self.config.orchestrator.decomposed_adjustment else "monolithic"
        )
        key = f"adjust:{part.id}:after_{step.id}"
        task_run = self.passes.open_pass("adjustment", key, part.id, step.id)
        record = AdjustmentRecord(part_id=part.id, after_step=step.id, mode=mode)
        clients: list[LoggedLLMClient] = []
        try:
            record = self.run_adjustment(
                record,
                part,
                outcome,
                remaining,
                done,
                task_run,
                clients,
                cumulative_diff=cumulative_diff,
            )
        except BudgetExhausted as exc:
            self.passes.close_pass(
                task_run, "failed", error=str(exc), usage=self.rc.account(*clients)
            )
            raise StopRun(exc.budget, str(exc)) from exc
        except AgentError as exc:
            record = record.model_copy(update={"error": f"{type(exc).__name__}: {exc}"})
        self.passes.close_pass(
            task_run,
            "failed" if record.error else "complete",
            usage=self.rc.account(*clients),
            error=record.error,
            states={f"adjustment:{part.id}:after_{step.id}": record},
        )
        if record.adjustment is None:
            return record, remaining
        remaining = _splice(record.adjustment.revised_steps, done)
        self.passes.emit(
            "adjustment_made",
            part_id=part.id,
            step_id=step.id,
            message=record.adjustment.rationale,
            steps=remaining,
        )
        return record, remaining

    def run_adjustment(
        self,
        record: AdjustmentRecord,
        part: MetaPlanPart,
        outcome: StepOutcome,
        remaining: list[PlanStep],
        done: list[PlanStep],
        task_run: int,
        clients: list[LoggedLLMClient],
        *,
        cumulative_diff: str,
    ) -> AdjustmentRecord:
        """Monolithic (one reasoning call) or decomposed (yes/no stages + finalize)."""
        files = [f for s in [*remaining, *done[-1:]] for f in s.target_files]
        failure = outcome.validation.test_output if outcome.validation else outcome.error
        reasoning = self.rc.client("reasoning", task_run_id=task_run)
        clients.append(reasoning)
        context = self.context_for(
            reasoning,
            task_run,
            clients,
            task=part.description,
            files=files,
            failure=failure,
            pass_type="adjustment",
        )
        classifier = self.rc.client("classifier", task_run_id=task_run)
        clients.append(classifier)
        from agent.execute.decomposed_adjustment import adjust_plan  # not before a first call

        adjustment, verdicts = adjust_plan(
            context,
            part.description,
            config=self.config,
            classifier=classifier,
            reasoning=reasoning,
            prior_results=[outcome.as_step_result()],
            remaining_steps=remaining,
            completed_steps=done,
            test_results=[outcome.validation] if outcome.validation else [],
            cumulative_diff=cumulative_diff or None,
        )
        return record.model_copy(update={"adjustment": adjustment, "verdicts": verdicts})

    def context_for(
        self,
        reasoning: LoggedLLMClient,
        task_run: int,
        clients: list[LoggedLLMClient],
        *,
        task: str,
        files: Sequence[str],
        failure: str | None,
        pass_type: PlanPassType,
    ) -> ContextPackage:
        """A fresh package for a planning pass, sized to the reasoning window."""
        classifier = None
        if self.config.retrieval.stages:
            classifier = self.rc.client("classifier", task_run_id=task_run)
            clients.append(classifier)
        return self.rc.context.gather(
            task,
            mode="plan",
            files=files,
            failure=failure,
            classifier=classifier,
            budget_tokens=self.plan_context_budget(reasoning, task, pass_type),
        )

    def plan_context_budget(
        self, reasoning: LoggedLLMClient, task: str, pass_type: PlanPassType
    ) -> int:
        """What this planner pass may spend on context files: what it needs (outlines of the
        files it plans over, retrieval.plan_context_tokens), never more than the window's room."""
        room = plan_context_room(
            task,
            pass_type=pass_type,
            model=reasoning.config,
            reserved_tokens=self.config.budget.reserved_tokens,
            step_token_budget=self.config.budget.max_tokens_per_step,
        )
        return min(room, self.config.retrieval.plan_context_tokens)


def _splice(revised: Sequence[PlanStep], done: Sequence[PlanStep]) -> list[PlanStep]:
    """The new remaining steps: ids of steps already run are renamed, never re-run."""
    used = {s.id for s in done}
    steps: list[PlanStep] = []
    for step in revised:
        new_id, n = step.id, 1
        while new_id in used:
            n += 1
            new_id = f"{step.id}-r{n}"
        used.add(new_id)
        steps.append(step.model_copy(update={"id": new_id}))
    return topological_order(steps)
