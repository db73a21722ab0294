"""The lines of a test run's output that show its failures, chosen from the whole output: a long
run's tail is often passing lines of another file, without the failure that matters.

A failure's block starts at a line a runner writes for a failing test — TAP's `not ok …` (node,
node-tap, tape) with the indented diagnostics under it, jest's `● suite › name`, vitest's
`FAIL  file > name`, mocha's `1) name` in its failure list, pytest's `____ test_x ____` section —
and runs until the next failure's start or the line that ends the runner's failure report; a
tape `not ok` keeps the `# name` comment tape printed above its test's assertions. Colours are
stripped first (a runner colours its lines when it sees a terminal or FORCE_COLOR). The blocks
are kept in the order the output has them — those of the tests asked for `first` before the
others, so that a budget cuts the others — each bounded, within a budget, and followed by the
runner's count lines (`Tests: 1 failed, 3 passed`, `# fail 1`, `1 failing`); an output without
any block falls back to its tail. Pure: text in, text out.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from agent.gate.testreport.summaries import is_count_line, without_colours
from agent.gate.testreport.tap import SEPARATOR

BLOCK_CHARS = 1_500  # of one failure, at most
COUNT_LINES = 8  # the runner's count lines shown after the blocks, at most (the last ones)
_TAP_NOT_OK = re.compile(r"^(?P<indent>\s*)not ok\b(?!.*#\s*(?:TODO|SKIP))", re.IGNORECASE)
_STARTS = (
    re.compile(r"^\s*● (?!Console\b)"),  # jest
    re.compile(r"^\s*FAIL\s+\S+ > "),  # vitest
    re.compile(r"^_{3,} .+ _{3,}$"),  # pytest
)
_MOCHA_LIST = re.compile(r"^\s*\d+ failing\b")  # mocha: its failure list follows
_MOCHA_FAILURE = re.compile(r"^\s{0,4}\d+\) \S")  # `  1) suite` in that list
_TAPE_NAME = re.compile(r"^# (?!Subtest:)\S")  # tape's `# name` above a test's assertions
_TAP_LINE = re.compile(r"^(?:not )?ok\b")
_LOOK_BACK = 200  # lines, for a tape test's name or a TAP parent's subtests
_ENDS = (
    re.compile(r"^(?:Test Suites|Tests|Snapshots|Time):"),  # jest's summary
    re.compile(r"^\s*Test Files\s"),  # vitest's summary
    re.compile(r"^\s*⎯{3,}"),  # vitest's rules
    re.compile(r"^={3,}"),  # pytest's short summary and end
    re.compile(r"^\s*(?:PASS|FAIL)\s+\S+\.[cm]?[jt]sx?\b(?!\s+>)"),  # jest's next file
)


def failure_lines(output: str, budget: int, *, first: Collection[str] = ()) -> str:
    """The failures' own lines of `output`, at most `budget` characters, those of the tests
    `first` names (test ids: `file > suite > name`, `file::name`) before the others; its tail
    when no failure's start is found."""
    lines = without_colours(output).strip("\n").split("\n")
    found = _blocks(lines)
    if not found:
        text = "\n".join(lines)
        return text if len(text) <= budget else "…\n" + text[-budget:]
    names = [_last_name(test) for test in first]
    blocks = sorted(
        (_bounded(_block_lines(lines, block)) for block in found),
        key=lambda text: not any(_names(name, _title(text)) for name in names),
    )
    counts = "\n".join(_count_lines(lines))
    if len(counts) + 1 > budget // 4:
        counts = ""
    shown = _within(blocks, budget - len(counts) - 1 if counts else budget)
    return f"{shown}\n{counts}" if counts else shown


def _within(blocks: Sequence[str], budget: int) -> str:
    """The blocks, in order, as many as `budget` holds (the first cut to it), and how many were
    left out."""
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
        and any(_TAP_NOT_OK.match(line) for line in lines[max(0, start - _LOOK_BACK) : start])
    )


def _bounded(block: Sequence[str]) -> str:
    text = "\n".join(block).strip("\n")
    return text if len(text) <= BLOCK_CHARS else text[:BLOCK_CHARS] + "\n…"


def _block_lines(lines: Sequence[str], block: tuple[int, int]) -> list[str]:
    """A block's lines, after the `# name` of its tape test."""
    start, end = block
    name = _tape_name(lines, start)
    return ([lines[name]] if name is not None else []) + list(lines[start:end])


def _tape_name(lines: Sequence[str], start: int) -> int | None:
    """Where the `# name` comment tape prints above a test's assertions is, for a `not ok` of
    the stream's top level: the nearest above it past TAP's own lines alone (`ok`, `not ok`,
    their YAML blocks, indented) — a TAP comment, at the line's start, never a `#` line inside
    a YAML block, nor node's `# Subtest:`."""
    if not lines[start].startswith("not ok"):
        return None
    for n in range(start - 1, max(start - _LOOK_BACK, 0) - 1, -1):
        if _TAPE_NAME.match(lines[n]):
            return n
        if lines[n][:1].strip() and not _TAP_LINE.match(lines[n]):
            return None
    return None


def _title(block: str) -> str:
    """The lines of a block that name its test: its first, the `not ok` under tape's `# name`,
    a mocha title's lines to its `name:` one."""
    lines = block.split("\n", 10)[:10]
    if _TAPE_NAME.match(lines[0]):
        return "\n".join(lines[:2])
    if _MOCHA_FAILURE.match(lines[0]):
        end = next((n for n, line in enumerate(lines) if line.endswith(":")), 0)
        return "\n".join(lines[: end + 1])
    return lines[0]


def _last_name(test_id: str) -> str:
    """The part of a test id that names the test: `a.js > suite > name` → name,
    `tests/test_x.py::TestY::test_z` → test_z, without a repeated name's ordinal (` #2`)."""
    return re.sub(r" #\d+$", "", test_id.rsplit("::", 1)[-1].rsplit(SEPARATOR, 1)[-1]).strip()


def _names(name: str, title: str) -> bool:
    return bool(name) and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", title) is not None


def _count_lines(lines: Sequence[str]) -> list[str]:
    """The runner's count lines, each once (a run repeated prints them again): the last
    COUNT_LINES of them."""
    found = [line.strip() for line in lines if is_count_line(line.rstrip())]
    return list(dict.fromkeys(found))[-COUNT_LINES:]
