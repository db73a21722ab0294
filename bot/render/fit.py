"""Renderings cut to fit GitHub's size limits: whole units dropped in order, never mid-markup.

A rendering is a list of self-contained Markdown blocks built from cuttable sections (the diff
first, then test output, then adjustment details, then the plan); each section is cut as little
as needed, with a visible note.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from bot.render import markdown as md

PR_BODY_LIMIT = 65_536
CHECK_SUMMARY_LIMIT = 65_535
COMMENT_LIMIT = 65_536
LINE_MAX = 1_000  # characters of one line of a diff or test output


def size(text: str) -> int:
    """Length as GitHub may count it (UTF-16 units, never fewer than code points)."""
    return len(text.encode("utf-16-le")) // 2


def cut_to_size(text: str, cap: int) -> str:
    """The longest start of `text` whose size() is at most `cap`."""
    kept = text[:cap]
    while size(kept) > cap:
        kept = kept[: len(kept) - (size(kept) - cap)]
    return kept


@dataclass(frozen=True)
class Caps:
    """How many units of each cuttable section to keep (None: all of them)."""

    diff: int | None = None
    output: int | None = None
    adjustments: int | None = None
    plan: int | None = None


_CUT_ORDER = ("diff", "output", "adjustments", "plan")


def _with(caps: Caps, name: str, keep: int) -> Caps:
    return replace(caps, **{name: keep})


Render = Callable[[Caps], list[str]]


def _join(parts: Sequence[str]) -> str:
    return "\n\n".join(p for p in parts if p)


def fit_within(render: Render, units: Mapping[str, int], limit: int) -> str:
    """The rendering within `limit`, cutting sections in order, each as little as needed.

    A rendering is a list of self-contained blocks; should the cuts not suffice, only the
    leading blocks that fit are kept, so the text still never ends inside markup.
    """
    caps = Caps()
    text = _join(render(caps))
    for name in _CUT_ORDER:
        if size(text) <= limit:
            return text
        caps = _with(caps, name, _largest(render, caps, name, units.get(name, 0), limit))
        text = _join(render(caps))
    if size(text) <= limit:
        return text
    note = "… the rest did not fit here; see the run page."
    kept: list[str] = []
    for part in render(caps):
        if size(_join([*kept, part, note])) > limit:
            break
        kept.append(part)
    return _join([*kept, note])


def _largest(render: Render, caps: Caps, name: str, n: int, limit: int) -> int:
    """The most units (0..n) of section `name` that keep the rendering within `limit`."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if size(_join(render(_with(caps, name, mid)))) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


def bounded(items: Iterable[str], budget: int) -> list[str]:
    """The leading items up to the first one past `budget` characters (later ones never fit)."""
    kept: list[str] = []
    used = 0
    for item in items:
        kept.append(item)
        used += len(item) + 1
        if used > budget:
            break
    return kept


def verbatim_lines(text: str) -> list[str]:
    """Lines of a terminal's output (a carriage return starts a line again), each cut to
    LINE_MAX characters."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").splitlines()
    return [md.cut(line, LINE_MAX) for line in lines]


def tail(lines: Sequence[str], cap: int) -> list[str]:
    """The last lines within `cap` characters."""
    kept = bounded(reversed(lines), cap)
    if sum(len(line) + 1 for line in kept) > cap:
        kept.pop()
    return kept[::-1]
