"""What a replayed fix makes of its tests: FAIL_TO_PASS, PASS_TO_PASS, or why it cannot be a
task that any run could resolve.

FAIL_TO_PASS holds the tests of the fix's test files that ran and failed before the fix (or could
not be collected) and pass after it. A test that did not run before — the runner stopped early —
is neither: it is left out, and said so. PASS_TO_PASS holds the tests that passed both times and
again on a second run of the fixed code. A fix after which a test that passed before fails, and
fails again on the second run, is no task: the honest gate refuses a regression, whoever writes
the fix (a test that fails only once is flaky: it is left out of PASS_TO_PASS); nor is a fix
whose new tests pass only sometimes.

A test whose id names no file (node's test runner, mocha, tape, ava) is of the fix's test files
when a run places it there: its failure before the fix shows its file, and the same id passing
after it is the same test (`Runs.files`). A fix whose changed test files name no test of either
run changes data or helpers the tests read (a data-driven suite's case files, fixtures): its
FAIL_TO_PASS is then drawn from every test, and a note says so. When tests ran both times but
no test in that scope has the same id in both runs (an id that holds a time or a counter, or
names no file that any run places), no test can be said to go from failing to
passing: that is said by its own reason, with an id of each run, not taken for a fix that makes
no test pass (NO_TASK) or for a flaky one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from agent.gate import verdict as gate
from agent.gate.testreport.jsids import with_files
from agent.models import TestOutcome

FAILED: frozenset[TestOutcome] = frozenset({"failed", "error"})
NO_TASK = "no test goes from failing to passing"  # an ordinary commit, not a fix excluded
REGRESSION = "the fix makes tests that passed fail (the gate refuses a regression)"
UNTIED = (
    "no test of the changed test files could be tied before and after the fix (its id "
    "differs between the runs)"
)
DATA_FILES = (
    "the changed test files name no test of either run (data or helpers the tests read): "
    "the tests the fix makes pass are drawn from every test file"
)


@dataclass(frozen=True)
class Runs:
    """The outcomes of the replay's test runs: before the fix (its tests applied), after it,
    and after it once more; why a run stopped early, if it did."""

    before: Mapping[str, TestOutcome]
    after: Mapping[str, TestOutcome]
    again: Mapping[str, TestOutcome] | None = None
    before_stopped: str | None = None
    after_stopped: str | None = None
    # the file of each test whose id names none, as the runs placed it (a failure's location
    # before the fix ties the same test passing after it: agent.gate.testreport.files)
    files: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Verdict:
    """A candidate's tests sorted; `excluded` says why it is no task (None: it is one)."""

    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: list[str] = field(default_factory=list)
    excluded: str | None = None  # the reason, a fixed phrase (counted by the mining summary)
    detail: str = ""  # the tests behind the reason
    notes: list[str] = field(default_factory=list)


def sort_tests(runs: Runs, test_files: Sequence[str] | None) -> Verdict:
    """The verdict on a replay (see the module's docstring)."""
    verdict = Verdict()
    runs = aligned(runs)
    before, after = runs.before, runs.after
    broken = sorted(
        t
        for t, o in after.items()
        if o in FAILED
        and before.get(t) == "passed"
        and (runs.again is None or runs.again.get(t) in FAILED)
    )
    if broken:
        return _excluded(verdict, REGRESSION, broken)
    if not _names_a_test(runs, test_files):
        verdict.notes.append(DATA_FILES)
        test_files = None
    untied = None if runs.before_stopped else _untied(runs, test_files)
    if untied is not None:
        verdict.excluded, verdict.detail = UNTIED, untied
        return verdict
    unknown = sorted(
        t
        for t, o in after.items()
        if o == "passed" and t not in before and runs.before_stopped and not _uncollected(t, before)
    )
    if unknown:
        verdict.notes.append(
            f"{len(unknown)} test(s) did not run before the fix ({runs.before_stopped}): left out"
        )
    candidates = sorted(
        t
        for t, o in after.items()
        if o == "passed"
        and t not in unknown
        and _ours(t, test_files, runs)
        and (
            before.get(t) in FAILED
            or (t not in before and (not runs.before_stopped or _uncollected(t, before)))
        )
    )
    if runs.again is not None:
        flaky = [t for t in candidates if runs.again.get(t) != "passed"]
        if flaky:
            return _excluded(
                verdict,
                "a test the fix makes pass fails on a second run of the "
                "same code (it depends on the clock, the network or the machine)",
                flaky,
            )
    if not candidates:
        if unknown:
            return _excluded(
                verdict,
                "the test command stopped early before the fix: which "
                "tests the fix makes pass cannot be told",
                unknown,
            )
        return _excluded(verdict, NO_TASK, [])
    verdict.fail_to_pass = candidates
    verdict.pass_to_pass = sorted(
        t
        for t, o in after.items()
        if o == "passed" and before.get(t) == "passed" and _steady(t, runs)
    )
    return verdict


def aligned(runs: Runs) -> Runs:
    """The runs with a file's own id in each run where another names it alone: a reporter that
    lists only a passing file (jest's and vitest's default) names the file by itself in one
    run and its tests in the other (the failing ones, or every one), so the file's outcome in
    that other run — the worst of its tests' — is added, and the two runs share an id."""
    runs = replace(runs, before=with_files(runs.before, runs.after))
    runs = replace(runs, after=with_files(runs.after, runs.before))
    if runs.again is not None:
        runs = replace(runs, again=with_files(runs.again, runs.after))
    return runs


def _uncollected(test: str, before: Mapping[str, TestOutcome]) -> bool:
    """Whether the test's file (or a parent of it) failed to be collected before the fix."""
    return any(
        o in FAILED and gate.names(found, test) and found != test for found, o in before.items()
    )


def _names_a_test(runs: Runs, test_files: Sequence[str] | None) -> bool:
    """Whether a test of either run belongs to the changed test files."""
    return any(_ours(t, test_files, runs) for t in (*runs.before, *runs.after))


def _ours(test: str, test_files: Sequence[str] | None, runs: Runs) -> bool:
    """Whether `test` is in scope: of the changed test files (by its id, or where the runs
    place it), or any test (None)."""
    return test_files is None or gate.file_of_test(test, test_files, runs.files) is not None


def _untied(runs: Runs, test_files: Sequence[str] | None) -> str | None:
    """An id of each run, when tests ran before and after the fix but no test of the changed
    test files could be tied across them: none is in both runs or in a file that could not be
    collected before, and the changed files' tests did not merely first show after the fix
    (those are new tests, whose ids have nothing to be tied to). None otherwise."""
    if not runs.before or not runs.after:
        return None
    ours_before = [t for t in runs.before if _ours(t, test_files, runs)]
    ours_after = [t for t in runs.after if _ours(t, test_files, runs)]
    if ours_after and not ours_before:
        return None
    if any(t in runs.before or _uncollected(t, runs.before) for t in ours_after):
        return None
    return (
        f"before: {_example(runs.before, ours_before)}; after: {_example(runs.after, ours_after)}"
    )


def _example(outcomes: Mapping[str, TestOutcome], ours: Sequence[str]) -> str:
    """One test id of a run, one of the changed test files' when there is one."""
    return min(ours) if ours else min(outcomes)


def _steady(test: str, runs: Runs) -> bool:
    """Whether the test passed on the second run of the fixed code too (when there was one)."""
    return runs.again is None or runs.again.get(test) == "passed"


def _excluded(verdict: Verdict, reason: str, tests: Sequence[str], cap: int = 5) -> Verdict:
    shown = ", ".join(tests[:cap]) + (f" and {len(tests) - cap} more" if len(tests) > cap else "")
    verdict.excluded, verdict.detail = reason, shown
    return verdict
