"""Failures of the original run that only the old versions of the changed test files cause:
a test of a file the step left alone that passed in the attempt's own run (the same code) but
fails beside the changed test files as they were — an old test that sets global state the new
code does not take (a lexer reconfigured through an API the fix changed) breaks every test run
after it. Such a test is cleared only when it passes in a run of the original gate files with
the changed test files left out, which no version of those files can sway.

The same holds for a whole run: an old test that drives the new code into ending the process
(`process.exit` on an argument the fix now refuses) stops the runner before it reports anything.
When the run with the changed test files left out reports to its end, the stop is theirs: their
tests count as failing, judged like any failure of an old test (allowed only where declared)."""

from __future__ import annotations

from collections.abc import Sequence

from agent.gate.testreport.files import tied_files
from agent.gate.verdict import file_of_test
from agent.models import ValidationResult


def suspects(
    original: ValidationResult, attempt: ValidationResult, changed_tests: Sequence[str]
) -> list[str]:
    """The original run's failures outside the changed test files that passed in the
    attempt's own run: only the old versions of the changed test files differ between them."""
    if not changed_tests or original.timed_out:
        return []
    passed = set(attempt.passed_tests)
    tied = tied_files(original.report, attempt.report)  # ids that name no file, placed
    return [
        test
        for test in original.failing_tests
        if file_of_test(test, changed_tests, tied) is None and test in passed
    ]


def cleared(
    original: ValidationResult, alone: ValidationResult, suspected: Sequence[str]
) -> ValidationResult:
    """The original run with the suspects that pass without the changed test files counted
    as passed; the others stay failures, judged as before."""
    if alone.timed_out:
        return original
    passed = set(alone.passed_tests)
    passing = [t for t in suspected if t in passed]
    if not passing:
        return original
    failing = [t for t in original.failing_tests if t not in passing]
    outcomes = {
        test: "passed" if test in passing else outcome
        for test, outcome in original.report.outcomes.items()
    }
    return original.model_copy(
        update={
            "success": original.success or (not failing and _only_tests_failed(original)),
            "failing_tests": failing,
            "passing_tests": list(dict.fromkeys([*original.passing_tests, *passing])),
            "report": original.report.model_copy(update={"outcomes": outcomes}),
        }
    )


def _only_tests_failed(result: ValidationResult) -> bool:
    """Whether the run's failing exit is its failing tests' alone (no collection error, no
    incomplete run): clearing every failing test then makes it a passing run."""
    return bool(result.failing_tests) and result.report.incomplete is None


def stopped(
    original: ValidationResult, attempt: ValidationResult, changed_tests: Sequence[str]
) -> bool:
    """Whether the original run stopped — its runner did not report to the end, or a test
    ended its process (`report.stopped_in`) — where the attempt's own run (the same code, the
    new test files) did not: only the old versions of the changed test files differ between
    them."""
    if not changed_tests or original.timed_out or original.success:
        return False
    mine, theirs = attempt.report, original.report
    ran_through = mine.reported and mine.incomplete is None and mine.stopped_in is None
    return ran_through and (
        not theirs.reported or theirs.incomplete is not None or theirs.stopped_in is not None
    )


def stopped_by(
    original: ValidationResult,
    alone: ValidationResult,
    reference: ValidationResult,
    changed_tests: Sequence[str],
) -> ValidationResult | None:
    """The stopped `original` run as its changed test files' failure: the run without them
    (`alone`), with their tests as the run before the step (`reference`) names them — or, where
    it names none, the files themselves — failing, and the stopped run's output after its own.
    None when the run without them did not report to its end either: the stop is then not
    theirs alone."""
    report = alone.report
    if alone.timed_out or report.counts is None or report.incomplete or report.stopped_in:
        return None
    tied = reference.report.files
    known = [*reference.report.outcomes, *reference.passing_tests, *reference.failing_tests]
    theirs = [t for t in dict.fromkeys(known) if file_of_test(t, changed_tests, tied) is not None]
    failing = [t for t in theirs or changed_tests if t not in report.outcomes]
    counts = report.counts.model_copy(update={"failed": report.counts.failed + len(failing)})
    return alone.model_copy(
        update={
            "success": False,
            "test_output": f"{alone.test_output or ''}\n\nWith the changed test files as they "
            f"were, the run stopped:\n{original.test_output or ''}",
            "failing_tests": list(dict.fromkeys([*alone.failing_tests, *failing])),
            "report": report.model_copy(
                update={
                    "counts": counts,
                    "outcomes": {**report.outcomes, **dict.fromkeys(failing, "failed")},
                }
            ),
        }
    )
