"""solve(): the deterministic pass sequencer: baseline, meta-plan, parts, steps, adjustments."""

from __future__ import annotations

from pathlib import Path

from agent.config.files import SolveConfig
from agent.errors import AgentError, Cancelled, Interrupted, SetupFailed, StopRun
from agent.execute.grouping import blocked_group, group_id, landing_order, pop_unit
from agent.execute.parsers import topological_order
from agent.git import repo as git
from agent.git.workspace import Workspace, apply_in_place, close_workspace, open_workspace
from agent.models import (
    EnvironmentReport,
    MetaPlan,
    MetaPlanPart,
    OrchestratorResult,
    PartPlan,
    PlanStep,
    RunEventKind,
    StepOutcome,
)
from agent.run.context import RunContext, StepRequest, run_budget
from agent.run.environment import Environment, open_environment, run_baseline
from agent.run.landing.loop import land
from agent.run.landing.outcome import Landing
from agent.run.passes import PassEnd, PassRecorder
from agent.run.plan_passes import PlanPasses, Replan
from agent.run.reproduction import Reproduced, reproduce
from agent.run.result import Tally, run_result
from agent.run.rewrite import rewrite_reproduction
from agent.run.runtime import Runtime
from agent.run.sources import ContextFactory, SeededFiles


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
    sequencer = _Sequencer(task, repo, config, runtime, context_factory)
    sequencer.base, sequencer.branch = base, branch
    try:
        sequencer.open()
        sequencer.run()
    except Cancelled:
        sequencer.tally.status_note = "cancelled"
    except Interrupted as exc:  # SIGINT or SIGTERM to `cra`: end the run cleanly, then say so
        sequencer.tally.status_note = "cancelled"
        sequencer.tally.error = f"interrupted by {exc.name}"
    except StopRun as exc:
        sequencer.tally.budget_exhausted, sequencer.tally.error = exc.budget, str(exc)
    except AgentError as exc:
        sequencer.tally.error = str(exc)
    return sequencer.finish(in_place=in_place)


class _Sequencer:
    """The state of one orchestrator run, advanced pass by pass and persisted after each."""

    def __init__(
        self,
        task: str,
        repo: Path,
        config: SolveConfig,
        runtime: Runtime,
        context_factory: ContextFactory,
    ) -> None:
        self.task, self.task_id, self.repo = task, runtime.new_id(), repo
        self.config, self.runtime, self.log = config, runtime, runtime.log
        self.context_factory = context_factory
        self.started = runtime.clock()
        self.passes = PassRecorder(task, self.task_id, repo, runtime)
        self.workspace: Workspace | None = None
        self.env: Environment | None = None  # the run's environment directory, once set up
        self.env_report = EnvironmentReport(
            sandbox=runtime.sandbox.name, isolated=runtime.sandbox.isolated
        )
        self.run_context: RunContext | None = None
        self.planner: PlanPasses | None = None
        self.head: str | None = None
        self.base: str | None = None
        self.branch: str | None = None
        self.cumulative_diff = ""
        self.tally = Tally()

    # --- setup ---------------------------------------------------------------------------

    def open(self) -> None:
        """Create the worktree, run the baseline, build the run context."""
        self.passes.emit("run_started", message=self.task)
        self.workspace = open_workspace(
            self.repo,
            work_dir=self.runtime.work_dir,
            run_id=self.task_id,
            branch_hint=self.task,
            base=self.base,
            branch=self.branch,
        )
        baseline_run = self.passes.open_pass(
            "baseline", "baseline", config_json=self.config.model_dump_json()
        )
        try:
            self.runtime, self.env = open_environment(
                self.runtime,
                self.workspace,
                self.config.testing,
                task_id=self.task_id,
                task_run_id=baseline_run,
            )
        except SetupFailed as exc:
            self.env_report = exc.report
            self.passes.close_pass(baseline_run, PassEnd("failed"))
            raise
        baseline = run_baseline(
            self.runtime, self.workspace, self.config.testing, task_run_id=baseline_run
        )
        self.passes.close_pass(baseline_run, PassEnd("complete"))
        context = self.context_factory(self.workspace.worktree)
        self.run_context = RunContext(
            self.task,
            self.task_id,
            self.runtime,
            self.config,
            self.workspace,
            baseline,
            context,
            run_budget(self.config),
        )
        self.planner = PlanPasses(self.run_context, self.passes)
        self.head = self.workspace.base

    def reproduce(self) -> None:
        """The reproduction pass: its test, once written, is committed as the run's first
        change, its run on the base commit the run's baseline, its tests the run's goal."""
        self.adopt(reproduce(self.ctx, self.passes))

    def rewrite(self, outcome: StepOutcome) -> int:
        """After the run's last step failed only on the reproduction: the test judged and, when
        wrong, written again with the passed steps carried onto it (agent.run.rewrite); the
        run's rewrites so far, 0 when the test stands."""
        assert self.head is not None
        done = rewrite_reproduction(self.ctx, self.passes, outcome, head=self.head)
        if done is None:
            return 0
        self.adopt(done)
        return len(done.reproduction.rewritten)

    def adopt(self, done: Reproduced) -> None:
        """The run's reproduction and, once one is committed, its gate: the base commit's run
        with it the baseline, the branch's head and the accepted state where `done` leaves
        them."""
        found = self.ctx.reproduction = done.reproduction
        if done.baseline is not None and done.head is not None:
            assert self.workspace is not None
            self.ctx.baseline, self.ctx.reference = done.baseline, done.reference or done.baseline
            self.head = done.head
            self.ctx.context.refresh()
            self.cumulative_diff = git.diff(self.workspace.worktree, self.workspace.base, self.head)
        self.log.set_state(self.task_id, "reproduction", found)
        said = found.why if found.status == "none" else ", ".join(found.tests)
        self.passes.emit("reproduced", status=found.status, message=said)

    @property
    def ctx(self) -> RunContext:
        assert self.run_context is not None, "open() first"
        return self.run_context

    @property
    def plans(self) -> PlanPasses:
        assert self.planner is not None, "open() first"
        return self.planner

    # --- the sequence --------------------------------------------------------------------

    def run(self) -> None:
        """The reproduction, the meta-plan, then every part in dependency order."""
        self.reproduce()
        self.tally.meta = self.meta_plan()
        parts = topological_order(self.tally.meta.parts)
        self.log.update_orchestrator_run(self.passes.orchestrator_run_id, total_parts=len(parts))
        unfinished: set[str] = set()
        for index, part in enumerate(parts):
            if blockers := [dep for dep in part.depends_on if dep in unfinished]:
                # its plan would be made against code the part it needs never delivered
                unfinished.add(part.id)
                why = self.tally.part_skipped(part.id, blockers)
                self.log.set_state(self.task_id, f"part_skipped:{part.id}", {"reason": why})
                continue
            self.passes.progress(index, 0, "running")
            failed_before = self.tally.parts_failed
            self.run_part(index, part, last=index == len(parts) - 1)
            if self.tally.parts_failed > failed_before:
                unfinished.add(part.id)

    def meta_plan(self) -> MetaPlan:
        """The meta-plan pass; a run without one fails."""
        plan = self.plans.meta_plan(self.task, cumulative_diff=self.cumulative_diff)
        self.log.set_state(self.task_id, "meta_plan", plan)
        return plan

    def run_part(self, index: int, part: MetaPlanPart, *, last: bool) -> None:
        """The part plan, then its steps, each followed by an adjustment. When every step
        failed, nothing landed, and what they met shows the plan wrong (PlanPasses.replan),
        the part is planned again with that evidence, up to orchestrator.max_replans times;
        the failed plan's steps leave the tally (the run log keeps them)."""
        replan: Replan | None = None
        limit = self.config.orchestrator.max_replans
        for again in range(limit + 1):
            try:
                plan = self.plans.part_plan(
                    part, cumulative_diff=self.cumulative_diff, replan=replan
                )
            except AgentError as exc:
                self.tally.parts_failed += 1
                self.tally.error = f"part {part.id}: {exc}"
                return
            self.tally.part_plans.append(plan)
            self.log.set_state(self.task_id, f"part_plan:{part.id}", plan)
            message = replan.said if replan else part.description
            self.passes.emit("plan_made", part_id=part.id, message=message, steps=plan.steps)
            start, failed = self.head, self.tally.parts_failed
            self.run_steps(index, part, plan, last=last, again=f"replan{again}" if again else "")
            mine = [o for o in self.tally.outcomes if o.part_id == part.id]
            ended = self.tally.parts_failed == failed or self.head != start or again == limit
            if ended or (replan := self.plans.replan(plan, mine)) is None:
                return
            self.tally.replanned(part.id, plan)

    def run_steps(
        self, part_index: int, part: MetaPlanPart, plan: PartPlan, *, last: bool, again: str = ""
    ) -> None:
        """Steps in order, each group of steps that land together as one; the remaining ones
        replaced by each adjustment (none after the part's last step passed: nothing is left
        to revise). The run's last planned step (or group) must also make the tests the task
        names pass. `again` names a plan made again (its landings' passes)."""
        remaining = landing_order(plan.steps)
        done: list[PlanStep] = []
        failed = 0
        not_passed: set[str] = set()
        limit = self.config.orchestrator.max_steps_per_part
        while remaining and len(done) < limit:
            unit = pop_unit(remaining)
            if blockers := blocked_group(unit, not_passed):
                for step in unit:
                    self.skip(part, step, blockers)
                failed += len(unit)
                not_passed.update(s.id for s in unit)
                continue
            self.passes.progress(part_index, len(done), "running")
            finishing = last and not remaining
            outcome = self.land_pass(part, plan, unit, finishing=finishing, again=again)
            if finishing and outcome.status != "passed" and (rewrites := self.rewrite(outcome)):
                self.tally.forget(part.id, unit)  # superseded: landed again on the new test
                anew = f"{again}rewrite{rewrites}"
                outcome = self.land_pass(part, plan, unit, finishing=True, again=anew)
            done.extend(unit)
            failed += outcome.status != "passed"
            if outcome.status != "passed":
                not_passed.update(s.id for s in unit)
            if outcome.budget_exhausted == "max_tokens_per_run":
                raise StopRun("max_tokens_per_run", outcome.error or "run budget exhausted")
            if remaining or outcome.status != "passed":  # else: nothing left to revise
                remaining = landing_order(self.adjust(part, outcome, remaining, done, again))
        for step in remaining:
            self.tally.skipped(part.id, step, f"over orchestrator.max_steps_per_part ({limit})")
        clean = failed == 0 and not remaining
        self.tally.parts_completed += int(clean)
        self.tally.parts_failed += int(not clean)

    def skip(self, part: MetaPlanPart, step: PlanStep, blockers: list[str]) -> None:
        """A step not run because a step it depends on did not pass: recorded with why."""
        why = f"skipped: it depends on {', '.join(blockers)}, which did not pass"
        outcome = self.tally.skipped(part.id, step, why)
        self.log.set_state(self.task_id, f"step_result:{part.id}:{step.id}", outcome)
        self.passes.emit(
            "step_failed", part_id=part.id, step_id=step.id, message=why, status="skipped"
        )

    def land_pass(
        self,
        part: MetaPlanPart,
        plan: PartPlan,
        steps: list[PlanStep],
        *,
        finishing: bool,
        again: str = "",
    ) -> StepOutcome:
        """A step, or the steps that land together, as one pass: its task run, attempts (or
        rounds), commit and state; the outcome as one step's (what the adjustment sees).
        `again` names a landing of the same steps made again (after a rewrite of the gate)."""
        unit_id = group_id(steps)
        key = f"impl:{part.id}:{unit_id}" + (f":{again}" if again else "")
        with self.passes.run_pass(self.ctx, "implement", key, part.id, unit_id) as current:
            assert self.head is not None, "open() first"
            request = StepRequest(
                part_id=part.id,
                plan=plan,
                cumulative_diff=self.cumulative_diff,
                task_run_id=current.task_run,
                base=self.head,
                extra_targets=self.ctx.goal_tests if finishing else (),
            )
            landing = land(self.ctx, steps, request)
            current.end = self.landed(part, unit_id, landing)
        outcome = landing.outcome
        kind: RunEventKind = "step_passed" if landing.passed else "step_failed"
        self.passes.emit(
            kind,
            part_id=part.id,
            step_id=unit_id,
            message=outcome.description,
            status=outcome.status,
        )
        return outcome

    def landed(self, part: MetaPlanPart, unit_id: str, landing: Landing) -> PassEnd:
        """A landing kept in the tally (its commit the new head): how its pass ends."""
        outcome = landing.outcome
        self.tally.outcomes += landing.steps
        states: dict[str, object] = {}
        if landing.group is not None:
            self.tally.groups.append(landing.group)
            states[f"group_result:{part.id}:{unit_id}"] = landing.group
        if landing.passed and outcome.commit:
            self.head = outcome.commit
            self.ctx.context.refresh()
            self.cumulative_diff += outcome.diff
            states["cumulative_diff"] = self.cumulative_diff
        for step_outcome in landing.steps:
            states[f"step_result:{part.id}:{step_outcome.step_id}"] = step_outcome
        return PassEnd(
            "complete" if landing.passed else "failed",
            usage=outcome.usage,
            error=outcome.error,
            diff=outcome.diff,
            states=states,
            steps_completed=self.tally.steps_passed,
        )

    def adjust(
        self,
        part: MetaPlanPart,
        outcome: StepOutcome,
        remaining: list[PlanStep],
        done: list[PlanStep],
        again: str,
    ) -> list[PlanStep]:
        """The adjustment pass after a step (see PlanPasses.adjust), kept in the tally."""
        diff = self.cumulative_diff
        record, remaining = self.plans.adjust(part, outcome, remaining, done, diff, again=again)
        if record is not None:
            self.tally.adjustments.append(record)
        return remaining

    # --- the end -------------------------------------------------------------------------

    def finish(self, *, in_place: bool) -> OrchestratorResult:
        """Judge the run, record its end, hand back the branch (or apply in place)."""
        wall_ms = int((self.runtime.clock() - self.started) * 1000)
        result = run_result(self.tally, self.passes, self.workspace, self.run_context, wall_ms)
        report = self.env.report if self.env is not None else self.env_report
        result = result.model_copy(update={"environment": report})
        if result.reproduction is not None:
            self.log.set_state(self.task_id, "reproduction", result.reproduction)
        keep_branch = result.commit is not None
        if self.workspace is not None and in_place and keep_branch:
            error = apply_in_place(self.workspace, result.diff)
            keep_branch = error is not None
            result = result.model_copy(update={"error": error or result.error})
        if not keep_branch:
            result = result.model_copy(update={"branch": None})
        self.passes.progress(-1, -1, result.status)
        self.log.update_orchestrator_run(
            self.passes.orchestrator_run_id,
            status=result.status,
            parts_completed=result.parts_completed,
            steps_completed=result.steps_completed,
            total_steps=len(self.tally.outcomes),
            completed=True,
        )
        if self.run_context is not None:
            self.run_context.context.close()
        if self.workspace is not None:
            close_workspace(self.workspace, keep_branch=keep_branch)
        if self.env is not None:
            self.env.close()
        self.passes.emit("run_finished", status=result.status, message=result.error or "")
        return result
