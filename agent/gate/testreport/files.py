"""Which file each test is in, where its id does not say: read from a run's output, kept across
the runs of one worktree, and looked up by a test's id or by its suite's. Pure functions.

node's test runner, mocha's spec reporter, tape and ava name a test by its suites and name alone
(`ints > deep add`, `calc › mul`), but a failure shows where its test is: node's TAP `location:`,
tape's `at:`, the spec reporter's `test at test/calc.test.js:4:1`, a failure's stack
(agent.gate.testreport.frames), ava's `test/calc.js:3`. A test that passes shows nothing; it is
tied to its file when another run of the same worktree tied the same id (the run before a fix,
where it failed), or when the tests of its suite or parent test were all tied to one file.
A run in which a test ended the test process is placed whole (`stopped_in`): the test file of
the stack under jest's `● process.exit called with`, or of the last stack of a run the runner
never reported.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from agent.gate.testreport.ava import ava_files, is_ava
from agent.gate.testreport.frames import frame_of_test, relative
from agent.gate.testreport.mocha import is_mocha, mocha_files
from agent.gate.testreport.tap import SEPARATOR, spec_files, tap_files
from agent.models import TestReport
from agent.retrieval.indexing.scan import is_test_path

_SEPARATORS = (SEPARATOR, " › ")  # between a suite's name and its test's (ava: ` › `)


def files_of(lines: Sequence[str], runner: str | None, roots: Sequence[str]) -> dict[str, str]:
    """The file of each test the output places, by id, relative to the worktree (`roots`:
    where the host and the sandbox show it); a file outside the worktree is left out."""
    found = {
        test_id: rel
        for test_id, path in _placed(lines, runner).items()
        if (rel := relative(path, roots)) is not None
    }
    return found


def stopped_in(lines: Sequence[str], roots: Sequence[str], *, reported: bool) -> str | None:
    """The test file a test ended the test process in, relative to the worktree: the stack
    under jest's `● process.exit called with "1"` (the runner may still report, without the
    files it had not run), or, for a run its runner never reported, the test frame of the
    output's last stack. None when no such stack reaches a test file."""
    exits = [i for i, line in enumerate(lines) if _PROCESS_EXIT.search(line)]
    if exits:
        block = lines[exits[-1] + 1 :]
        end = next((i for i, line in enumerate(block) if _BLOCK_END.match(line)), len(block))
        lines = block[:end]
    elif reported:
        return None
    path = frame_of_test(lines)
    rel = relative(path, roots) if path is not None else None
    return rel if rel is not None and is_test_path(rel) else None


_PROCESS_EXIT = re.compile(r"●\s+process\.exit called with")  # jest's, colours stripped
_BLOCK_END = re.compile(r"^\s*●|^(?:PASS|FAIL) |^Test Suites:")


def _placed(lines: Sequence[str], runner: str | None) -> dict[str, str]:
    """The file of each test the runner's output places, as it prints it."""
    if runner == "tap":
        return tap_files(lines)
    if runner == "node":
        return spec_files(lines)
    if runner == "js" and is_mocha(lines):
        return mocha_files(lines)
    return ava_files(lines) if runner is None and is_ava(lines) else {}


def tied_files(*reports: TestReport) -> dict[str, str]:
    """The files the reports of runs in the same worktree tie their tests to, together; an id
    they tie to different files is tied to none."""
    tied: dict[str, str] = {}
    torn: set[str] = set()
    for report in reports:
        for test_id, path in report.files.items():
            if tied.setdefault(test_id, path) != path:
                torn.add(test_id)
    return {t: path for t, path in tied.items() if t not in torn}


def file_in(test_id: str, tied: Mapping[str, str]) -> str | None:
    """The file `tied` places the test in: its own, else its nearest suite's or parent test's
    — the suite's own (node's TAP places a failed suite) or the one file every tied test of it
    is in. None when nothing places it, or its suite's tests are in different files."""
    if test_id in tied:
        return tied[test_id]
    for parent in _parents(test_id):
        if parent in tied:
            return tied[parent]
        under = {
            path for t, path in tied.items() if any(t.startswith(parent + s) for s in _SEPARATORS)
        }
        if under:
            return under.pop() if len(under) == 1 else None
    return None


def _parents(test_id: str) -> list[str]:
    """The ids of the suites or parent tests around a test, the nearest first."""
    cuts = sorted(i for sep in _SEPARATORS for i in _found(test_id, sep))
    return [test_id[:cut] for cut in reversed(cuts)]


def _found(text: str, sep: str) -> list[int]:
    """Where `sep` starts in `text`, every time."""
    found, at = [], text.find(sep)
    while at > 0:
        found.append(at)
        at = text.find(sep, at + 1)
    return found
