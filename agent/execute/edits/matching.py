"""Where an edit's search text goes in a file: exact first, then the forgiving line matcher."""

from __future__ import annotations

import re

from agent.errors import PatchRejected
from agent.execute.edits.flexible import replace_lines
from agent.execute.edits.lines import ambiguous, line_ending, split_lines, with_eol

_WORD = re.compile(r"\w")
BOM = "\ufeff"


def replace_once(text: str, search: str, replacement: str) -> str:
    """`text` with the one match of `search` replaced: exact first, else the forgiving match
    (indentation, tabs, trailing spaces, blank lines, `...` elisions), unique or refused.

    The replacement is written with the file's line endings. PatchRejected when there is no
    match or more than one (its hint shows the matches or the closest region). A file's byte
    order mark belongs to its encoding, not to its first line: it is matched without and kept.
    """
    if text.startswith(BOM):
        if search.startswith(BOM):  # the model copied it: it is not part of either side
            search, replacement = search[len(BOM) :], replacement.removeprefix(BOM)
        return BOM + replace_once(text[len(BOM) :], search, replacement)
    if not search:
        if text:
            raise PatchRejected(
                "empty search on an existing non-empty file; quote the lines "
                "to replace, or pick a new file name to create a file"
            )
        return replacement
    eol = line_ending(text)
    starts = exact_starts(text, search)
    if len(starts) > 1:
        numbers = [text.count("\n", 0, start) + 1 for start in starts]
        raise ambiguous(len(starts), numbers, split_lines(text), "")
    if not starts:
        return replace_lines(text, search, replacement, eol)
    start, end = starts[0], starts[0] + len(search)
    if _past_trailing_space(text, end) != end:
        # The file's last matched line has trailing whitespace the search left out: the line
        # matcher knows whether the model kept that line (keep it whole) or rewrote it.
        try:
            return replace_lines(text, search, replacement, eol)
        except PatchRejected:
            if _last_line(replacement) != _last_line(search):
                end = _past_trailing_space(text, end)
    if not replacement:
        end = _deleted_line_end(text, start, end)
    elif end == len(text) and search.endswith("\n") and not replacement.endswith("\n"):
        replacement += "\n"  # the search's last line ended the file: keep its newline
    return text[:start] + with_eol(replacement, eol) + text[end:]


def exact_starts(text: str, search: str) -> list[int]:
    """Offsets of every occurrence of `search` that respects line and word boundaries."""
    found: list[int] = []
    start = text.find(search)
    while start != -1:
        if _aligned(text, search, start):
            found.append(start)
        start = text.find(search, start + 1)
    return found


def _aligned(text: str, search: str, start: int) -> bool:
    """False for an occurrence that would glue or split lines or words.

    A search opening with a newline quotes a blank line: that newline must begin a line, not
    end the previous one (else the replacement is glued onto it). One ending with a newline
    quotes a blank line after its last line. A search starting or ending inside a word
    (`total` in `total_count`) is not that word.
    """
    end = start + len(search)
    if search.startswith(("\n", "\r\n")) and start > 0 and text[start - 1] != "\n":
        return False
    if search.endswith("\n") and end < len(text) and not text.startswith(("\n", "\r\n"), end):
        return False
    if _WORD.match(search[0]) and start > 0 and _WORD.match(text[start - 1]):
        return False
    return not (_WORD.match(search[-1]) and end < len(text) and _WORD.match(text[end]))


def _last_line(text: str) -> str | None:
    """The last line of a search or replacement (None for an empty one)."""
    return text.replace("\r\n", "\n").split("\n")[-1] if text else None


def _past_trailing_space(text: str, end: int) -> int:
    """`end` moved over spaces and tabs that run to the end of the line: a search that stops
    before the file's trailing whitespace must not leave it behind the replacement."""
    stop = end
    while stop < len(text) and text[stop] in " \t":
        stop += 1
    return stop if stop == len(text) or text.startswith(("\n", "\r\n"), stop) else end


def _deleted_line_end(text: str, start: int, end: int) -> int:
    """Where a deletion ends: past the line ending when the match spans whole lines.

    The edit format drops the newline before </search>, so deleting whole lines would
    otherwise leave an empty line behind.
    """
    at_line_start = start == 0 or text[start - 1] == "\n"
    if at_line_start and text[end - 1] != "\n":
        for ending in ("\r\n", "\n"):
            if text.startswith(ending, end):
                return end + len(ending)
    return end
