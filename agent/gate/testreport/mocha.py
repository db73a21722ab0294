"""Test outcomes from mocha's spec reporter, its default.

The spec reporter prints a tree: each suite's name on a line of its own, its tests indented 2
spaces further (`✔ add`, `✔ slow one (81ms)`, `1) mul` for the first failure, `- div` for a
pending one), then `N passing (90ms)` and, when tests failed, each failure again under its
number (`1) calc` / `mul:` on the lines below) and its stack. A test's id is its name after
its suites' (`calc > ints > deep sub`), as mocha's `fullTitle` joins them, with no duration and
no failure number: the same test has the same id on every run. The spec reporter names a
test's file only in a failure's stack. Pure functions: lines in, data out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.gate.testreport.frames import frame_of_test
from agent.gate.testreport.tap import SEPARATOR, numbered
from agent.models import TestOutcome

_PASSING_SUMMARY = re.compile(r"^ *\d+ passing \(\d+(?:\.\d+)?m?s\)$")
_FAILING_SUMMARY = re.compile(r"^ *\d+ failing$")
_LINE = re.compile(r"^(?P<indent>(?:  )+)(?P<text>\S.*?)$")
_PASSED = re.compile(r"^[✔✓√] (?P<name>.+?)(?: \(\d+m?s\))?$")
_FAILED = re.compile(r"^\d+\) (?P<name>.+)$")
_PENDING = re.compile(r"^- (?P<name>.+)$")
# The failure list: `  1) calc` at 2 spaces, its suites and test deeper, the test ending with `:`.
_FAILURE = re.compile(r"^  \d+\) (?P<name>.+)$")


def is_mocha(lines: Sequence[str]) -> bool:
    """True when the output holds the summary of mocha's reporters (`6 passing (90ms)`)."""
    return any(_PASSING_SUMMARY.match(line) for line in lines)


def mocha_outcomes(lines: Sequence[str]) -> dict[str, TestOutcome]:
    """Every test the spec reporter's tree names, with its outcome; when the output has no tree
    (another reporter), the failures its failure list names."""
    end = next((i for i, line in enumerate(lines) if _PASSING_SUMMARY.match(line)), len(lines))
    tree = _tree(lines[:end])
    if any(outcome == "failed" for outcome in tree.values()):
        return tree
    return {**tree, **dict.fromkeys(_failure_list(lines[end:]), "failed")}


def _tree(lines: Sequence[str]) -> dict[str, TestOutcome]:
    """The tests of the spec reporter's tree by id. A line that is no test names a suite; a
    line at the left margin (a test's own console output) is not read."""
    suites: list[str] = []
    named: list[tuple[str, TestOutcome]] = []
    for line in lines:
        match = _LINE.match(line)
        if match is None:
            continue
        depth, text = len(match["indent"]) // 2 - 1, match["text"]
        del suites[depth:]
        test = _test(text)
        if test is None:
            suites.extend([""] * (depth - len(suites)))  # a suite deeper than its parent's
            suites.append(text)
        else:
            named.append((SEPARATOR.join([*filter(None, suites), test[0]]), test[1]))
    return numbered(named)


def _test(text: str) -> tuple[str, TestOutcome] | None:
    """A tree line's test name and outcome, or None for a suite's line."""
    marks: tuple[tuple[re.Pattern[str], TestOutcome], ...] = (
        (_PASSED, "passed"),
        (_FAILED, "failed"),
        (_PENDING, "skipped"),
    )
    for pattern, outcome in marks:
        if match := pattern.match(text):
            return match["name"], outcome
    return None


def mocha_files(lines: Sequence[str]) -> dict[str, str]:
    """The file of each test the failure list names, by id: the test function's frame in the
    stack below it (`at Context.<anonymous> (test/calc.js:4:28)`)."""
    return {
        test_id: where
        for test_id, text in _failures(lines)
        if (where := frame_of_test(text)) is not None
    }


def _failure_list(lines: Sequence[str]) -> list[str]:
    """The ids the failure list after `N failing` names."""
    return [test_id for test_id, _ in _failures(lines)]


def _failures(lines: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Each failure of the list after `N failing`, its id and the lines below it: `1) calc`,
    then each deeper line a suite, until the test's own, which ends with `:`."""
    start = next((i for i, line in enumerate(lines) if _FAILING_SUMMARY.match(line)), None)
    if start is None:
        return []
    found: list[tuple[str, list[str]]] = []
    parts: list[str] | None = None
    for line in lines[start + 1 :]:
        if match := _FAILURE.match(line):
            parts = [match["name"]]
        elif parts is not None and line.startswith("   ") and line.strip():
            parts.append(line.strip())
        elif found and parts is None:
            found[-1][1].append(line)
            continue
        else:
            continue
        if parts[-1].endswith(":"):
            found.append((SEPARATOR.join([*parts[:-1], parts[-1][:-1]]), []))
            parts = None
    return found
