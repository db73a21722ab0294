"""What a replayed fix makes of its tests: FAIL_TO_PASS, PASS_TO_PASS, or why it cannot be a
task that any run could resolve.

FAIL_TO_PASS holds the tests of the fix's test files that ran and failed before the fix (or could
not be collected) and pass after it. A test that did not run before — the runner stopped early —
is neither: it is left out, and said so. PASS_TO_PASS holds the tests that passed both times and
again on a second run of the fixed code. A fix after which a test that passed before fails, and
fails again on the second run, is no task: the honest gate refuses a regression, whoever writes
the fix (a test that fails only once is flaky: it is left out of PASS_TO_PASS); nor is a fix
whose new tests pass only sometimes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from agent.gate import verdict as gate
from agent.models import TestOutcome

FAILED: frozenset[TestOutcome] = frozenset({"failed", "error"})
NO_TASK = "no test goes from failing to passing"  # an ordinary commit, not a fix excluded
REGRESSION = "the fix makes tests that passed fail (the gate refuses a regression)"


@dataclass(frozen=True)
class Runs:
    """The outcomes of the replay's test runs: before the fix (its tests applied), after it,
    and after it once more; why a run stopped early, if it did."""

    before: Mapping[str, TestOutcome]
    after: Mapping[str, TestOutcome]
    again: Mapping[str, TestOutcome] | None = None
    before_stopped: str | None = None
    after_stopped: str | None = None


@dataclass
class Verdict:
    """A candidate's tests sorted; `excluded` says why it is no task (None: it is one)."""

    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: list[str] = field(default_factory=list)
    excluded: str | None = None  # the reason, a fixed phrase (counted by the mining summary)
    detail: str = ""  # the tests behind the reason
    notes: list[str] = field(default_factory=list)


def sort_tests(runs: Runs, test_files: Sequence[str]) -> Verdict:
    """The verdict on a replay (see the module's docstring)."""
    verdict = Verdict()
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
        and gate.file_of_test(t, test_files) is not None
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


def _uncollected(test: str, before: Mapping[str, TestOutcome]) -> bool:
    """Whether the test's file (or a parent of it) failed to be collected before the fix."""
    return any(
        o in FAILED and gate.names(found, test) and found != test for found, o in before.items()
    )


def _steady(test: str, runs: Runs) -> bool:
    """Whether the test passed on the second run of the fixed code too (when there was one)."""
    return runs.again is None or runs.again.get(test) == "passed"


def _excluded(verdict: Verdict, reason: str, tests: Sequence[str], cap: int = 5) -> Verdict:
    shown = ", ".join(tests[:cap]) + (f" and {len(tests) - cap} more" if len(tests) > cap else "")
    verdict.excluded, verdict.detail = reason, shown
    return verdict
