"""jest's and vitest's test ids, read from their reporters' output: one form, the test's file
then its describe blocks then its name (`tests/a.test.js > math > adds`), however the runner
printed it.

jest's default reporter names a file (`PASS tests/a.test.js`) and its failing tests
(`● math › adds`, under the file); `--verbose` adds a tree of every test (`✓ adds (3 ms)`,
indented under its describe blocks). vitest names a test with its file (`✓ tests/a.test.ts >
math > adds 2ms`, `FAIL  tests/a.test.ts > math > adds`), or, under a file's line, with its
suites only (vitest 3) or by its name alone, indented (vitest 4: its suites unnamed, so not read).
Durations, counters and colours never reach an id. A file stands for its tests where the output
names none of them (jest's and vitest's default reporters list passing files only), and fails as
a whole where none of its tests is named failing (it could not run). Pure functions: lines in,
data out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from agent.gate.testreport.summaries import merge_outcome
from agent.gate.testreport.tap import SEPARATOR
from agent.models import TestOutcome

_JEST_SEPARATOR = " › "

# a test file as the runners print it, relative to their root
_FILE = r"[^\s>\[\]]+\.(?:[cm]?[jt]sx?|vue|svelte|astro)"
_TIMING = re.compile(r"(?:\s+\(\d+(?:\.\d+)?\s*m?s\)|\s+\d+(?:\.\d+)?\s*m?s)+$")
# jest: ` FAIL  tests/a.test.js (5.2 s)`
_JEST_FILE = re.compile(rf"^\s*(?P<state>PASS|FAIL)\s+(?P<file>{_FILE})(?:\s+\([\d.]+ m?s\))?$")
_JEST_FAILURE = re.compile(r"^\s*● (?P<title>.+)$")
_JEST_SUITE_ERROR = "Test suite failed to run"
# jest --verbose: a describe block's name, or a test with its mark, 2 spaces a level
_JEST_TREE = re.compile(r"^(?P<indent>(?:  )+)(?:(?P<mark>[✓✕○✎√×]) )?(?P<name>\S.*)$")
_JEST_MARKS: dict[str, TestOutcome] = {
    "✓": "passed",
    "√": "passed",
    "✕": "failed",
    "×": "failed",
    "○": "skipped",
    "✎": "skipped",
}
_JEST_PREFIXES = ("skipped ", "todo ")  # `○ skipped roots`, `✎ todo lower`
# vitest: a file's line `❯ tests/a.test.ts (5 tests | 1 failed) 8ms`
_VITEST_FILE = re.compile(
    rf"^(?P<indent>\s*)(?P<mark>[✓❯×↓]) (?P<file>{_FILE})\s+\(\d+ tests?\b[^)]*\)(?:\s+\S+)?$"
)
_VITEST_TEST = re.compile(r"^(?P<indent>\s*)(?P<mark>[✓×↓□❯]) (?P<name>\S.*)$")
_VITEST_MARKS: dict[str, TestOutcome] = {
    "✓": "passed",
    "×": "failed",
    "❯": "failed",
    "↓": "skipped",
    "□": "skipped",
}
# vitest's failures: `FAIL  tests/a.test.ts > math > adds`, a file that could not run:
# `FAIL  tests/a.test.ts [ tests/a.test.ts ]`
_VITEST_FAIL = re.compile(rf"^\s*FAIL\s+(?P<file>{_FILE})(?: \[ [^\]]* \]|(?P<rest> > .+))$")


def js_test_id(file: str, titles: Iterable[str]) -> str:
    """The id of a test: its file, its describe blocks and its name (jest's ` › ` read as the
    separator it stands for)."""
    parts = [t.strip().replace(_JEST_SEPARATOR, SEPARATOR) for t in titles]
    return SEPARATOR.join([file, *(p for p in parts if p)])


def js_outcomes(lines: Sequence[str]) -> dict[str, TestOutcome] | None:
    """Every test jest's or vitest's output names, by id, with its outcome (the worst, when
    named twice); None when the output shows neither runner's file or test lines."""
    reading = _Reading()
    for line in lines:
        reading.read(line)
    if not reading.files and not reading.tests:
        return None
    return reading.outcomes()


@dataclass
class _Reading:
    """The output read so far: each file's state, the tests named, and where a line is."""

    files: dict[str, TestOutcome] = field(default_factory=dict)
    tests: dict[str, TestOutcome] = field(default_factory=dict)
    file: str | None = None  # the file the lines now belong to
    jest: bool = False  # the file's line was jest's: its tree and failures follow
    indent: int = 0  # the indent of vitest's file line
    suites: list[str] = field(default_factory=list)  # jest's describe blocks, by depth

    def read(self, line: str) -> None:
        if not line.strip():
            self.suites = []
            return
        for reader in (self._jest_file, self._vitest_file, self._vitest_fail, self._jest_line):
            if reader(line):
                return
        self._vitest_line(line)

    def outcomes(self) -> dict[str, TestOutcome]:
        found = dict(self.tests)
        for file, state in self.files.items():
            mine = [o for t, o in self.tests.items() if t.startswith(file + SEPARATOR)]
            if (state == "failed" and "failed" not in mine) or (state == "passed" and not mine):
                merge_outcome(found, file, state)
        return found

    def _name(self, test_id: str, outcome: TestOutcome) -> None:
        merge_outcome(self.tests, test_id, outcome)

    def _jest_file(self, line: str) -> bool:
        match = _JEST_FILE.match(line)
        if match:
            self._enter(match["file"], "passed" if match["state"] == "PASS" else "failed")
            self.jest = True
        return bool(match)

    def _vitest_file(self, line: str) -> bool:
        match = _VITEST_FILE.match(line)
        if match:
            state = _VITEST_MARKS[match["mark"]]
            self._enter(match["file"], state)
            self.indent = len(match["indent"])
        return bool(match)

    def _enter(self, file: str, state: TestOutcome) -> None:
        merge_outcome(self.files, file, state)
        self.file, self.jest, self.suites = file, False, []

    def _vitest_fail(self, line: str) -> bool:
        match = _VITEST_FAIL.match(line)
        if not match:
            return False
        if match["rest"]:
            self._name(js_test_id(match["file"], match["rest"].split(SEPARATOR)), "failed")
        else:
            merge_outcome(self.files, match["file"], "failed")
        self.file = None
        return True

    def _jest_line(self, line: str) -> bool:
        if not (self.jest and self.file):
            return False
        failure = _JEST_FAILURE.match(line)
        if failure:
            title = failure["title"].strip()
            if title != _JEST_SUITE_ERROR and not title.startswith("Console"):
                self._name(js_test_id(self.file, title.split(_JEST_SEPARATOR)), "failed")
            return True
        tree = _JEST_TREE.match(line)
        if tree:
            self._jest_tree(len(tree["indent"]) // 2 - 1, tree["mark"], tree["name"])
        return True

    def _jest_tree(self, depth: int, mark: str | None, name: str) -> None:
        """A line of jest's verbose tree: a describe block's name, or a test under them."""
        assert self.file is not None
        if depth > len(self.suites):  # not a tree: a failure's message or a console block
            return
        del self.suites[depth:]
        if mark is None:
            self.suites.append(name)
            return
        name = _TIMING.sub("", name)
        if mark in "○✎":
            name = next((name[len(p) :] for p in _JEST_PREFIXES if name.startswith(p)), name)
        self._name(js_test_id(self.file, [*self.suites, name]), _JEST_MARKS[mark])

    def _vitest_line(self, line: str) -> None:
        """A vitest test line: named with its file, or with its suites under its file's line
        (one level in: deeper lines are vitest 4's tree, which leaves its suites unnamed)."""
        match = _VITEST_TEST.match(line)
        if not match or self.jest:
            return
        name = _TIMING.sub("", match["name"])
        outcome = _VITEST_MARKS[match["mark"]]
        parts = name.split(SEPARATOR)
        if len(parts) > 1 and re.fullmatch(_FILE, parts[0]):
            self._name(js_test_id(parts[0], parts[1:]), outcome)
        elif self.file and len(match["indent"]) == self.indent + 2 and match["mark"] != "❯":
            self._name(js_test_id(self.file, parts), outcome)


# a file's outcome from its tests': a failure or error fails it, else a passing test passes it
_FILE_WORST: tuple[TestOutcome, ...] = (
    "skipped",
    "xfailed",
    "passed",
    "xpassed",
    "failed",
    "error",
)


def with_files(
    outcomes: Mapping[str, TestOutcome], files: Iterable[str]
) -> Mapping[str, TestOutcome]:
    """`outcomes` with the outcome of each of `files` (ids naming a file alone) they name no
    outcome of but name tests of: the worst of its tests'. A reporter that lists only a passing
    file names the file by itself in one run and its tests (the failing ones) in another; this
    lets the two runs, or a task's ids and a run, share an id."""
    added: dict[str, TestOutcome] = {}
    for file in files:
        if file in outcomes or SEPARATOR in file:
            continue
        inside = [o for t, o in outcomes.items() if t.startswith(file + SEPARATOR)]
        if inside:
            added[file] = max(inside, key=_FILE_WORST.index)
    return {**outcomes, **added} if added else outcomes
