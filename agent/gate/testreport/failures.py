"""The lines of a test run's output that show its failures, chosen from the whole output: a long
run's tail is often passing lines of another file, without the failure that matters.

A failure's block starts at a line a runner writes for a failing test — TAP's `not ok …` (node,
node-tap, tape) with the indented diagnostics under it, jest's `● suite › name`, vitest's
`FAIL  file > name`, mocha's `1) name` in its failure list, pytest's `____ test_x ____` section —
and runs until the next failure's start or the line that ends the runner's failure report. The
blocks are kept in the order the output has them, each bounded, within a budget; an output
without any falls back to its tail. Pure: text in, text out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

BLOCK_CHARS = 1_500  # of one failure, at most
_TAP_NOT_OK = re.compile(r"^(?P<indent>\s*)not ok\b(?!.*#\s*(?:TODO|SKIP))", re.IGNORECASE)
_STARTS = (
    re.compile(r"^\s*● (?!Console\b)"),  # jest
    re.compile(r"^\s*FAIL\s+\S+ > "),  # vitest
    re.compile(r"^_{3,} .+ _{3,}$"),  # pytest
)
_MOCHA_LIST = re.compile(r"^\s*\d+ failing\b")  # mocha: its failure list follows
_MOCHA_FAILURE = re.compile(r"^\s{0,4}\d+\) \S")  # `  1) suite` in that list
_ENDS = (
    re.compile(r"^(?:Test Suites|Tests|Snapshots|Time):"),  # jest's summary
    re.compile(r"^\s*Test Files\s"),  # vitest's summary
    re.compile(r"^\s*⎯{3,}"),  # vitest's rules
    re.compile(r"^={3,}"),  # pytest's short summary and end
    re.compile(r"^\s*(?:PASS|FAIL)\s+\S+\.[cm]?[jt]sx?\b(?!\s+>)"),  # jest's next file
)


def failure_lines(output: str, budget: int) -> str:
    """The failures' own lines of `output`, at most `budget` characters; its tail when no
    failure's start is found."""
    lines = output.strip("\n").split("\n")
    blocks = [_bounded(lines[start:end]) for start, end in _blocks(lines)]
    if not blocks:
        text = output.strip("\n")
        return text if len(text) <= budget else "…\n" + text[-budget:]
    shown: list[str] = []
    used = 0
    for block in blocks:
        if used + len(block) > budget and shown:
            shown.append(f"… ({len(blocks) - len(shown)} more failure(s) left out)")
            break
        shown.append(block[: max(budget - used, 0)] if not shown else block)
        used += len(block) + 1
    return "\n".join(shown)


def _blocks(lines: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) of each failure's lines."""
    found: list[tuple[int, int]] = []
    mocha = False  # in mocha's failure list
    n = 0
    while n < len(lines):
        mocha = mocha or bool(_MOCHA_LIST.match(lines[n]))
        end = _block_end(lines, n, mocha)
        if end is None:
            n += 1
            continue
        found.append((n, end))
        n = end
    return [b for b in found if not _tap_parent(lines, b)]


def _block_end(lines: Sequence[str], start: int, mocha: bool) -> int | None:
    """Where the failure starting at `start` ends, or None when no failure starts there."""
    line = lines[start]
    tap = _TAP_NOT_OK.match(line)
    if tap:
        depth = len(tap["indent"])
        end = start + 1
        while end < len(lines) and (
            not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > depth
        ):
            end += 1
        return end
    if not (any(p.match(line) for p in _STARTS) or (mocha and _MOCHA_FAILURE.match(line))):
        return None
    end = start + 1
    while end < len(lines) and not _starts_or_ends(lines[end], mocha):
        end += 1
    return end


def _starts_or_ends(line: str, mocha: bool) -> bool:
    return (
        bool(_TAP_NOT_OK.match(line))
        or any(p.match(line) for p in _STARTS)
        or (mocha and bool(_MOCHA_FAILURE.match(line)))
        or any(p.match(line) for p in _ENDS)
    )


def _tap_parent(lines: Sequence[str], block: tuple[int, int]) -> bool:
    """Whether a TAP `not ok` line only closes a parent test (a file, a suite) whose failing
    subtests, above it, carry the diagnostics: its block is that one line and a time."""
    start, end = block
    if not _TAP_NOT_OK.match(lines[start]):
        return False
    body = [line for line in lines[start + 1 : end] if line.strip()]
    return (
        not body
        and start > 0
        and any(_TAP_NOT_OK.match(line) for line in lines[max(0, start - 200) : start])
    )


def _bounded(block: Sequence[str]) -> str:
    text = "\n".join(block).strip("\n")
    return text if len(text) <= BLOCK_CHARS else text[:BLOCK_CHARS] + "\n…"
