"""The typed artifacts that cross module boundaries: plans, edits, results, usage, context."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Artifact(BaseModel):
    """Base of artifacts parsed from model answers: unknown keys are ignored, not fatal."""

    model_config = ConfigDict(extra="ignore", defer_build=True)


class Record(BaseModel):
    """Base of artifacts the agent builds itself: unknown keys are a bug."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


# --- plans -----------------------------------------------------------------------------------


class PlanStep(Artifact):
    """One small unit of work: one file (plus its test), one or two edits."""

    id: str
    description: str
    target_files: list[str] = Field(default_factory=list)
    target_symbols: list[str] = Field(default_factory=list)
    depends_on: list[str] = Field(default_factory=list)
    changes_existing_tests: bool = False  # the task asks to change what existing tests expect
    # steps that must land together with this one (a signature and its callers): the gate
    # judges them once all are applied (agent.execute.plan_rules.groups_of)
    lands_with: list[str] = Field(default_factory=list)
    # the planned step this one is a piece of (plan_rules.split_steps); never shown to a model
    split_from: str = Field(default="", exclude=True)

    @field_validator("lands_with", "depends_on", "target_files", "target_symbols",
                     mode="before")
    @classmethod
    def _one_as_list(cls, value: object) -> object:
        """A small model's lone string where a list belongs ("s1" for ["s1"]); null is []."""
        if value is None:
            return []
        return [value] if isinstance(value, str) else value


class MetaPlanPart(Artifact):
    """One part of a meta-plan, later expanded into a part plan."""

    id: str
    description: str
    affected_files: list[str] = Field(default_factory=list)
    depends_on: list[str] = Field(default_factory=list)


class MetaPlan(Artifact):
    """The task decomposed into parts with explicit dependencies."""

    task_summary: str
    parts: list[MetaPlanPart]
    rationale: str = ""


class PartPlan(Artifact):
    """One part decomposed into small steps."""

    part_id: str
    task_summary: str
    steps: list[PlanStep]
    rationale: str = ""


class PlanAdjustment(Artifact):
    """The remaining steps revised after a step, with the reason."""

    revised_steps: list[PlanStep]
    rationale: str = ""
    changes_made: list[str] = Field(default_factory=list)


class AffectedFile(Artifact):
    """One file named by a user-facing plan."""

    path: str
    role: str = "modify"
    changes: str = ""


class PlanArtifact(Artifact):
    """The user-facing plan format (`cra plan` output, `cra solve --plan` input)."""

    task_summary: str
    affected_files: list[AffectedFile] = Field(default_factory=list)
    execution_order: list[str] = Field(default_factory=list)
    rationale: str = ""


# --- edits -----------------------------------------------------------------------------------


class PatchEdit(Record):
    """One search/replace edit; an empty search creates a new file."""

    file_path: str
    search: str
    replacement: str


class PatchResult(Record):
    """The outcome of applying a list of edits; original contents allow a full rollback."""

    success: bool
    files_modified: list[str] = Field(default_factory=list)
    files_created: list[str] = Field(default_factory=list)
    error_info: str | None = None
    hint: str = ""
    original_contents: dict[str, str | None] = Field(default_factory=dict)
    diff: str = ""
    dirs_created: list[str] = Field(default_factory=list)


class StepResult(Record):
    """The implementer's answer for one step: parsed edits or the reason there are none."""

    success: bool
    edits: list[PatchEdit] = Field(default_factory=list)
    error_info: str | None = None
    raw_response: str = ""
    usage: Usage = Field(default_factory=lambda: Usage())
    refinement: RefinementRequest | None = None


# --- validation ------------------------------------------------------------------------------


class CommandResult(Record):
    """One command run in the worktree: exit code, capped output, timing."""

    command: str
    exit_code: int | None
    output: str
    timed_out: bool = False
    duration_ms: int = 0
    truncated: bool = False


TestOutcome = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed"]


class TestCounts(Record):
    """Tests of one run by outcome."""

    __test__ = False  # not a pytest class

    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    xfailed: int = 0
    xpassed: int = 0

    @property
    def collected(self) -> int:
        """Every test the runner reported, whatever its outcome."""
        return (self.passed + self.failed + self.errors + self.skipped + self.xfailed
                + self.xpassed)

    @property
    def not_run(self) -> int:
        """Tests reported but not run to a verdict: skipped or expected to fail."""
        return self.skipped + self.xfailed


class TestReport(Record):
    """What a test run said about its tests, and where cra read it.

    `source`: "junit" (pytest's XML report), "summary" (a runner's summary line), "names" (every
    test listed with its outcome) or "none" (the runner was not recognised: only the exit code
    counts). `outcomes` maps test ids to outcomes, as far as the source names them.
    `incomplete` says why the output shows the runner stopped before running every test (plain
    `cargo test` stopping at its first failing test target, a TAP `Bail out!` or unmet plan):
    the counts and outcomes then miss the tests that did not run. None: it ran to its end, as
    far as the output shows.
    """

    __test__ = False  # not a pytest class

    source: Literal["junit", "summary", "names", "none"] = "none"
    runner: str | None = None
    counts: TestCounts | None = None
    outcomes: dict[str, TestOutcome] = Field(default_factory=dict)
    incomplete: str | None = None

    @property
    def reported(self) -> bool:
        """True when the runner reported its results (counts are known)."""
        return self.counts is not None


class ValidationResult(Record):
    """Test (the gate), lint and type-check outcome of one attempt."""

    success: bool
    test_output: str | None = None
    lint_output: str | None = None
    type_check_output: str | None = None
    failing_tests: list[str] = Field(default_factory=list)
    passing_tests: list[str] = Field(default_factory=list)
    exit_code: int | None = None
    timed_out: bool = False
    duration_ms: int = 0
    report: TestReport = Field(default_factory=TestReport)
    timeout_s: float | None = None

    @field_validator("report", mode="before")
    @classmethod
    def _no_report(cls, value: object) -> object:
        """A validation recorded before reports were kept has none."""
        return TestReport() if value is None else value


class GateVerdict(Record):
    """Whether a test run passes the gate; why not; which declared test changes it allowed."""

    passed: bool
    problems: list[str] = Field(default_factory=list)
    changed_tests: list[str] = Field(default_factory=list)
    original_rerun: bool = False  # the base commit's test files were also run
    weakened: bool = False  # a problem is with the tests themselves (gone, skipped, silenced)


class TestChange(Record):
    """Existing tests a step changed, declared by its plan and asked for by the task: shown in
    the pull request, never hidden."""

    __test__ = False  # not a pytest class

    path: str
    tests: list[str] = Field(default_factory=list)
    diff: str = ""
    reason: str = ""
    step: str = ""


class EnvironmentReport(Record):
    """Where a run's repository commands ran, and how its setup step went."""

    sandbox: Literal["bwrap", "none"]
    isolated: bool
    setup: Literal["none", "ran", "cached", "failed"] = "none"
    cache_key: str | None = None
    notes: list[str] = Field(default_factory=list)


class BaselineComparison(Record):
    """How a validation differs from the baseline run before any edit."""

    newly_failing: list[str] = Field(default_factory=list)
    newly_passing: list[str] = Field(default_factory=list)
    still_failing: list[str] = Field(default_factory=list)


class DiffStats(Record):
    """The size of a diff: files changed, lines inserted and deleted."""

    files_changed: int = 0
    insertions: int = 0
    deletions: int = 0
    files: list[str] = Field(default_factory=list)


class FailureSignal(Record):
    """A single categorised failure extracted from a step result."""

    category: Literal["compile_error", "test_failure", "patch_failure", "runtime_error", "unknown"]
    message: str
    source: str


class AdjustmentVerdicts(Record):
    """Aggregated yes/no verdicts of the decomposed adjustment."""

    step_viability: dict[str, bool]
    root_causes: dict[str, list[int]]
    new_steps_needed: list[int]
    failure_signals: list[FailureSignal]


# --- model calls -----------------------------------------------------------------------------

Role = Literal["reasoning", "coding", "classifier"]


class Usage(Record):
    """Tokens and latency of model calls; `estimated` when the server gave no counts."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    calls: int = 0
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            latency_ms=self.latency_ms + other.latency_ms,
            calls=self.calls + other.calls,
            estimated=self.estimated or other.estimated,
        )


class LLMResponse(Record):
    """A model answer with think blocks removed (`text`) and as received (`raw_text`)."""

    text: str
    raw_text: str
    model: str
    usage: Usage
    truncated: bool = False  # the answer stopped at the token limit (max_tokens), cut off

    def cut_off(self, role: str, max_tokens: int) -> str:
        """What to say of an answer that could not be used: "" unless it was cut off."""
        if not self.truncated:
            return ""
        return (f"the answer stopped at the token limit ({max_tokens} tokens: raise "
                f"models.{role}.max_tokens, or ask for less); ")


class LLMCallRecord(Record):
    """One model call as recorded in the run log, successful or not."""

    stage: str
    role: str
    model: str
    system_prompt: str
    user_prompt: str
    response: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_estimated: bool = False
    latency_ms: int = 0
    error: str | None = None
    task_run_id: int | None = None


# --- context ---------------------------------------------------------------------------------


SymbolDetail = Literal["full", "signature", "omitted"]


class ContextFile(Record):
    """One file in a context package: whole, an outline with chosen bodies, or cut short.

    `symbols` holds the detail chosen per definition of an outline; `reason` says why the file
    is in the package (a seed, the ranking, the scope stage).
    """

    path: str
    content: str
    detail: Literal["full", "outline", "truncated"] = "full"
    tokens: int = 0
    reason: str = ""
    symbols: dict[str, SymbolDetail] = Field(default_factory=dict)

    def prompt_block(self) -> str:
        """This file as it appears in a prompt: its content under its path."""
        label = "" if self.detail == "full" else f' detail="{self.detail}"'
        return f'<file path="{self.path}"{label}>\n{self.content}\n</file>'


OVER_BUDGET = "over budget"  # how the reason of a file left out for want of room begins


class DroppedFile(Record):
    """A candidate left out of a context package, and why."""

    path: str
    reason: str

    @property
    def crowded_out(self) -> bool:
        """Left out for want of room (it would have been shown in a larger context)."""
        return self.reason.startswith(OVER_BUDGET)


class ContextPackage(Record):
    """The curated, budget-bounded context handed to one pass."""

    task: str
    files: list[ContextFile] = Field(default_factory=list)
    dropped: list[DroppedFile] = Field(default_factory=list)
    budget_tokens: int = 0
    used_tokens: int = 0
    mode: Literal["plan", "implement"] = "implement"
    seed_files: list[str] = Field(default_factory=list)
    seed_symbols: list[str] = Field(default_factory=list)

    def to_prompt_text(self) -> str:
        """Each file under its path, whole or as an outline, in package order (seeds first,
        then by rank: deterministic for the same repository, task and answers)."""
        return "\n\n".join(f.prompt_block() for f in self.files)


class RefinementRequest(Record):
    """Evidence that a pass lacked context: what to bring in on re-entry."""

    reason: str
    missing_files: list[str] = Field(default_factory=list)
    missing_symbols: list[str] = Field(default_factory=list)
    missing_tests: list[str] = Field(default_factory=list)
    error_signatures: list[str] = Field(default_factory=list)


# --- runs ------------------------------------------------------------------------------------

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
    "run_started", "pass_started", "pass_finished", "plan_made", "edits_applied", "step_passed",
    "step_failed", "adjustment_made", "run_finished",
]


class RunEvent(Record):
    """A progress event for observers (the bot turns these into live progress)."""

    kind: RunEventKind
    run_id: str
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

    @property
    def tests_changed(self) -> list[TestChange]:
        """Existing tests the passed steps and groups changed (declared and allowed by the
        gate)."""
        return [*(c for o in self.steps if o.status == "passed" for c in o.tests_changed),
                *(c for g in self.groups if g.status == "passed" for c in g.tests_changed)]

    @property
    def original_tests_rerun(self) -> bool:
        """True when a passed step's edits touched the gate and the original tests ran too."""
        attempts = [*(a for o in self.steps if o.status == "passed" for a in o.attempts),
                    *(r.attempt for g in self.groups if g.status == "passed" for r in g.rounds)]
        return any(a.gate is not None and a.gate.original_rerun and a.gate.passed
                   for a in attempts)
