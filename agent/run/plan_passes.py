"""The planning passes of a run: meta-plan, part plan and the adjustment after each step, and
the part planned again when what its steps met shows its plan wrong (`replan`).

Each is a pass of its own, with its own task run and a freshly retrieved context package.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agent.errors import AgentError, BudgetExhausted
from agent.execute.parsers import topological_order
from agent.execute.plan import plan_meta, plan_part
from agent.execute.plan_material import PlanMaterial, PlanRequest, plan_context_room
from agent.execute.plan_rules import replan_evidence
from agent.execute.prompts import PlanPassType
from agent.llm.logged import LoggedLLMClient
from agent.models import (
    AdjustmentRecord,
    ContextPackage,
    MetaPlan,
    MetaPlanPart,
    PartPlan,
    PlanStep,
    StepOutcome,
    StepResult,
)
from agent.run.context import RunContext
from agent.run.passes import OpenPass, PassRecorder
from agent.run.sources import mentioned_paths

REPLAN_NOTE = (
    "A plan of this part failed: {why}. Plan the part again, with steps that change the code "
    "the failure runs through."
)


@dataclass(frozen=True)
class Replan:
    """What showed a part's plan wrong: why (plan_rules.replan_evidence), and the failure
    output the new plan's context is seeded with."""

    why: str
    failure: str

    @property
    def said(self) -> str:
        """Why the part was planned again, as the run says it."""
        return f"planned again: {self.why}"

    def as_result(self) -> StepResult:
        """The failed plan as the new plan's planner is shown it: a failed step result, why
        last (a planner is shown the end of a long failure)."""
        note = REPLAN_NOTE.format(why=self.why)
        return StepResult(success=False, error_info=f"{self.failure}\n{note}".strip())


class PlanPasses:
    """The reasoning passes of one run, recorded by its PassRecorder."""

    def __init__(self, run_context: RunContext, passes: PassRecorder) -> None:
        self.run_context, self.passes, self.config = run_context, passes, run_context.config

    def meta_plan(self, task: str, *, cumulative_diff: str) -> MetaPlan:
        """The meta-plan pass, with its own task run and fresh context."""
        with self.passes.run_pass(self.run_context, "meta_plan", "meta_plan") as current:
            reasoning = current.client("reasoning")
            room = self.plan_room(reasoning, "meta_plan", task)
            context = self.context_for(current, room, task=task, files=())
            request = self.request(context, task, PlanMaterial(cumulative_diff or None))
            return plan_meta(request, reasoning)

    def part_plan(
        self, part: MetaPlanPart, *, cumulative_diff: str, replan: Replan | None = None
    ) -> PartPlan:
        """A part-plan pass, with its own task run and fresh context; with `replan`, the part
        planned again, shown why its plan failed, its context seeded with the failure and
        retrieved for the run's task too (the part's description came from the plan that was
        wrong about where the change goes)."""
        key = f"part_plan:{part.id}" + (":again" if replan else "")
        with self.passes.run_pass(self.run_context, "part_plan", key, part.id) as current:
            reasoning = current.client("reasoning")
            task, files = part.description, part.affected_files
            failure = replan.failure if replan else None
            query = f"{self.run_context.task}\n\n{task}" if replan else task
            room = self.plan_room(reasoning, "part_plan", task)
            context = self.context_for(current, room, task=query, files=files, failure=failure)
            results = [replan.as_result()] if replan else []
            material = PlanMaterial(cumulative_diff or None, prior_results=results)
            request = self.request(context, task, material, part_id=part.id)
            plan = plan_part(request, reasoning, again=replan is not None)
        if replan is None:
            return plan
        # the pull request carries why the part was planned again, with the plan
        return plan.model_copy(update={"rationale": f"{plan.rationale}\n(cra: {replan.said})"})

    def replan(self, plan: PartPlan, outcomes: Sequence[StepOutcome]) -> Replan | None:
        """Why the part's plan was wrong, when its steps' outcomes (all failed) and the
        failure show it (plan_rules.replan_evidence); None otherwise. The failure: the last
        failed test run's output, else the reproduction's failure on the base commit."""
        found = self.run_context.reproduction
        runs = [o.validation.test_output for o in outcomes if o.validation is not None]
        failure = next((t for t in reversed(runs) if t), "") or (found.before if found else "")
        reached = mentioned_paths(self.run_context.workspace.worktree, failure)
        why = replan_evidence(plan.steps, outcomes, reached)
        return Replan(why, failure) if why else None

    def request(
        self,
        context: ContextPackage,
        task: str,
        material: PlanMaterial,
        *,
        part_id: str | None = None,
    ) -> PlanRequest:
        """What a planner pass of this run is asked, within the run's budgets."""
        return PlanRequest(
            context,
            task,
            reserved_tokens=self.config.budget.reserved_tokens,
            step_token_budget=self.config.budget.max_tokens_per_step,
            max_group_steps=self.config.orchestrator.max_group_steps,
            material=material,
            expected_part_id=part_id,
        )

    def adjust(
        self,
        part: MetaPlanPart,
        outcome: StepOutcome,
        remaining: list[PlanStep],
        done: list[PlanStep],
        cumulative_diff: str,
        *,
        again: str = "",
    ) -> tuple[AdjustmentRecord | None, list[PlanStep]]:
        """The adjustment pass after a step (or a group: `outcome` is the one it landed as):
        its record (None when adjustments are off) and the new remaining steps; on failure the
        remaining steps stay as they were. `orchestrator.max_adjustment_rounds = 0` turns
        adjustments off. `again` names a plan made again (its adjustments' passes)."""
        if self.config.orchestrator.max_adjustment_rounds == 0:
            return None, remaining
        after = outcome.step_id
        mode: Literal["monolithic", "decomposed"] = (
            "decomposed" if self.config.orchestrator.decomposed_adjustment else "monolithic"
        )
        material = PlanMaterial(
            cumulative_diff or None,
            prior_results=[outcome.as_step_result()],
            test_results=[outcome.validation] if outcome.validation else [],
            remaining_steps=remaining,
            completed_steps=done,
        )
        key = f"adjust:{part.id}:after_{after}" + (f":{again}" if again else "")
        with self.passes.run_pass(self.run_context, "adjustment", key, part.id, after) as current:
            record = AdjustmentRecord(part_id=part.id, after_step=after, mode=mode)
            try:
                record = self.run_adjustment(record, part, outcome, material, current)
            except BudgetExhausted:
                raise  # the run's budget: the pass closes failed and the run stops
            except AgentError as exc:
                record = record.model_copy(update={"error": f"{type(exc).__name__}: {exc}"})
            states = {f"adjustment:{part.id}:after_{after}": record}
            ended = current.ended(
                "failed" if record.error else "complete", error=record.error, states=states
            )
            current.end = ended
        if record.adjustment is None:
            return record, remaining
        remaining = _splice(record.adjustment.revised_steps, done)
        self.passes.emit(
            "adjustment_made",
            part_id=part.id,
            step_id=after,
            message=record.adjustment.rationale,
            steps=remaining,
        )
        return record, remaining

    def run_adjustment(
        self,
        record: AdjustmentRecord,
        part: MetaPlanPart,
        outcome: StepOutcome,
        material: PlanMaterial,
        current: OpenPass,
    ) -> AdjustmentRecord:
        """Monolithic (one reasoning call) or decomposed (yes/no stages + finalize)."""
        steps = [*material.remaining_steps, *material.completed_steps[-1:]]
        files = [f for s in steps for f in s.target_files]
        failure = outcome.validation.test_output if outcome.validation else outcome.error
        reasoning = current.client("reasoning")
        room = self.plan_room(reasoning, "adjustment", part.description)
        context = self.context_for(
            current, room, task=part.description, files=files, failure=failure
        )
        classifier = current.client("classifier")
        from agent.execute.decomposed_adjustment import adjust_plan  # not before a first call

        adjustment, verdicts = adjust_plan(
            self.request(context, part.description, material),
            decomposed=self.config.orchestrator.decomposed_adjustment,
            classifier=classifier,
            reasoning=reasoning,
        )
        return record.model_copy(update={"adjustment": adjustment, "verdicts": verdicts})

    def context_for(
        self,
        current: OpenPass,
        budget_tokens: int,
        *,
        task: str,
        files: Sequence[str],
        failure: str | None = None,
    ) -> ContextPackage:
        """A fresh package for a planning pass, within `budget_tokens` (plan_room), seeded
        with the run's reproduction too (RunContext.reproduced)."""
        classifier = current.client("classifier") if self.config.retrieval.stages else None
        files, failure = self.run_context.reproduced(files, failure)
        return self.run_context.context.gather(
            task,
            mode="plan",
            files=files,
            failure=failure,
            classifier=classifier,
            budget_tokens=budget_tokens,
        )

    def plan_room(self, reasoning: LoggedLLMClient, pass_type: PlanPassType, task: str) -> int:
        """What a planner pass may spend on context files: what it needs (outlines of the
        files it plans over, retrieval.plan_context_tokens), never more than the window's
        room."""
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
