"""The gate's verdict: whether a test run passes it (its files are agent.gate.gate_files).

A run passes when the repository's own tests say so: the command finished, the runner reported
(when it reported before), nothing that ran before disappeared or stopped running, no test that
passed fails, and the step's target tests were seen passing. Changes to existing tests are
allowed only where the caller says the step declared them (`allowed`), and are then listed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from agent.gate.testreport.files import file_in
from agent.models import GateVerdict, TestOutcome, ValidationResult

NOT_RUN: frozenset[TestOutcome] = frozenset({"skipped", "xfailed"})
LISTING_SOURCES = frozenset({"junit", "json", "names"})  # sources that name every test


Allowed = Callable[[str], bool]
"""Whether a change to this test id was declared; "" asks about tests without an id."""


def _nothing_allowed(test_id: str) -> bool:
    del test_id
    return False


def judge(
    reference: ValidationResult,
    current: ValidationResult,
    *,
    baseline: ValidationResult | None = None,
    targets: Sequence[str] = (),
    allowed: Allowed = _nothing_allowed,
    original: bool = False,
) -> GateVerdict:
    """The gate's verdict on `current`, against `reference` (the accepted state before the
    step) and `baseline` (before any step; default the reference). A declared, allowed change
    of a test lets it fail only in the `original` run (its old version over the new code): a
    target — a test the step must make pass — must pass in the step's own run, changed or not."""
    baseline = baseline or reference
    tally = _Tally(allowed)
    problems, changed = tally.problems, tally.changed
    if not current.timed_out:
        problems += _report_problems(reference, current)
    _accounting(reference, current, tally)
    weakened = bool(problems)
    if current.timed_out:
        limit = f" after {current.timeout_s:g} s" if current.timeout_s else ""
        problems.append(f"the test command timed out{limit} and was stopped")
    else:
        _failures(reference, baseline, current, tally)
        if current.report.incomplete:  # what did not run cannot be judged
            problems.append(f"not every test ran: {current.report.incomplete}")
    _targets(current, targets, tally if original else _Tally(_nothing_allowed, problems, changed))
    return GateVerdict(
        passed=not problems,
        problems=problems,
        weakened=weakened,
        changed_tests=list(dict.fromkeys(changed)),
    )


def _report_problems(reference: ValidationResult, current: ValidationResult) -> list[str]:
    counts = current.report.counts
    if counts is None:
        if reference.report.reported:
            return [
                f"the test run ended (exit code {current.exit_code}) before the test runner "
                "reported any result: something stopped the run early"
            ]
        return []
    if counts.collected == 0:
        return ["no test was collected or run"]
    return []


def _accounting(reference: ValidationResult, current: ValidationResult, tally: _Tally) -> None:
    """Tests that ran before must still run: none disappears or becomes skipped or xfail."""
    before, now = reference.report, current.report
    if before.source in LISTING_SOURCES and now.source in LISTING_SOURCES:
        # a file that could not be collected before runs when its tests do now
        gone = [
            t
            for t, o in before.outcomes.items()
            if t not in now.outcomes
            and not any(names(t, test) for test in now.outcomes)
            and not _failure_result(t, o, now.outcomes)
        ]
        hidden = [
            t
            for t, o in now.outcomes.items()
            if o in NOT_RUN and before.outcomes.get(t, o) not in NOT_RUN
        ]
        tally.sort(gone, "no longer ran (deleted, renamed or deselected)")
        tally.sort(hidden, "ran before and are now skipped or marked xfail")
        return
    if before.counts is None or now.counts is None or current.timed_out:
        return
    drops = []
    if now.counts.collected < before.counts.collected:
        drops.append(
            f"fewer tests ran than before ({before.counts.collected} → {now.counts.collected})"
        )
    if now.counts.not_run > before.counts.not_run:
        drops.append(
            f"more tests were skipped or marked xfail than before "
            f"({before.counts.not_run} → {now.counts.not_run})"
        )
    for drop in drops:
        (tally.changed if tally.allowed("") else tally.problems).append(drop)


def _failure_result(test_id: str, before: TestOutcome, now: Mapping[str, TestOutcome]) -> bool:
    """Whether `test_id` was a failure's own result, gone with the failure: it failed before
    and a test holding it runs now. tap names an error thrown in a subtest as a result of its
    own (`range parsing > 1.2.3a > Invalid comparator: 1.2.3a`), and jest's default reporter
    names a passing file alone; neither is a test that stopped running."""
    return before in ("failed", "error") and any(
        test != test_id and names(test, test_id) and outcome not in NOT_RUN
        for test, outcome in now.items()
    )


@dataclass
class _Tally:
    """What a verdict finds as it goes: problems, and the changed tests the step declared
    (`allowed`) that are therefore listed rather than refused."""

    allowed: Allowed
    problems: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    def sort(self, tests: Iterable[str], what: str) -> None:
        """Allowed tests go to `changed`; the others make one problem naming them."""
        refused: list[str] = []
        for test in tests:
            (self.changed if self.allowed(test) else refused).append(test)
        if refused:
            self.problems.append(f"{len(refused)} test(s) {what}: {_listing(refused)}")


def _failures(
    reference: ValidationResult,
    baseline: ValidationResult,
    current: ValidationResult,
    tally: _Tally,
) -> None:
    """No test that passed before fails — whatever the exit code says: a command that hides
    its runner's status (`pytest; echo done`) still fails the step on a test its runner
    reports failed; a failure must name its tests."""
    passed_before = set(reference.passed_tests)
    if current.success:
        regressed = [t for t in current.failing_tests if t in passed_before]
        tally.sort(regressed, "passed before and now fail (though the test command exited 0)")
        return
    if not current.failing_tests:
        tally.problems.append(
            f"the tests failed (exit code {current.exit_code}) without naming a failing test"
        )
        return
    if reference.success and not reference.failing_tests:
        passed_before |= set(current.failing_tests)  # everything passed before
    old = set(baseline.failing_tests)
    newly = [t for t in current.failing_tests if t not in old or t in passed_before]
    tally.sort(newly, "fail that did not fail before")


def _targets(current: ValidationResult, targets: Sequence[str], tally: _Tally) -> None:
    """Every target test was seen passing: a target that no longer exists does not pass."""
    failing = [t for t in targets if any(names(t, f) for f in current.failing_tests)]
    tally.sort(failing, "the step must make pass still fail")
    if current.timed_out:
        return
    seen = current.passed_tests
    listed = current.report.source in LISTING_SOURCES or bool(seen)
    named = [*seen, *current.failing_tests, *current.report.outcomes]
    by_file = any(_FILE_ID.match(test) for test in named)  # the runner names files in its ids
    missing = [
        t
        for t in targets
        if listed
        and t not in failing
        and not any(names(t, s) or _in_file(t, s) or _whole_file(s, t) for s in seen)
        and (by_file or not _FILE_TARGET.match(t))
    ]
    tally.sort(missing, "the step must make pass did not run")


# A test id that starts with its file (pytest's tests/test_x.py::test_y, jest's and vitest's
# tests/a.test.ts > suite > name), and a target that is a file: cargo, go, node's and
# unittest's ids do not name their files, and a file target cannot be looked for among them.
_CODE_FILE = (
    r"[\w./@+-]*\.(?:py|js|cjs|mjs|jsx|ts|cts|mts|tsx|rs|go|rb|java|kt|php|cs|c|cc|"
    r"cpp|swift|ex|exs)"
)
_FILE_ID = re.compile(_CODE_FILE + r"(?:::|\[| [>›] |$)")  # not cargo's `src/lib.rs - f (line 3)`
_FILE_TARGET = re.compile(_CODE_FILE + r"$")


def _in_file(target: str, test_id: str) -> bool:
    """Whether `test_id` is a test of the file `target` by its module (unittest's ids)."""
    return bool(_FILE_TARGET.match(target)) and file_of_test(test_id, [target]) is not None


def _whole_file(passed: str, target: str) -> bool:
    """Whether `passed` is a file that passed as a whole, holding `target`: jest's and vitest's
    default reporters name a passing file alone (`PASS tests/a.test.js`), not its tests."""
    return bool(_FILE_TARGET.match(passed)) and target.startswith(passed + " > ")


def _listing(tests: Sequence[str], cap: int = 10) -> str:
    shown = ", ".join(tests[:cap])
    return shown + (f" and {len(tests) - cap} more" if len(tests) > cap else "")


def names(target: str, test_id: str) -> bool:
    """True when `target` is `test_id` or a file, class or parent test that contains it."""
    return test_id == target or any(
        test_id.startswith(target + sep) for sep in ("::", "[", "/", ".", " > ", " › ")
    )


def file_of_test(
    test_id: str, files: Iterable[str], tied: Mapping[str, str] | None = None
) -> str | None:
    """Which of `files` holds the test `test_id` (pytest, unittest — `test_x (mod.Case.test_x)`
    as `unittest -v` names it too — and path-prefixed ids), or, for an id that names no file,
    the file the test runs compared tie it to (`tied`: agent.gate.testreport.files)."""
    verbose = _UNITTEST_VERBOSE.fullmatch(test_id)
    dotted = verbose.group(1) if verbose else test_id
    files = list(files)
    for path in files:
        module = str(PurePosixPath(path).with_suffix("")).replace("/", ".")
        if names(path, test_id) or dotted.startswith(module + ".") or dotted == module:
            return path
    placed = file_in(test_id, tied) if tied else None
    return placed if placed in files else None


_UNITTEST_VERBOSE = re.compile(r"\w+ \(([\w.]+)\)")


def rejection_text(
    problems: Sequence[str], *, original: bool = False, weakened: bool = False
) -> str:
    """What the model reads when the gate rejects its edits; with `weakened`, why changing
    the tests is not the way."""
    where = (
        " when the original test files were run against your code (your changes to "
        "tests and test configuration set aside)"
        if original
        else ""
    )
    listed = "\n".join(f"- {p}" for p in problems)
    advice = (
        (
            "\nThe existing tests define the expected behaviour. Do not delete, empty, skip, "
            "xfail or deselect them, do not change the expected output of existing doctest "
            "examples, and do not change test configuration (conftest.py, pytest.ini, tox.ini, "
            "setup.cfg/pyproject.toml test sections, package.json scripts, Cargo.toml's test "
            "parts, .cargo/config.toml), cra.toml, or how pytest runs from the code under test "
            "(pytest imports, patches, hooks or plugins). Fix the source code so that the tests "
            "pass; adding new tests is welcome."
        )
        if original or weakened
        else ""
    )
    return f"The test gate rejected your edits{where}:\n{listed}{advice}"
