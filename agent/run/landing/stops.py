"""A test run in which a test ended the test process — code that exits on what the test gives
it (jest's `process.exit called with "1"`), so the runner did not run or report every file — run
again without the file it happened in, and the next, so that the retry and the adjustment read
what the rest of the tests say, not one stack. The gate judges the stopped run as it is: what
the runs without those files found only adds failing tests and a closing section to it."""

from __future__ import annotations

from collections.abc import Sequence

from agent.gate.testreport.failures import failure_lines
from agent.models import ValidationResult
from agent.run.context import StepState
from agent.run.landing.gate import run_in_scratch

MAX_STOPS = 10  # files left out, one more each time the run stops again
_BEHIND_CHARS = 3000  # the later run's failure lines the closing section shows


def past_stops(state: StepState, validation: ValidationResult, attempt_id: int) -> ValidationResult:
    """`validation` with what the test command says with the test files that stopped it left
    out, one more each time it stops again: at most MAX_STOPS runs, and none begun once those
    runs took as long as one test run may (`testing.timeout`); each recorded under the
    attempt. As it is when no test file stopped it."""
    left_out: list[str] = []
    later = validation
    reference = state.run_context.accepted
    spent_ms, allowed_ms = 0, state.run_context.config.testing.timeout * 1000
    while len(left_out) < MAX_STOPS and spent_ms < allowed_ms:
        path = stopping_file(later, reference)
        if path is None or path in left_out:
            break
        left_out.append(path)
        later = _run_without(state, left_out, attempt_id)
        spent_ms += later.duration_ms
    return behind(validation, later, left_out) if left_out else validation


def stopping_file(run: ValidationResult, reference: ValidationResult) -> str | None:
    """The test file in which a test ended the process running `run` (report.stopped_in),
    where the run before the step (`reference`) was reported; None after a timeout."""
    if run.timed_out or not reference.report.reported:
        return None
    return run.report.stopped_in


def behind(
    stopped: ValidationResult, later: ValidationResult, left_out: Sequence[str]
) -> ValidationResult:
    """`stopped` with the failing tests of the run without `left_out` (`later`) among its own,
    and a closing section saying what that run found."""
    files = ", ".join(left_out)
    if later.timed_out:
        found = "it timed out"
    elif later.report.stopped_in is not None or not later.report.reported:
        found = "it stopped too"
    elif not later.failing_tests:
        found = "every other test passed"
    else:
        found = f"these tests fail too: {', '.join(later.failing_tests)}"
    lines = failure_lines(later.test_output or "", _BEHIND_CHARS) if later.failing_tests else ""
    first, *then = left_out
    again = f"; without it, a test in {', then in '.join(then)} did too" if then else ""
    section = (
        f"\n\nA test in {first} ended the test process above, so the runner did not run or "
        f"report every test file{again}. Run again with {files} left out, {found}"
        + (f"\n{lines}" if lines else "")
    )
    return stopped.model_copy(
        update={
            "test_output": (stopped.test_output or "") + section,
            "failing_tests": list(dict.fromkeys([*stopped.failing_tests, *later.failing_tests])),
        }
    )


def _run_without(state: StepState, left_out: Sequence[str], attempt_id: int) -> ValidationResult:
    """The test command over the worktree as it is, in a scratch copy without `left_out`."""
    return run_in_scratch(state, dict.fromkeys(left_out), attempt_id, "left_out")
