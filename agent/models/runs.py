"""Runs: attempts, step and group outcomes, adjustments, progress events, the solve result."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agent.models.base import Record
from agent.models.calls import Usage
from agent.models.edits import PatchEdit, StepResult
from agent.models.plans import MetaPlan, PartPlan, PlanAdjustment, PlanStep
from agent.models.validation import (
    AdjustmentVerdicts,
    EnvironmentReport,
    GateVerdict,
    Reproduction,
    TestChange,
    ValidationResult,
)

RunStatus = Literal["complete", "partial", "failed", "cancelled"]
StepStatus = Literal["passed", "failed", "skipped"]


class AttemptRecord(Record):
    """One generate → apply → validate attempt."""

    attempt: int
    raw_response: str = ""
    usage: Usage = Field(default_factory=Usage)
    edits: list[PatchEdit] = Field(default_factory=list)
    patch_applied: bool = False
    error_info: str | None = None
    validation: ValidationResult | None = None
    original: ValidationResult | None = None  # the base commit's test files on this code
    gate: GateVerdict | None = None
    unified_diff: str = ""


class StepOutcome(Record):
    """What became of one plan step: its attempts, its commit, or why it failed."""

    part_id: str
    step_id: str
    description: str
    status: StepStatus
    attempts: list[AttemptRecord] = Field(default_factory=list)
    commit: str | None = None
    diff: str = ""
    error: str | None = None
    model_failed: bool = False  # the step ended because a model call failed for good
    budget_exhausted: str | None = None
    validation: ValidationResult | None = None
    task_run_id: int | None = None
    usage: Usage = Field(default_factory=Usage)
    tests_changed: list[TestChange] = Field(default_factory=list)
    group: str | None = None  # the id of the group the step landed (or failed) with

    def as_step_result(self, *, output_chars: int = 1500) -> StepResult:
        """The StepResult the adjustment pass reasons about; a failure carries the failing
        tests and the end of the last test output, so the yes/no stages see real signals."""
        last = self.attempts[-1] if self.attempts else None
        return StepResult(
            success=self.status == "passed",
            edits=last.edits if last else [],
            error_info=None if self.status == "passed" else self._failure_text(output_chars),
            raw_response=last.raw_response if last else "",
            usage=self.usage,
        )

    def _failure_text(self, output_chars: int) -> str:
        parts = [self.error or "step failed"]
        last = self.attempts[-1] if self.attempts else None
        if last is not None and last.error_info and last.error_info != self.error:
            parts.append(last.error_info)
        if self.validation is not None:
            if self.validation.failing_tests:
                parts.append("FAILED " + ", ".join(self.validation.failing_tests))
            parts.append((self.validation.test_output or "")[-output_chars:])
        return "\n".join(p for p in parts if p)


class GroupRound(Record):
    """One round of a group: its pieces applied in order (those the last failure pointed to
    implemented again, the others re-applied), then the gate's verdict on all of them."""

    number: int
    redone: list[str] = Field(default_factory=list)  # the step ids implemented this round
    attempt: AttemptRecord  # all the pieces' edits, their diff, the gate's test run and verdict


class GroupOutcome(Record):
    """Steps that had to land together: one gate verdict on all of them, one commit."""

    part_id: str
    group_id: str
    step_ids: list[str]
    reason: str = ""  # why they land together
    status: StepStatus
    rounds: list[GroupRound] = Field(default_factory=list)
    commit: str | None = None
    diff: str = ""
    validation: ValidationResult | None = None  # the gate's last test run
    tests_changed: list[TestChange] = Field(default_factory=list)
    error: str | None = None


class AdjustmentRecord(Record):
    """One adjustment pass: the revised remaining steps and why (or why it failed)."""

    part_id: str
    after_step: str
    mode: Literal["monolithic", "decomposed"]
    adjustment: PlanAdjustment | None = None
    verdicts: AdjustmentVerdicts | None = None
    error: str | None = None


RunEventKind = Literal[
    "run_started",
    "pass_started",
    "pass_finished",
    "reproduced",
    "plan_made",
    "edits_applied",
    "step_passed",
    "step_failed",
    "adjustment_made",
    "run_finished",
]


class RunEvent(Record):
    """A progress event for observers (the bot turns these into live progress)."""

    kind: RunEventKind
    task_id: str  # the run the event is of, as the run log records it
    pass_type: str | None = None
    part_id: str | None = None
    step_id: str | None = None
    status: str | None = None
    message: str = ""
    steps: list[PlanStep] = Field(default_factory=list)


class OrchestratorResult(Record):
    """The outcome of a solve run: status, plans, steps, adjustments, where the work is, cost."""

    task_id: str
    status: RunStatus
    task_run_id: int | None = None
    orchestrator_run_id: int | None = None
    branch: str | None = None
    base_commit: str | None = None
    commit: str | None = None
    diff: str = ""
    files_changed: list[str] = Field(default_factory=list)
    attempts: list[AttemptRecord] = Field(default_factory=list)
    baseline: ValidationResult | None = None
    final_validation: ValidationResult | None = None
    environment: EnvironmentReport | None = None
    meta_plan: MetaPlan | None = None
    part_plans: list[PartPlan] = Field(default_factory=list)
    steps: list[StepOutcome] = Field(default_factory=list)
    groups: list[GroupOutcome] = Field(default_factory=list)
    adjustments: list[AdjustmentRecord] = Field(default_factory=list)
    parts_completed: int = 0
    steps_completed: int = 0
    steps_failed: int = 0
    usage: Usage = Field(default_factory=Usage)
    usage_by_role: dict[str, Usage] = Field(default_factory=dict)
    budget_exhausted: str | None = None
    wall_ms: int = 0
    error: str | None = None
    reproduction: Reproduction | None = None

    @property
    def tests_changed(self) -> list[TestChange]:
        """Existing tests the passed steps and groups changed (declared and allowed by the
        gate)."""
        return [
            *(c for o in self.steps if o.status == "passed" for c in o.tests_changed),
            *(c for g in self.groups if g.status == "passed" for c in g.tests_changed),
        ]

    @property
    def rerun_for_time(self) -> list[ValidationResult]:
        """The test runs of every attempt that timed out under the limit derived from the
        baseline and were judged on a run again under the configured timeout."""
        attempts = [
            *(a for o in self.steps for a in o.attempts),
            *(r.attempt for g in self.groups for r in g.rounds),
        ]
        runs = [v for a in attempts for v in (a.validation, a.original) if v is not None]
        return [v for v in runs if v.rerun_for_time_s is not None]

    @property
    def original_tests_rerun(self) -> bool:
        """True when a passed step's edits touched the gate and the original tests ran too."""
        attempts = [
            *(a for o in self.steps if o.status == "passed" for a in o.attempts),
            *(r.attempt for g in self.groups if g.status == "passed" for r in g.rounds),
        ]
        return any(a.gate is not None and a.gate.original_rerun and a.gate.passed for a in attempts)
