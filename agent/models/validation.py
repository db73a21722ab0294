"""Validation: commands run, test reports, the gate's verdict and failure signals."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from agent.models.base import Record


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
        return self.passed + self.failed + self.errors + self.skipped + self.xfailed + self.xpassed

    @property
    def not_run(self) -> int:
        """Tests reported but not run to a verdict: skipped or expected to fail."""
        return self.skipped + self.xfailed


class TestReport(Record):
    """What a test run said about its tests, and where cra read it.

    `source`: "junit" (pytest's XML report), "json" (jest's or vitest's JSON report),
    "summary" (a runner's summary line), "names" (every test listed with its outcome) or "none"
    (the runner was not recognised: only the exit code counts). `outcomes` maps test ids to
    outcomes, as far as the source names them.
    `incomplete` says why the output shows the runner stopped before running every test (plain
    `cargo test` stopping at its first failing test target, a TAP `Bail out!` or unmet plan):
    the counts and outcomes then miss the tests that did not run. None: it ran to its end, as
    far as the output shows. `files` maps the ids that do not name their file to the file the
    output places them in, relative to the worktree (agent.gate.testreport.files), as far as it
    does: a failure's location or stack. `stopped_in`: for a run its runner never reported,
    the test file the output's stack stopped in, where it shows one.
    """

    __test__ = False  # not a pytest class

    source: Literal["junit", "json", "summary", "names", "none"] = "none"
    runner: str | None = None
    counts: TestCounts | None = None
    outcomes: dict[str, TestOutcome] = Field(default_factory=dict)
    incomplete: str | None = None
    files: dict[str, str] = Field(default_factory=dict)
    # a run the runner never reported: the test file its output's stack stopped in (a test
    # that ended the process: jest's `process.exit called with "1"`), relative to the worktree
    stopped_in: str | None = None

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
    # the test command first timed out under this limit, derived from the baseline; this is
    # its run again under the configured timeout (timeout_s), the one judged
    rerun_for_time_s: float | None = None

    @property
    def passed_tests(self) -> list[str]:
        """Every test seen passing: those the run listed, and those its report says passed."""
        reported = (t for t, o in self.report.outcomes.items() if o == "passed")
        return list(dict.fromkeys([*self.passing_tests, *reported]))

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


class Reproduction(Record):
    """The run's reproduction of its issue: a test written before any fix that fails on the
    base commit the way the issue describes (`reproduced`: it is the run's gate), the failing
    tests the issue already names (`named`), or why there is none (`none`: the run is gated by
    the existing tests alone). `before` is its failure on the base commit, `after` what the
    run's last accepted test run says of it; `rewritten`, the earlier tests judged wrong."""

    status: Literal["reproduced", "named", "none"]
    why: str = ""
    files: list[str] = Field(default_factory=list)
    tests: list[str] = Field(default_factory=list)
    commit: str | None = None
    before: str = ""
    after: str = ""
    passes: bool | None = None  # whether every test of it passes at the run's end
    attempts: int = 0
    # each earlier reproduction judged wrong and written again: what it was and why
    rewritten: list[str] = Field(default_factory=list)


class TestChange(Record):
    """Existing tests a step changed, declared by its plan and asked for by the task: shown in
    the pull request, never hidden."""

    __test__ = False  # not a pytest class

    path: str
    tests: list[str] = Field(default_factory=list)
    diff: str = ""
    reason: str = ""
    step: str = ""


class SetupFailure(Record):
    """A setup step that failed, as people are told: its command, how it ended and the last
    lines of its output (bounded, secrets masked: agent.sandbox.shown)."""

    command: str
    exit_code: int | None = None
    timed_out: bool = False
    timeout_s: float | None = None
    tail: str = ""

    def ended(self) -> str:
        """How the command ended: `exited with status 1`, `timed out after 600 s`."""
        if self.timed_out:
            return f"timed out after {self.timeout_s:g} s" if self.timeout_s else "timed out"
        if self.exit_code is None:
            return "could not start"
        return f"exited with status {self.exit_code}"

    def headline(self) -> str:
        """One line: the command and how it ended."""
        return f"the setup step ({self.command}) {self.ended()}"

    def last_line(self) -> str:
        """The output's last line ("" when it printed nothing)."""
        return self.tail.rsplit("\n", 1)[-1].strip()

    def explained(self) -> str:
        """The headline, then the output's last lines, indented."""
        if not self.tail.strip():
            return f"{self.headline()}, printing nothing"
        shown = "\n".join(f"    {line}" for line in self.tail.splitlines())
        return f"{self.headline()}; its output ended:\n{shown}"


class EnvironmentReport(Record):
    """Where a run's repository commands ran, and how its setup step went."""

    sandbox: Literal["bwrap", "none"]
    isolated: bool
    setup: Literal["none", "ran", "cached", "failed"] = "none"
    cache_key: str | None = None
    notes: list[str] = Field(default_factory=list)
    failure: SetupFailure | None = None  # when setup == "failed"


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
