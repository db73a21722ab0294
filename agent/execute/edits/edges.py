"""The blank lines at the edges of a forgivingly matched block: the file's own, or stray."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Edges:
    """A search block without the blank edge lines the file lacks, and its replacement without
    its copies of them.

    `cut` stray blank lines left the search's start (its line numbers move back by as many);
    the search's remaining `lead` and `trail` blank lines are the file's own, just before and
    after the matched code.
    """

    needle: list[str]
    replacement: list[str]
    cut: int
    lead: int
    trail: int


def blank_run(codes: Sequence[str], positions: range) -> int:
    """How many of the file lines at `positions`, in order, are blank before a code line."""
    count = 0
    for i in positions:
        if codes[i]:
            break
        count += 1
    return count


def settle_edges(needle: list[str], replacement: list[str], before: int, after: int) -> Edges:
    """The search's leading and trailing blank lines matched against the `before` and `after`
    blank lines the file has around the code they match.

    As many as the file has there are the file's, kept in the search so the replacement decides
    about them as it would after an exact match. The rest the file lacks at that place: they
    are cut from the search. Left in, a stray blank would be paired with a blank line the
    replacement has elsewhere, and the replacement's lines shifted around it.
    """
    lead, trail = _blanks(needle), _blanks(needle[::-1])
    stray_lead, stray_trail = max(0, lead - before), max(0, trail - after)
    kept = needle[stray_lead : len(needle) - stray_trail]
    new = mirrored(kept, replacement, stray_lead, stray_trail)
    return Edges(kept, new, stray_lead, lead - stray_lead, trail - stray_trail)


def mirrored(
    kept: list[str], replacement: list[str], stray_lead: int, stray_trail: int
) -> list[str]:
    """The replacement without its copies of the search's stray edge blank lines.

    Blank lines at the same edge of the replacement are copies when taking them as such pairs
    more of the two blocks' lines than taking them as lines the replacement adds; on a tie they
    are the replacement's own (a blank line of the file it keeps, or one it adds).
    """
    most_lead = min(stray_lead, _blanks(replacement))
    most_trail = min(stray_trail, _blanks(replacement[::-1]))
    best, best_score = replacement, _paired(kept, replacement)
    for cut_lead, cut_trail in ((most_lead, 0), (0, most_trail), (most_lead, most_trail)):
        if cut_lead + cut_trail == 0 or cut_lead + cut_trail > len(replacement):
            continue
        candidate = replacement[cut_lead : len(replacement) - cut_trail]
        score = _paired(kept, candidate) + cut_lead + cut_trail
        if score > best_score:
            best, best_score = candidate, score
    return best


def _paired(needle: list[str], replacement: list[str]) -> int:
    """How many lines of the two blocks a line diff pairs as unchanged."""
    matcher = difflib.SequenceMatcher(
        None,
        [line.rstrip() for line in needle],
        [line.rstrip() for line in replacement],
        autojunk=False,
    )
    return sum(block.size for block in matcher.get_matching_blocks())


def _blanks(lines: Sequence[str]) -> int:
    """How many lines open `lines` with nothing but whitespace."""
    return next((i for i, line in enumerate(lines) if line.strip()), len(lines))
