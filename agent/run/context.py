"""What the passes of one run share (RunContext); what landing a step is asked (StepRequest), and
one plan step's working set (StepState)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from agent.config.files import SolveConfig
from agent.gate.validation import attempt_timeout
from agent.git.workspace import Workspace
from agent.llm.budget import TaskBudget
from agent.llm.judgments import JudgmentCache
from agent.llm.logged import LoggedLLMClient
from agent.models import (
    AttemptRecord,
    ModelRole,
    PartPlan,
    PlanStep,
    Reproduction,
    Usage,
    ValidationResult,
)
from agent.run.runtime import Runtime
from agent.run.sources import ContextSource


def run_budget(config: SolveConfig) -> TaskBudget:
    """The budget every pass of a run is charged to too: budget.max_tokens_per_run."""
    return TaskBudget(
        "run",
        max_tokens=config.budget.max_tokens_per_run,
        max_calls=None,
        tokens_label="max_tokens_per_run",
    )


@dataclass
class RunContext:
    """What every pass of one run shares: workspace, baseline, run budget, usage by role."""

    task: str
    task_id: str  # the run as the run log records it (orchestrator_runs.task_id)
    runtime: Runtime
    config: SolveConfig
    workspace: Workspace
    baseline: ValidationResult
    context: ContextSource
    run_budget: TaskBudget
    usage_by_role: dict[str, Usage] = field(default_factory=dict)
    reference: ValidationResult | None = None  # the accepted state: baseline, then each pass
    judgments: JudgmentCache = field(default_factory=JudgmentCache)
    passing_ms: int | None = None  # the longest full passing test run of the run so far
    # the issue reproduced before any fix: the tests the task names, or the test written
    reproduction: Reproduction | None = None

    def __post_init__(self) -> None:
        self.reference = self.reference or self.baseline

    @property
    def test_timeout(self) -> float:
        """The limit of every test run after the baseline: derived from the baseline's
        duration, and from a full passing run's once one is known."""
        return attempt_timeout(self.baseline, self.config.testing, self.passing_ms)

    def timed(self, validation: ValidationResult) -> ValidationResult:
        """`validation`, its duration kept when it is a full passing run (for test_timeout)."""
        if validation.success:
            self.passing_ms = max(self.passing_ms or 0, validation.duration_ms)
        return validation

    @property
    def goal_tests(self) -> list[str]:
        """The tests the run must make pass: the reproduction's (the task's named tests)."""
        return list(self.reproduction.tests) if self.reproduction is not None else []

    @property
    def goal_name(self) -> str:
        """What the goal tests are, as an error names them."""
        named = self.reproduction is None or self.reproduction.status == "named"
        return "the tests the task names" if named else "the reproduction's tests"

    def reproduced(self, files: Sequence[str], failure: str | None) -> tuple[list[str], str | None]:
        """What a planning pass gathers its context from: its own files and failure, with the
        reproduction's test files and, when the pass has no failure of its own, the
        reproduction's failure on the base commit. The failing test's imports and the frames
        of its traceback then rank the code it reaches, whatever a classifier says of it
        (recall-first: a small model's "no" must not hide the file the issue fails in)."""
        found = self.reproduction
        if found is None or found.status == "none":
            return list(files), failure
        return list(dict.fromkeys([*files, *found.files])), failure or found.before or None

    @property
    def accepted(self) -> ValidationResult:
        """The test run of the last accepted state (the baseline before any step passed)."""
        return self.reference or self.baseline

    def client(
        self, role: ModelRole, *, task_run_id: int, budgets: Sequence[TaskBudget] = ()
    ) -> LoggedLLMClient:
        """A logged client for `role`, bound to a task run, charged to the run budget too."""
        return LoggedLLMClient(
            self.runtime.models.client(role),
            self.runtime.log,
            role=role,
            reserved_tokens=self.config.budget.reserved_tokens,
            task_run_id=task_run_id,
            budgets=[*budgets, self.run_budget],
            judgments=self.judgments if self.config.orchestrator.cache_judgments else None,
        )

    def step_clients(
        self, name: str, *, task_run_id: int
    ) -> tuple[LoggedLLMClient, LoggedLLMClient | None]:
        """The coding client of one step-sized pass (`name`: a step, the reproduction) within
        the step's ceilings (ADR: ~30k tokens, a few calls), and its classifier for retrieval
        when retrieval asks questions (capped per retrieval, charged to the run budget)."""
        budget = TaskBudget(
            name,
            max_tokens=self.config.budget.max_tokens_per_step,
            max_calls=self.config.orchestrator.max_calls_per_step,
            tokens_label="max_tokens_per_step",
            calls_label="max_calls_per_step",
        )
        coding = self.client("coding", task_run_id=task_run_id, budgets=[budget])
        stages = self.config.retrieval.stages
        classifier = self.client("classifier", task_run_id=task_run_id) if stages else None
        return coding, classifier

    def account(self, *clients: LoggedLLMClient | None) -> Usage:
        """Add the clients' usage to the run's usage by role; returns their sum."""
        total = Usage()
        for c in clients:
            if c is not None and (c.usage.calls or c.usage.latency_ms):
                self.usage_by_role[c.role] = self.usage_by_role.get(c.role, Usage()) + c.usage
                total = total + c.usage
        return total

    @property
    def usage(self) -> Usage:
        """Everything the run's model calls cost so far."""
        total = Usage()
        for usage in self.usage_by_role.values():
            total = total + usage
        return total


@dataclass(frozen=True)
class StepRequest:
    """What landing a step (or the steps that land together with it) is asked, one pass's
    worth: where in the plan it stands, what came before, where its attempts are recorded, the
    commit it starts from, and the tests it must make pass besides its own."""

    part_id: str
    plan: PartPlan | None
    cumulative_diff: str
    task_run_id: int
    base: str
    extra_targets: Sequence[str] = ()


@dataclass
class StepState:
    """The per-step working set: one step of a request, its clients and its attempts."""

    run_context: RunContext
    step: PlanStep
    request: StepRequest
    coding: LoggedLLMClient
    classifier: LoggedLLMClient | None
    targets: Sequence[str] = ()
    attempts: list[AttemptRecord] = field(default_factory=list)
    judge_clients: list[LoggedLLMClient] = field(default_factory=list)
    landing: str | None = None  # what the implementer is told of the steps it lands with

    @property
    def part_id(self) -> str:
        return self.request.part_id

    @property
    def plan(self) -> PartPlan | None:
        return self.request.plan

    @property
    def cumulative_diff(self) -> str:
        return self.request.cumulative_diff

    @property
    def task_run_id(self) -> int:
        return self.request.task_run_id

    @property
    def base(self) -> str:
        return self.request.base
