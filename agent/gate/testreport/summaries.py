"""Test counts from the summary line a known runner prints (pytest, unittest, go test, cargo
test, jest, vitest, mocha, node's test runner, TAP's plan), and why a runner stopped early.
Pure functions: lines in, data out."""

from __future__ import annotations

import re
from collections.abc import Mapping

from agent.gate.testreport.cargo import cargo_incomplete, stable_doctest_names
from agent.gate.testreport.tap import (
    is_node_spec,
    is_tap,
    node_counts,
    tap_incomplete,
    tap_outcomes,
)
from agent.models import TestCounts, TestOutcome

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def without_colours(output: str) -> str:
    """A run's output without its ANSI colour codes (a runner colours when it sees a terminal
    or FORCE_COLOR)."""
    return _ANSI.sub("", output)


def output_lines(output: str) -> list[str]:
    """A run's output as lines: colours stripped, cargo's doc-test names made stable."""
    return stable_doctest_names([line.rstrip() for line in without_colours(output).splitlines()])


_PYTEST_SUMMARY = re.compile(
    r"^=*\s*(?P<body>(?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|"
    r"warnings?|rerun)(?:, )?)+|no tests ran)(?: in [\d.]+ ?s(?:econds)?\b.*)?\s*=*$"
)


_PYTEST_WORDS: Mapping[str, str] = {
    "passed": "passed",
    "failed": "failed",
    "error": "errors",
    "errors": "errors",
    "skipped": "skipped",
    "xfailed": "xfailed",
    "xpassed": "xpassed",
}


_UNITTEST_RAN = re.compile(r"^Ran (?P<n>\d+) tests? in ")


_UNITTEST_END = re.compile(r"^(?P<state>OK|FAILED)(?: \((?P<body>[^)]*)\))?$")


_UNITTEST_WORDS: Mapping[str, str] = {
    "failures": "failed",
    "errors": "errors",
    "skipped": "skipped",
    "expected failures": "xfailed",
    "unexpected successes": "xpassed",
}


_CARGO = re.compile(
    r"^test result: \w+\. (?P<p>\d+) passed; (?P<f>\d+) failed; (?P<i>\d+) ignored;"
)


_JEST = re.compile(r"^Tests:\s+(?P<body>.*?)(?P<total>\d+) total")


_VITEST = re.compile(r"^\s*Tests\s+(?P<body>\d+ \w+(?: \| \d+ \w+)*)\s+\((?P<total>\d+)\)")


_MOCHA = re.compile(r"^\s*(?P<n>\d+) (?P<word>passing|failing|pending)\b")


_GO_PACKAGE = re.compile(r"^(?P<state>ok|FAIL)\s+\S+\s+(?:[\d.]+s|\(cached\))")


_MOCHA_WORDS: Mapping[str, str] = {"passing": "passed", "failing": "failed", "pending": "skipped"}


_COUNTED = re.compile(r"(?P<n>\d+) (?P<word>[a-z]+(?: [a-z]+)?)")


_JS_WORDS: Mapping[str, str] = {
    "passed": "passed",
    "failed": "failed",
    "skipped": "skipped",
    "todo": "skipped",
    "pending": "skipped",
}


# TAP's counts: tape's and node's (`# pass  4`), node-tap's (`# failed 1 of 4 tests`)
_TAP_COUNTS = re.compile(r"^# (?:(?:tests|pass|fail) +\d+|failed \d+ of \d+ tests?)$")


def is_count_line(line: str) -> bool:
    """Whether a line (colours stripped) is one of a runner's count lines: pytest's last, jest's
    or vitest's `Tests`, mocha's `3 passing`, `1 failing`, TAP's `# pass 3`, `# fail 1`."""
    pytest = _PYTEST_SUMMARY.match(line)
    return bool(
        (pytest and " in " in line)
        or _JEST.match(line)
        or _VITEST.match(line)
        or _MOCHA.match(line)
        or _TAP_COUNTS.match(line)
    )


def _add(counts: dict[str, int], key: str, n: int) -> None:
    counts[key] = counts.get(key, 0) + n


def _pytest_counts(lines: list[str]) -> TestCounts | None:
    for line in reversed(lines):
        match = _PYTEST_SUMMARY.match(line)
        if match and (" in " in line or "no tests ran" in line):
            counts: dict[str, int] = {}
            for n, word in re.findall(r"(\d+) (\w+)", match["body"]):
                if word in _PYTEST_WORDS:
                    _add(counts, _PYTEST_WORDS[word], int(n))
            return TestCounts(**counts)
    return None


def _unittest_counts(lines: list[str]) -> TestCounts | None:
    ran = next((i for i in range(len(lines) - 1, -1, -1) if _UNITTEST_RAN.match(lines[i])), None)
    if ran is None:
        return None
    end = next((m for line in lines[ran + 1 :] if (m := _UNITTEST_END.match(line))), None)
    if end is None:
        return None
    total = int(_UNITTEST_RAN.match(lines[ran])["n"])  # type: ignore[index]
    counts: dict[str, int] = {}
    for part in (end["body"] or "").split(","):
        key, _, value = part.strip().partition("=")
        if key in _UNITTEST_WORDS and value.isdigit():
            _add(counts, _UNITTEST_WORDS[key], int(value))
    counts["passed"] = max(total - sum(counts.values()), 0)
    return TestCounts(**counts)


def _cargo_counts(lines: list[str]) -> TestCounts | None:
    found = [m for line in lines if (m := _CARGO.match(line))]
    if not found:
        return None
    return TestCounts(
        passed=sum(int(m["p"]) for m in found),
        failed=sum(int(m["f"]) for m in found),
        skipped=sum(int(m["i"]) for m in found),
    )


def _js_counts(lines: list[str]) -> TestCounts | None:
    for line in reversed(lines):
        match = _JEST.match(line) or _VITEST.match(line)
        if match:
            counts: dict[str, int] = {}
            for found in _COUNTED.finditer(match["body"]):
                word = found["word"].split()[0]
                if word in _JS_WORDS:
                    _add(counts, _JS_WORDS[word], int(found["n"]))
            return TestCounts(**counts)
    mocha = [m for line in lines if (m := _MOCHA.match(line))]
    if not mocha:
        return None
    counts = {}
    for line_match in mocha:
        _add(counts, _MOCHA_WORDS[line_match["word"]], int(line_match["n"]))
    return TestCounts(**counts)


def _go_counts(lines: list[str]) -> TestCounts | None:
    """`go test` without -v: one line per package, counted as one test each."""
    found = [m["state"] for line in lines if (m := _GO_PACKAGE.match(line))]
    if not found:
        return None
    return TestCounts(passed=found.count("ok"), failed=found.count("FAIL"))


def _node_spec_counts(lines: list[str]) -> TestCounts | None:
    return node_counts(lines) if is_node_spec(lines) else None


def _tap_counts(lines: list[str]) -> TestCounts | None:
    """Node's summary of its TAP stream, or the counts of the tests a planned TAP stream
    names."""
    if not is_tap(lines):
        return None
    counts = node_counts(lines)
    return counts if counts is not None else counts_of(tap_outcomes(lines))


def parse_counts(output: str) -> tuple[str, TestCounts] | None:
    """The runner and its counts from the last summary a known runner printed, or None."""
    return summary_of(output_lines(output))


def summary_of(lines: list[str]) -> tuple[str, TestCounts] | None:
    for runner, reader in (
        ("pytest", _pytest_counts),
        ("unittest", _unittest_counts),
        ("cargo", _cargo_counts),
        ("js", _js_counts),
        ("node", _node_spec_counts),
        ("tap", _tap_counts),
        ("go", _go_counts),
    ):
        counts = reader(lines)
        if counts is not None:
            return runner, counts
    return None


def why_incomplete(runner: str | None, lines: list[str]) -> str | None:
    """Why the runner stopped before running every test, as far as its output shows, or None."""
    if runner == "cargo":
        return cargo_incomplete(lines)
    if runner == "pytest":
        return pytest_incomplete(lines)
    return tap_incomplete(lines) if runner == "tap" else None


_PYTEST_STOPPED = re.compile(r"^!+ (?:[\w.]+: )?stopping after (?P<n>\d+) failures? !+$")


_PYTEST_COLLECTION = re.compile(r"^!+ Interrupted: (?P<n>\d+) errors? during collection !+$")


_PYTEST_TAIL_LINES = 400  # where pytest prints why it stopped: the end of its output


PYTEST_TAIL_CHARS = 40_000


def pytest_incomplete(lines: list[str]) -> str | None:
    """Why pytest stopped before running every test — at a number of failures (-x,
    --maxfail), or at errors while collecting (then it runs no test at all) — or None."""
    for line in reversed(lines[-_PYTEST_TAIL_LINES:]):
        if match := _PYTEST_STOPPED.match(line):
            return (
                f"pytest stopped after {match['n']} failing test(s) (-x or --maxfail): the "
                "tests after them did not run"
            )
        if match := _PYTEST_COLLECTION.match(line):
            return (
                f"pytest stopped at {match['n']} error(s) while collecting the tests, and "
                "ran none (--continue-on-collection-errors runs the others)"
            )
    return None


def counts_of(outcomes: Mapping[str, TestOutcome]) -> TestCounts:
    """Counts of a per-test outcome map."""
    counts: dict[str, int] = {}
    for outcome in outcomes.values():
        _add(counts, _COUNT_KEY[outcome], 1)
    return TestCounts(**counts)


_COUNT_KEY: Mapping[TestOutcome, str] = {
    "passed": "passed",
    "failed": "failed",
    "error": "errors",
    "skipped": "skipped",
    "xfailed": "xfailed",
    "xpassed": "xpassed",
}


_SEVERITY: Mapping[TestOutcome, int] = {
    "passed": 0,
    "xpassed": 1,
    "xfailed": 2,
    "skipped": 3,
    "failed": 4,
    "error": 5,
}


def merge_outcome(outcomes: dict[str, TestOutcome], test_id: str, outcome: TestOutcome) -> None:
    """Keep the worse outcome of a test reported twice (a call failure and a teardown error)."""
    known = outcomes.get(test_id)
    if known is None or _SEVERITY[outcome] > _SEVERITY[known]:
        outcomes[test_id] = outcome
