"""Run the repository's test, lint and type-check commands in a worktree and read their outcome.

Each command runs through agent.sandbox.commands (the repository's own string, in the run's
sandbox, with a scrubbed environment and a timeout that kills everything it started); this
module reads what the test command reported and compares it with the baseline.
"""

from __future__ import annotations

import shlex
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from agent.config.files import TestingConfig
from agent.errors import CommandNotStarted
from agent.gate.runner_command import with_js_report
from agent.gate.testreport.jsreport import JsReport
from agent.gate.testreport.outcomes import JUNIT_MAX_BYTES, named_tests, read_report
from agent.git.treefiles import read_in_tree
from agent.models import BaselineComparison, CommandResult, TestReport, ValidationResult
from agent.sandbox.base import Sandbox
from agent.sandbox.commands import KILL_GRACE, Bounds, Reach, execute, scrubbed_env

# --- validation ----------------------------------------------------------------------------


def run_validation(
    worktree: Path,
    testing: TestingConfig,
    *,
    environ: Mapping[str, str],
    sandbox: Sandbox,
    kill_grace: float = KILL_GRACE,
    timeout: float | None = None,
    extras: bool = True,
    read_only: Sequence[Path] = (),
) -> ValidationResult:
    """Run the test command (the gate) and, with `extras`, the lint and type-check commands,
    in `sandbox`, which lets them change only `worktree` (a run's worktree or a scratch tree)
    and read `read_only` besides the system (where a scratch tree's links point).

    `timeout` (default `testing.timeout`) bounds each command; a test run that times out under
    a shorter `timeout` runs once more under `testing.timeout` and is judged on that run
    (`rerun_for_time`). pytest is asked for a JUnit XML report on the side, and a plain jest or
    vitest command for its JSON report (agent.gate.runner_command), so that their tests are
    counted by outcome, not only by exit code.
    """
    command = testing.test_command
    if not command:
        raise CommandNotStarted("no [testing] test_command: cra needs a test command")
    limit = testing.timeout if timeout is None else min(timeout, testing.timeout)
    # Edits land seconds apart and often keep a file's size ("a + b" → "a - b"); Python's
    # bytecode cache checks only mtime (whole seconds) and size, so a .pyc written by the
    # previous test run could hide the edit. No bytecode is written in a worktree.
    env = {**scrubbed_env(environ, testing.env), "PYTHONDONTWRITEBYTECODE": "1"}

    def run(
        command: str, env: Mapping[str, str], outputs: Path | None = None, limit: float = limit
    ) -> tuple[CommandResult, str]:
        return execute(
            command,
            sandbox=sandbox,
            reach=Reach(worktree, worktree, testing.network, outputs, read_only),
            env=env,
            bounds=Bounds(limit, testing.max_output_chars, kill_grace),
        )

    def run_tests(limit: float) -> _TestRun:
        with tempfile.TemporaryDirectory(prefix="cra-report-") as reports:
            # the command writes its report where the sandbox shows it
            junit, js = Path(reports) / "junit.xml", Path(reports) / "report.json"
            seen, seen_js = (
                sandbox.seen_as(p, tree=worktree, outputs=Path(reports)) for p in (junit, js)
            )
            asked = (testing.js_report and with_js_report(command, str(seen_js))) or command
            test, full = run(
                asked, {**env, "PYTEST_ADDOPTS": _addopts(env, seen)}, Path(reports), limit
            )
            js_text = _read_capped(js)
            root = str(sandbox.seen_as(worktree.resolve(), tree=worktree))
            found = JsReport(js_text, root) if js_text is not None else None
            report = read_report(full, _read_capped(junit), found, roots=_roots(worktree, sandbox))
            return _TestRun(test, full, report, limit)

    ran = run_tests(limit)
    first_limit = None
    if rerun_for_time(ran.result, limit, testing):  # the machine's pace, not the code's: once more
        first_limit = limit
        ran = run_tests(testing.timeout)
    others = {
        name: run(extra, env)[0]
        for name, extra in (
            ("lint", testing.lint_command),
            ("type_check", testing.type_check_command),
        )
        if extra and extras
    }
    return _result(ran, others, first_limit)


def _roots(worktree: Path, sandbox: Sandbox) -> list[str]:
    """Where the test command may print the worktree's path: as the host and as the sandbox
    show it (a failure's location, its stack)."""
    shown = (worktree, worktree.resolve(), sandbox.seen_as(worktree, tree=worktree))
    return list(dict.fromkeys(str(path) for path in shown))


def _addopts(env: Mapping[str, str], junit: Path) -> str:
    """PYTEST_ADDOPTS asking for a JUnit report (xunit1 names the file of each test), and
    that a test file that cannot be collected not stop the others: a new test importing a name
    the fix has yet to add would otherwise leave every other test unrun (the error still fails
    the run, and the gate still counts it)."""
    ours = (
        f"--junitxml={shlex.quote(str(junit))} -o junit_family=xunit1 "
        "--continue-on-collection-errors"
    )
    return f"{env.get('PYTEST_ADDOPTS', '')} {ours}".strip()


def _read_capped(path: Path) -> str | None:
    """A report file's text, or None when absent, too large to trust, or not a regular file
    (the command may have left a symlink to a file it could not read itself)."""
    try:
        data = read_in_tree(path.parent, path.name, JUNIT_MAX_BYTES + 1)
    except OSError:
        return None
    return None if len(data) > JUNIT_MAX_BYTES else data.decode("utf-8", errors="replace")


class _TestRun(NamedTuple):
    """One run of the test command: its result, its whole output, the report read from it,
    and the time limit it ran under."""

    result: CommandResult
    full_output: str
    report: TestReport
    limit: float


def _result(
    tests: _TestRun, others: Mapping[str, CommandResult], first_limit: float | None
) -> ValidationResult:
    test, full, report, limit = tests
    junit_failed = [t for t, o in report.outcomes.items() if o in ("failed", "error")]
    junit_passed = [t for t, o in report.outcomes.items() if o == "passed"]
    failed, passed = named_tests(full)
    return ValidationResult(
        success=test.exit_code == 0 and not test.timed_out,
        test_output=test.output,
        lint_output=others["lint"].output if "lint" in others else None,
        type_check_output=others["type_check"].output if "type_check" in others else None,
        failing_tests=list(dict.fromkeys([*failed, *junit_failed])),
        passing_tests=list(dict.fromkeys([*passed, *junit_passed])),
        exit_code=test.exit_code,
        timed_out=test.timed_out,
        duration_ms=test.duration_ms + sum(r.duration_ms for r in others.values()),
        report=report,
        timeout_s=limit,
        rerun_for_time_s=first_limit,
    )


def attempt_timeout(
    baseline: ValidationResult, testing: TestingConfig, passing_ms: int | None = None
) -> float:
    """The timeout of a test run after the baseline: a multiple of the longer of the baseline's
    duration and a full passing run's (`passing_ms`, once one is known) plus a margin, never
    above `testing.timeout` (all of it when the baseline itself hung).

    A baseline that stops at its first failure (`pytest -x`) says little of how long the whole
    suite takes; a passing run does."""
    if baseline.timed_out:
        return testing.timeout
    longest = max(baseline.duration_ms, passing_ms or 0)
    derived = testing.timeout_factor * longest / 1000 + testing.timeout_margin
    return min(testing.timeout, derived)


def rerun_for_time(test: CommandResult, limit: float, testing: TestingConfig) -> bool:
    """Whether a test run that timed out is run once more under the configured timeout: it ran
    under a shorter limit derived from the baseline, which a busy machine or a suite that runs
    longer once it passes can outgrow. A timeout is the code's only under `testing.timeout`."""
    return test.timed_out and limit < testing.timeout


def compare_to_baseline(
    baseline: ValidationResult, current: ValidationResult
) -> BaselineComparison:
    """Which tests fail now but did not at baseline, which were fixed, which still fail.

    A test that did not exist at baseline and fails now is newly failing. A baseline failure
    counts as newly passing only when the run succeeded or listed that test as passing.
    """
    before = set(baseline.failing_tests)
    now = set(current.failing_tests)
    passing = set(current.passing_tests)
    return BaselineComparison(
        newly_failing=[t for t in current.failing_tests if t not in before],
        newly_passing=[
            t for t in baseline.failing_tests if t not in now and (current.success or t in passing)
        ],
        still_failing=[t for t in current.failing_tests if t in before],
    )
