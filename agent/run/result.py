"""An orchestrator run judged: what it did (its Tally) as an OrchestratorResult."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from agent.gate import verdict as gate
from agent.git import repo as git
from agent.git.workspace import Workspace
from agent.models import (
    AdjustmentRecord,
    GroupOutcome,
    MetaPlan,
    OrchestratorResult,
    PartPlan,
    PlanStep,
    StepOutcome,
    Usage,
    ValidationResult,
)
from agent.run.context import RunContext
from agent.run.passes import PassRecorder
from agent.run.reproduction import final_state

RunStatus = Literal["complete", "partial", "failed", "cancelled"]


@dataclass
class Tally:
    """What a run has done so far: plans, step outcomes, adjustments, and why it stopped."""

    meta: MetaPlan | None = None
    part_plans: list[PartPlan] = field(default_factory=list)
    outcomes: list[StepOutcome] = field(default_factory=list)
    groups: list[GroupOutcome] = field(default_factory=list)
    adjustments: list[AdjustmentRecord] = field(default_factory=list)
    parts_failed: int = 0
    parts_completed: int = 0
    error: str | None = None
    budget_exhausted: str | None = None
    status_note: str | None = None

    def skipped(self, part_id: str, step: PlanStep, why: str) -> StepOutcome:
        """A step not run, kept with why."""
        outcome = StepOutcome(
            part_id=part_id,
            step_id=step.id,
            description=step.description,
            status="skipped",
            error=why,
        )
        self.outcomes.append(outcome)
        return outcome

    def part_skipped(self, part_id: str, blockers: Sequence[str]) -> str:
        """A part not run because a part it depends on did not complete: counted failed;
        why, which is the run's error unless it has one."""
        self.parts_failed += 1
        why = f"part {part_id} skipped: it depends on {', '.join(blockers)}, which did not complete"
        self.error = self.error or why
        return why

    def replanned(self, part_id: str, plan: PartPlan) -> None:
        """A part's failed plan superseded by a new plan of it: the plan, its outcomes and the
        part's failure leave the tally (the run log keeps them)."""
        self.part_plans = [p for p in self.part_plans if p is not plan]
        self.forget(part_id, plan.steps)
        self.parts_failed -= 1

    def forget(self, part_id: str, steps: Sequence[PlanStep]) -> None:
        """A landing superseded (landed again after the run's gate changed): its outcomes and
        its group's leave the tally — the run log keeps them."""
        ids = {s.id for s in steps}
        self.outcomes = [
            o for o in self.outcomes if not (o.part_id == part_id and o.step_id in ids)
        ]
        self.groups = [
            g for g in self.groups if not (g.part_id == part_id and set(g.step_ids) <= ids)
        ]

    @property
    def steps_passed(self) -> int:
        return sum(o.status == "passed" for o in self.outcomes)


def run_result(
    tally: Tally,
    passes: PassRecorder,
    workspace: Workspace | None,
    run_context: RunContext | None,
    wall_ms: int,
) -> OrchestratorResult:
    """The OrchestratorResult of the run (its passes on record) as it stands."""
    task = passes.task
    head = (
        git.head_commit(workspace.worktree)
        if workspace is not None and workspace.worktree.exists()
        else None
    )
    commit = head if workspace is not None and head != workspace.base else None
    diff, stats = "", None
    if workspace is not None and commit:
        diff, stats = git.diff_with_stats(workspace.worktree, workspace.base, commit)
    final = next(
        (o.validation for o in reversed(tally.outcomes) if o.status == "passed"),
        run_context.baseline if run_context else None,
    )
    found = run_context.reproduction if run_context else None
    return OrchestratorResult(
        task_id=passes.task_id,
        status=judge(tally, run_context, task, final),
        orchestrator_run_id=passes.orchestrator_run_id,
        branch=workspace.branch if workspace is not None and commit else None,
        base_commit=workspace.base if workspace is not None else None,
        commit=commit,
        diff=diff,
        files_changed=stats.files if stats else [],
        baseline=run_context.baseline if run_context else None,
        final_validation=final,
        reproduction=final_state(found, final) if found else None,
        meta_plan=tally.meta,
        part_plans=tally.part_plans,
        steps=tally.outcomes,
        groups=tally.groups,
        adjustments=tally.adjustments,
        parts_completed=tally.parts_completed,
        steps_completed=tally.steps_passed,
        steps_failed=sum(o.status != "passed" for o in tally.outcomes),
        usage=run_context.usage if run_context else Usage(),
        usage_by_role=run_context.usage_by_role if run_context else {},
        budget_exhausted=tally.budget_exhausted,
        error=tally.error or first_cause(tally, unmet_targets(tally, run_context, task, final)),
        wall_ms=wall_ms,
    )


def judge(
    tally: Tally, run_context: RunContext | None, task: str, final: ValidationResult | None
) -> RunStatus:
    """complete: every step passed and the task's named tests pass; partial: some did."""
    if tally.status_note == "cancelled":
        return "cancelled"
    if tally.steps_passed == 0:
        return "failed"
    clean = (
        tally.parts_failed == 0
        and not tally.budget_exhausted
        and tally.steps_passed == len(tally.outcomes)
        and tally.error is None
    )
    return "complete" if clean and not unmet_targets(tally, run_context, task, final) else "partial"


def first_cause(tally: Tally, consequence: str | None) -> str | None:
    """The run's error with its first cause first: a model call that failed for good (it timed
    out, its server went away) before what followed from it (the tests still fail)."""
    cause = next((o.error for o in tally.outcomes if o.model_failed and o.error), None)
    if cause is None:
        return consequence
    return cause if consequence is None else f"{cause} (and so {consequence})"


def unmet_targets(
    tally: Tally, run_context: RunContext | None, task: str, final: ValidationResult | None
) -> str | None:
    """The run's goal — the task's named failing tests, or its reproduction's — where it still
    fails at the end, as an error text."""
    if run_context is None or final is None or not tally.outcomes:
        return None
    targets = run_context.goal_tests
    changes = [
        *(c for o in tally.outcomes for c in o.tests_changed),
        *(c for g in tally.groups for c in g.tests_changed),
    ]
    changed = {t for c in changes for t in c.tests}
    if (
        not targets
        or gate.judge(
            final,
            final,
            baseline=run_context.baseline,
            targets=targets,
            allowed=changed.__contains__,
        ).passed
    ):
        return None
    return f"{run_context.goal_name} still fail: " + ", ".join(targets)
