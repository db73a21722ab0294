"""solve(): the deterministic pass sequencer: baseline, meta-plan, parts, steps, adjustments."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from agent import git
from agent.config import SolveConfig
from agent.context import ContextFactory, SeededFiles
from agent.errors import AgentError, BudgetExhausted
from agent.execute.decomposed_adjustment import adjust_plan
from agent.execute.parsers import topological_order
from agent.execute.plan import execute_plan
from agent.execute.prompts import PlanPassType, plan_context_room
from agent.llm.budget import TaskBudget
from agent.llm.logged import LoggedLLMClient
from agent.models import (
    AdjustmentRecord,
    ContextPackage,
    MetaPlan,
    MetaPlanPart,
    OrchestratorResult,
    PartPlan,
    PlanAdjustment,
    PlanStep,
    RunEvent,
    RunEventKind,
    StepOutcome,
    Usage,
    ValidationResult,
)
from agent.runtime import Runtime
from agent.steps import RunContext, run_step, task_target_tests
from agent.validation import passes_gate, run_validation
from agent.workspace import Workspace, apply_in_place, close_workspace, open_workspace


class Cancelled(AgentError):
    """The run was cancelled between passes."""


class StopRun(AgentError):
    """The run budget ran out: stop, keeping what was committed."""

    def __init__(self, budget: str, message: str) -> None:
        super().__init__(message)
        self.budget = budget


def solve(
    task: str,
    repo: Path,
    config: SolveConfig,
    runtime: Runtime,
    *,
    context_factory: ContextFactory = SeededFiles,
    in_place: bool = False,
    base: str | None = None,
    branch: str | None = None,
) -> OrchestratorResult:
    """Run the whole orchestrator on `repo` in a worktree — of `base` (default HEAD), on
    `branch` (default a fresh `cra/<slug>`); never raises for a failing pass: the result says
    what passed, what failed and why."""
    config.require_test_command()
    repo = repo.resolve()
    run_id = runtime.new_id()
    seq = _Sequencer(task, run_id, repo, config, runtime, context_factory)
    seq.base, seq.branch = base, branch
    try:
        seq.open()
        seq.run()
    except Cancelled:
        seq.status_note = "cancelled"
    except StopRun as exc:
        seq.budget_exhausted, seq.error = exc.budget, str(exc)
    except AgentError as exc:
        seq.error = str(exc)
    return seq.finish(in_place=in_place)


class _Sequencer:
    """The state of one orchestrator run, advanced pass by pass and persisted after each."""

    def __init__(
        self,
        task: str,
        run_id: str,
        repo: Path,
        config: SolveConfig,
        runtime: Runtime,
        context_factory: ContextFactory,
    ) -> None:
        self.task, self.run_id, self.repo = task, run_id, repo
        self.config, self.runtime, self.log = config, runtime, runtime.log
        self.context_factory = context_factory
        self.started = runtime.clock()
        self.orch_id = self.log.start_orchestrator_run(
            task_id=run_id, repo_path=str(repo), task_description=task
        )
        self.ws: Workspace | None = None
        self.rc: RunContext | None = None
        self.head: str | None = None
        self.base: str | None = None
        self.branch: str | None = None
        self.sequence = 0
        self.cumulative_diff = ""
        self.meta: MetaPlan | None = None
        self.part_plans: list[PartPlan] = []
        self.outcomes: list[StepOutcome] = []
        self.adjustments: list[AdjustmentRecord] = []
        self.parts_failed = 0
        self.parts_completed = 0
        self.error: str | None = None
        self.budget_exhausted: str | None = None
        self.status_note: str | None = None

    # --- setup ---------------------------------------------------------------------------

    def open(self) -> None:
        """Create the worktree, run the baseline, build the run context."""
        self.emit("run_started", message=self.task)
        self.ws = open_workspace(self.repo, work_dir=self.runtime.work_dir, run_id=self.run_id,
                                 branch_hint=self.task, base=self.base, branch=self.branch)
        run_budget = TaskBudget("run", max_tokens=self.config.budget.max_tokens_per_run,
                                max_calls=None, tokens_label="max_tokens_per_run")
        baseline_run = self.open_pass("baseline", "baseline")
        baseline = run_validation(self.ws.worktree, self.config.testing,
                                  environ=self.runtime.environ)
        self.log.record_validation(baseline_run, baseline, attempt_id=None, kind="baseline")
        self.close_pass(baseline_run, "complete")
        context = self.context_factory(self.ws.worktree)
        self.rc = RunContext(self.task, self.run_id, self.runtime, self.config, self.ws,
                             baseline, context, run_budget)
        self.head = self.ws.base

    @property
    def ctx(self) -> RunContext:
        assert self.rc is not None, "open() first"
        return self.rc

    # --- the sequence --------------------------------------------------------------------

    def run(self) -> None:
        """Meta-plan, then every part in dependency order."""
        self.meta = self.meta_plan()
        parts = topological_order(self.meta.parts)
        self.log.update_orchestrator_run(self.orch_id, total_parts=len(parts))
        for index, part in enumerate(parts):
            self.progress(index, 0, "running")
            self.run_part(index, part, last=index == len(parts) - 1)

    def meta_plan(self) -> MetaPlan:
        """The meta-plan pass; a run without one fails."""
        plan = self.plan_pass("meta_plan", "meta_plan", task=self.task, files=())
        assert isinstance(plan, MetaPlan)
        self.log.set_state(self.run_id, "meta_plan", plan)
        return plan

    def run_part(self, index: int, part: MetaPlanPart, *, last: bool) -> None:
        """The part plan, then its steps, each followed by an adjustment."""
        try:
            plan = self.plan_pass("part_plan", f"part_plan:{part.id}", task=part.description,
                                  files=part.affected_files, part_id=part.id)
        except (Cancelled, StopRun):
            raise
        except AgentError as exc:
            self.parts_failed += 1
            self.error = f"part {part.id}: {exc}"
            return
        assert isinstance(plan, PartPlan)
        self.part_plans.append(plan)
        self.log.set_state(self.run_id, f"part_plan:{part.id}", plan)
        self.emit("plan_made", part_id=part.id, message=part.description, steps=plan.steps)
        self.run_steps(index, part, plan, last=last)

    def run_steps(
        self, part_index: int, part: MetaPlanPart, plan: PartPlan, *, last: bool
    ) -> None:
        """Steps in order; the remaining ones replaced by each adjustment. The run's last
        planned step must also make the tests the task names pass."""
        remaining = topological_order(plan.steps)
        done: list[PlanStep] = []
        failed = 0
        limit = self.config.orchestrator.max_steps_per_part
        while remaining and len(done) < limit:
            step = remaining.pop(0)
            self.progress(part_index, len(done), "running")
            finishing = last and not remaining
            outcome = self.step_pass(part, plan, step, finishing=finishing)
            done.append(step)
            failed += outcome.status != "passed"
            if outcome.budget_exhausted == "max_tokens_per_run":
                raise StopRun("max_tokens_per_run", outcome.error or "run budget exhausted")
            remaining = self.adjust(part, step, outcome, remaining, done)
        for step in remaining:
            self.outcomes.append(StepOutcome(
                part_id=part.id, step_id=step.id, description=step.description,
                status="skipped", error=f"over orchestrator.max_steps_per_part ({limit})",
            ))
        clean = failed == 0 and not remaining
        self.parts_completed += int(clean)
        self.parts_failed += int(not clean)

    def step_pass(
        self, part: MetaPlanPart, plan: PartPlan, step: PlanStep, *, finishing: bool
    ) -> StepOutcome:
        """One step as a pass of its own: its task run, attempts, commit, state."""
        self.check_cancel()
        task_run = self.open_pass("implement", f"impl:{part.id}:{step.id}", part.id, step.id)
        targets = task_target_tests(self.ctx.baseline, self.task) if finishing else []
        outcome = run_step(self.ctx, step, part_id=part.id, plan=plan,
                           cumulative_diff=self.cumulative_diff, task_run_id=task_run,
                           extra_targets=targets, base=self.head)
        self.outcomes.append(outcome)
        if outcome.status == "passed" and outcome.commit:
            self.head = outcome.commit
            self.ctx.context.refresh()
            self.cumulative_diff += outcome.diff
            self.log.set_state(self.run_id, "cumulative_diff", self.cumulative_diff)
        self.log.set_state(self.run_id, f"step_result:{part.id}:{step.id}", outcome)
        self.close_pass(task_run, "complete" if outcome.status == "passed" else "failed",
                        usage=outcome.usage, error=outcome.error, diff=outcome.diff)
        kind: RunEventKind = "step_passed" if outcome.status == "passed" else "step_failed"
        self.emit(kind, part_id=part.id, step_id=step.id, message=step.description,
                  status=outcome.status)
        self.log.update_orchestrator_run(self.orch_id, steps_completed=self.steps_passed)
        return outcome

    # --- adjustment ----------------------------------------------------------------------

    def adjust(
        self,
        part: MetaPlanPart,
        step: PlanStep,
        outcome: StepOutcome,
        remaining: list[PlanStep],
        done: list[PlanStep],
    ) -> list[PlanStep]:
        """The adjustment pass after a step; on failure the remaining steps stay as they were.
        `orchestrator.max_adjustment_rounds = 0` turns adjustments off."""
        if self.config.orchestrator.max_adjustment_rounds == 0:
            return remaining
        self.check_cancel()
        mode: Literal["monolithic", "decomposed"] = (
            "decomposed" if self.config.orchestrator.decomposed_adjustment else "monolithic"
        )
        key = f"adjust:{part.id}:after_{step.id}"
        task_run = self.open_pass("adjustment", key, part.id, step.id)
        record = AdjustmentRecord(part_id=part.id, after_step=step.id, mode=mode)
        clients: list[LoggedLLMClient] = []
        try:
            record = self.run_adjustment(record, part, outcome, remaining, done, task_run, clients)
        except BudgetExhausted as exc:
            self.close_pass(task_run, "failed", error=str(exc),
                            usage=self.ctx.account(*clients))
            raise StopRun(exc.budget, str(exc)) from exc
        except AgentError as exc:
            record = record.model_copy(update={"error": f"{type(exc).__name__}: {exc}"})
        self.adjustments.append(record)
        self.log.set_state(self.run_id, f"adjustment:{part.id}:after_{step.id}", record)
        self.close_pass(task_run, "failed" if record.error else "complete",
                        usage=self.ctx.account(*clients), error=record.error)
        if record.adjustment is None:
            return remaining
        remaining = _splice(record.adjustment.revised_steps, done)
        self.emit("adjustment_made", part_id=part.id, step_id=step.id,
                  message=record.adjustment.rationale, steps=remaining)
        return remaining

    def run_adjustment(
        self,
        record: AdjustmentRecord,
        part: MetaPlanPart,
        outcome: StepOutcome,
        remaining: list[PlanStep],
        done: list[PlanStep],
        task_run: int,
        clients: list[LoggedLLMClient],
    ) -> AdjustmentRecord:
        """Monolithic (one reasoning call) or decomposed (yes/no stages + finalize)."""
        files = [f for s in [*remaining, *done[-1:]] for f in s.target_files]
        failure = outcome.validation.test_output if outcome.validation else outcome.error
        reasoning = self.ctx.client("reasoning", task_run_id=task_run)
        clients.append(reasoning)
        context = self.context_for(reasoning, task_run, clients, task=part.description,
                                   files=files, failure=failure, pass_type="adjustment")
        classifier = self.ctx.client("classifier", task_run_id=task_run)
        clients.append(classifier)
        adjustment, verdicts = adjust_plan(
            context, part.description, config=self.config, classifier=classifier,
            reasoning=reasoning, prior_results=[outcome.as_step_result()],
            remaining_steps=remaining, completed_steps=done,
            test_results=[outcome.validation] if outcome.validation else [],
            cumulative_diff=self.cumulative_diff or None,
        )
        return record.model_copy(update={"adjustment": adjustment, "verdicts": verdicts})

    # --- planning passes -----------------------------------------------------------------

    def plan_pass(
        self,
        pass_type: PlanPassType,
        key: str,
        *,
        task: str,
        files: Sequence[str],
        part_id: str | None = None,
    ) -> MetaPlan | PartPlan | PlanAdjustment:
        """A meta-plan or part-plan pass with its own task run and fresh context."""
        self.check_cancel()
        task_run = self.open_pass(pass_type, key, part_id)
        reasoning = self.ctx.client("reasoning", task_run_id=task_run)
        clients = [reasoning]
        try:
            context = self.context_for(reasoning, task_run, clients, task=task, files=files,
                                       failure=None, pass_type=pass_type)
            plan = execute_plan(
                context, task, reasoning, pass_type=pass_type,
                reserved_tokens=self.config.budget.reserved_tokens,
                step_token_budget=self.config.budget.max_tokens_per_step,
                cumulative_diff=self.cumulative_diff or None,
                expected_part_id=part_id,
            )
        except BudgetExhausted as exc:
            self.close_pass(task_run, "failed", usage=self.ctx.account(*clients), error=str(exc))
            raise StopRun(exc.budget, str(exc)) from exc
        except AgentError as exc:
            self.close_pass(task_run, "failed", usage=self.ctx.account(*clients),
                            error=f"{type(exc).__name__}: {exc}")
            raise
        self.close_pass(task_run, "complete", usage=self.ctx.account(*clients))
        return plan

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
            classifier = self.ctx.client("classifier", task_run_id=task_run)
            clients.append(classifier)
        return self.ctx.context.gather(
            task, mode="plan", files=files, failure=failure, classifier=classifier,
            budget_tokens=self.plan_context_budget(reasoning, task, pass_type),
        )

    def plan_context_budget(
        self, reasoning: LoggedLLMClient, task: str, pass_type: PlanPassType
    ) -> int:
        """What this planner pass may spend on context files."""
        return plan_context_room(
            task, pass_type=pass_type, model=reasoning.config,
            reserved_tokens=self.config.budget.reserved_tokens,
            step_token_budget=self.config.budget.max_tokens_per_step,
        )

    # --- records, events, state ----------------------------------------------------------

    def open_pass(
        self, pass_type: str, key: str, part_id: str | None = None, step_id: str | None = None
    ) -> int:
        """A task run for one pass, linked to the orchestrator run in sequence."""
        self.emit("pass_started", pass_type=pass_type, part_id=part_id, step_id=step_id)
        task_run = self.log.start_task_run(
            task_id=f"{self.run_id}:{key}", repo_path=str(self.repo),
            task_description=self.task, mode=pass_type,
        )
        self.sequence += 1
        self.log.record_pass(orchestrator_run_id=self.orch_id, task_run_id=task_run,
                             pass_type=pass_type, sequence_order=self.sequence,
                             part_id=part_id, step_id=step_id)
        return task_run

    def close_pass(
        self,
        task_run: int,
        status: Literal["complete", "failed"],
        *,
        usage: Usage | None = None,
        error: str | None = None,
        diff: str = "",
    ) -> None:
        """Finish a pass's task run and tell the observer."""
        self.log.finish_task_run(task_run, status=status, success=status == "complete",
                                 usage=usage or Usage(), final_diff=diff or None, error=error)
        self.emit("pass_finished", status=status, message=error or "")

    def emit(
        self, kind: RunEventKind, *, steps: Sequence[PlanStep] = (), **fields: str | None
    ) -> None:
        """Send one event to the observer."""
        event = RunEvent(kind=kind, run_id=self.run_id, steps=list(steps), **fields)
        self.runtime.observer.on_event(event)

    def check_cancel(self) -> None:
        """Raise Cancelled when the caller asked to stop (checked between passes)."""
        if self.runtime.should_cancel():
            raise Cancelled("cancelled")

    def progress(self, part_index: int, step_index: int, status: str) -> None:
        """Persist where the run is."""
        self.log.set_state(self.run_id, "orchestrator_progress", {
            "current_part_index": part_index, "current_step_index": step_index,
            "status": status,
        })

    @property
    def steps_passed(self) -> int:
        return sum(o.status == "passed" for o in self.outcomes)

    # --- the end -------------------------------------------------------------------------

    def finish(self, *, in_place: bool) -> OrchestratorResult:
        """Judge the run, record its end, hand back the branch (or apply in place)."""
        result = self.result()
        keep_branch = result.commit is not None
        if self.ws is not None and in_place and keep_branch:
            error = apply_in_place(self.ws, result.diff)
            keep_branch = error is not None
            result = result.model_copy(update={"error": error or result.error})
        if not keep_branch:
            result = result.model_copy(update={"branch": None})
        self.progress(-1, -1, result.status)
        self.log.update_orchestrator_run(
            self.orch_id, status=result.status, parts_completed=result.parts_completed,
            steps_completed=result.steps_completed, total_steps=len(self.outcomes),
            completed=True,
        )
        if self.rc is not None:
            self.rc.context.close()
        if self.ws is not None:
            close_workspace(self.ws, keep_branch=keep_branch)
        self.emit("run_finished", status=result.status, message=result.error or "")
        return result

    def result(self) -> OrchestratorResult:
        """The OrchestratorResult of the run as it stands."""
        ws, rc = self.ws, self.rc
        head = git.head_commit(ws.worktree) if ws is not None and ws.worktree.exists() else None
        commit = head if ws is not None and head != ws.base else None
        diff = git.diff(ws.worktree, ws.base, commit) if ws is not None and commit else ""
        stats = git.diff_stats(ws.worktree, ws.base, commit) if ws and commit else None
        final = next((o.validation for o in reversed(self.outcomes)
                      if o.status == "passed"), rc.baseline if rc else None)
        return OrchestratorResult(
            task_id=self.run_id, status=self.judge(final), orchestrator_run_id=self.orch_id,
            branch=ws.branch if ws is not None and commit else None,
            base_commit=ws.base if ws is not None else None, commit=commit, diff=diff,
            files_changed=stats.files if stats else [], baseline=rc.baseline if rc else None,
            final_validation=final, meta_plan=self.meta, part_plans=self.part_plans,
            steps=self.outcomes, adjustments=self.adjustments,
            parts_completed=self.parts_completed, steps_completed=self.steps_passed,
            steps_failed=sum(o.status != "passed" for o in self.outcomes),
            usage=rc.usage if rc else Usage(), usage_by_role=rc.usage_by_role if rc else {},
            budget_exhausted=self.budget_exhausted, error=self.error or self.unmet_targets(final),
            wall_ms=int((self.runtime.clock() - self.started) * 1000),
        )

    def judge(
        self, final: ValidationResult | None
    ) -> Literal["complete", "partial", "failed", "cancelled"]:
        """complete: every step passed and the task's named tests pass; partial: some did."""
        if self.status_note == "cancelled":
            return "cancelled"
        if self.steps_passed == 0:
            return "failed"
        clean = (self.parts_failed == 0 and not self.budget_exhausted
                 and self.steps_passed == len(self.outcomes) and self.error is None)
        return "complete" if clean and not self.unmet_targets(final) else "partial"

    def unmet_targets(self, final: ValidationResult | None) -> str | None:
        """The task's named failing tests that still fail at the end, as an error text."""
        rc = self.rc
        if rc is None or final is None or not self.outcomes:
            return None
        targets = task_target_tests(rc.baseline, self.task)
        if not targets or passes_gate(rc.baseline, final, target_tests=targets):
            return None
        return "the tests the task names still fail: " + ", ".join(targets)


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
