"""Where a failure's text places its test: the stack frame of the test function, and a path
as the runner printed it made relative to the worktree. Pure functions: text in, data out.

A JavaScript stack lists the frame that threw first and the runner's own frames last
(`at exports.pow (lib/calc.js:4:33)`, `at Context.<anonymous> (test/calc.js:9:47)`,
`at process.processImmediate (node:internal/timers:483:21)`): the test function is the
outermost frame that is neither node's (`node:…`) nor a package's (`node_modules/…`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence

# `at fn (path:1:2)`, `at path:1:2`, `at async fn (file:///path:1:2)`, and node's TAP stack
# lines, which have no `at`.
_FRAME = re.compile(
    r"^\s*(?:at:?\s+)?(?:async\s+)?(?:[^()]*?\s\()?(?P<path>[^\s()]+?):\d+:\d+\)?\s*$"
)
_NOT_THE_TESTS = ("node:", "internal/", "<anonymous>", "native")


def frame_path(line: str) -> str | None:
    """The file of a stack frame's line (`at fn (test/x.js:3:5)`), or None."""
    match = _FRAME.match(line)
    return match["path"] if match else None


def frame_of_test(lines: Iterable[str]) -> str | None:
    """The file of the test function in a stack: its outermost frame outside node and the
    packages; None when there is none."""
    found = None
    for line in lines:
        path = frame_path(line)
        if path is not None and _ours(path):
            found = path
    return found


def _ours(path: str) -> bool:
    bare = path.removeprefix("file://")
    return not bare.startswith(_NOT_THE_TESTS) and "/node_modules/" not in f"/{bare}"


_LINE_AND_COLUMN = re.compile(r"(?::\d+){1,2}$")


def without_position(where: str) -> str:
    """`test/x.js:3:5` → `test/x.js` (a location's line and column)."""
    return _LINE_AND_COLUMN.sub("", where)


def relative(path: str, roots: Sequence[str]) -> str | None:
    """`path` as the runner printed it, relative to the worktree: a relative path as it is
    (the test command runs at the worktree's root), an absolute one when it lies under one of
    `roots` (where the host or the sandbox shows the worktree); None for a path outside it."""
    path = path.removeprefix("file://")
    if not path.startswith("/"):
        rel = posixpath.normpath(path)
        return None if rel == ".." or rel.startswith("../") else rel
    path = posixpath.normpath(path)
    for root in sorted((posixpath.normpath(r) for r in roots), key=len, reverse=True):
        if path.startswith(root.rstrip("/") + "/"):
            return path[len(root.rstrip("/")) + 1 :]
    return None
