"""The forgiving matcher: lines compared without their indentation, trailing spaces or blank
lines, `...` elisions placed piece by piece; used only when the match is unique and the
indentation maps consistently, and the file's own lines kept wherever the model kept its.
Blank lines at a block's edges that the file lacks there are no part of the match (`edges`)."""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from agent.errors import PatchRejected
from agent.execute.edits.edges import blank_run, settle_edges
from agent.execute.edits.lines import (
    ambiguous,
    block_lines,
    closest_region,
    is_elision,
    not_found,
    split_lines,
)

TAB_WIDTHS = (4, 8, 2)  # columns per tab tried, in order, when tabs meet spaces
_MAX_CANDIDATES = 400  # windows per elided piece considered when placing the pieces


@dataclass(frozen=True)
class Window:
    """A match: file lines [start, end) and (search line, file line) for every code line.

    Lines of the window before its first code line and after its last are blank lines of the
    file that the search quotes at its edges."""

    start: int
    end: int
    pairs: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Piece:
    """One matched part of the search, where it matched, and what replaces it."""

    window: Window
    needle: list[str]
    replacement: list[str]


def columns(indent: str, tab: int) -> int:
    """The width of an indentation with tabs `tab` columns wide."""
    return sum(tab if char == "\t" else 1 for char in indent)


def indent_of(line: str) -> str:
    """The leading spaces and tabs of `line`."""
    return line[: len(line) - len(line.lstrip(" \t"))]


@dataclass(frozen=True)
class Indent:
    """How the search's indentation maps onto the file's: a tab's width, the column offset,
    and the style to write changed lines in (None: as the model wrote them)."""

    tab: int = 4
    offset: int = 0
    style: str | None = None

    def render(self, line: str) -> str | None:
        """A replacement line in the file's indentation; None when it would go left of column 0."""
        code = line.lstrip(" \t")
        if not code:
            return ""
        if self.style is None:
            return line
        column = columns(line[: len(line) - len(code)], self.tab) + self.offset
        if column < 0:
            return None
        if self.style == "\t":
            return "\t" * (column // self.tab) + " " * (column % self.tab) + code
        return " " * column + code


def find_windows(codes: Sequence[str], needle: Sequence[str]) -> list[Window]:
    """Every place where the needle's code lines follow each other (blank lines between them
    ignored); `codes` are the file's lines stripped of surrounding whitespace."""
    wanted = [(j, line.strip()) for j, line in enumerate(needle) if line.strip()]
    filled = [i for i, code in enumerate(codes) if code]
    found: list[Window] = []
    if not wanted:
        return found
    for k, i in enumerate(filled[: len(filled) - len(wanted) + 1]):
        if codes[i] != wanted[0][1]:
            continue
        if all(codes[filled[k + t]] == code for t, (_, code) in enumerate(wanted)):
            pairs = tuple((j, filled[k + t]) for t, (j, _) in enumerate(wanted))
            found.append(Window(i, pairs[-1][1] + 1, pairs))
    return found


def indent_map(found: Sequence[tuple[str, str]]) -> Indent | None:
    """The one mapping of (file indent, search indent) pairs: a constant column offset."""
    tabs = any("\t" in have + want for have, want in found)
    for tab in TAB_WIDTHS if tabs else TAB_WIDTHS[:1]:
        offsets = {columns(have, tab) - columns(want, tab) for have, want in found}
        if len(offsets) != 1:
            continue
        offset = offsets.pop()
        have_style = next((have[0] for have, _ in found if have), None)
        want_style = next((want[0] for _, want in found if want), None)
        same = have_style is None or want_style is None or have_style == want_style
        style = None if offset == 0 and same else (have_style or want_style or " ")
        return Indent(tab, offset, style)
    return None


def replace_lines(text: str, search: str, replacement: str, eol: str) -> str:
    """`text` with the one forgiving match of `search` replaced; PatchRejected when there is
    none, more than one, or the indentation does not map consistently."""
    lines = split_lines(text)
    bare = [line.rstrip("\r\n") for line in lines]
    codes = [line.strip() for line in bare]
    needle, new = block_lines(search, keep_last=True), block_lines(replacement, keep_last=True)
    windows = find_windows(codes, needle)
    if windows or not any(is_elision(line) for line in needle):
        pieces = [Piece(_unique(windows, bare, text, search), needle, new)]
    else:
        pieces = place_elided(bare, needle, new, text, search)
    pieces = settled(pieces, codes)
    indent = indent_map(
        [(indent_of(bare[f]), indent_of(p.needle[j])) for p in pieces for j, f in p.window.pairs]
    )
    if indent is None:
        first, last = pieces[0].window.start + 1, pieces[-1].window.end
        raise not_found(
            text,
            search,
            f" with its indentation (lines {first}-{last} have the "
            "same code, indented differently line by line)",
        )
    out, position = [], 0
    for piece in pieces:
        out += lines[position : piece.window.start]
        out += rewrite(lines, piece, indent, eol)
        position = piece.window.end
    return "".join(out + lines[position:])


def _unique(windows: list[Window], bare: list[str], text: str, search: str) -> Window:
    """The only window, or the refusal of none or several."""
    if not windows:
        raise not_found(text, search)
    if len(windows) > 1:
        numbers = [w.start + 1 for w in windows]
        raise ambiguous(len(windows), numbers, bare, " when whitespace is ignored")
    return windows[0]


def settled(pieces: list[Piece], codes: Sequence[str]) -> list[Piece]:
    """The pieces with their edge blank lines settled: the file's own ones (never another
    piece's) taken into the window, the ones the file lacks cut from search and replacement."""
    out: list[Piece] = []
    for k, piece in enumerate(pieces):
        window = piece.window
        floor = out[-1].window.end if out else 0
        ceiling = pieces[k + 1].window.start if k + 1 < len(pieces) else len(codes)
        edges = settle_edges(
            piece.needle,
            piece.replacement,
            blank_run(codes, range(window.start - 1, floor - 1, -1)),
            blank_run(codes, range(window.end, ceiling)),
        )
        pairs = tuple((j - edges.cut, f) for j, f in window.pairs)
        moved = Window(window.start - edges.lead, window.end + edges.trail, pairs)
        out.append(Piece(moved, edges.needle, edges.replacement))
    return out


# --- rewriting one window --------------------------------------------------------------------


def rewrite(lines: list[str], piece: Piece, indent: Indent, eol: str) -> list[str]:
    """The lines that take the window's place: the file's own line wherever the replacement
    keeps the search's line, the model's line (re-indented) wherever it changes it."""
    window, owner = piece.window, _owners(piece)
    kept = _kept_needle_lines(piece.needle, piece.replacement)
    inserts = _insertions(piece, owner, indent, eol)
    out: list[str] = []
    for f in range(window.start, window.end):
        out += inserts.pop(f, [])
        if _keeps(f, owner, kept):
            out.append(lines[f])
    out += inserts.pop(window.end, [])
    out = [line if line.endswith("\n") else line + eol for line in out]
    if out and not lines[window.end - 1].endswith("\n"):
        out[-1] = out[-1].rstrip("\r\n")  # the window ended the file without a newline
    return out


def _owners(piece: Piece) -> dict[int, int]:
    """file line → search line: the code lines, the blank lines the search quotes at its edges,
    and blank lines between code lines where both sides have as many."""
    window, pairs = piece.window, piece.window.pairs
    (j_first, f_first), (j_last, f_last) = pairs[0], pairs[-1]
    owner = {f: j_first - (f_first - f) for f in range(window.start, f_first)}
    owner.update({f: j_last + (f - f_last) for f in range(f_last + 1, window.end)})
    owner.update({f: j for j, f in pairs})
    for (j1, f1), (j2, f2) in itertools.pairwise(pairs):
        if j2 - j1 == f2 - f1:
            owner.update({f1 + t: j1 + t for t in range(1, f2 - f1)})
    return owner


def _kept_needle_lines(needle: list[str], replacement: list[str]) -> set[int]:
    """The search lines the replacement repeats unchanged (context the model kept)."""
    matcher = difflib.SequenceMatcher(
        None,
        [line.rstrip() for line in needle],
        [line.rstrip() for line in replacement],
        autojunk=False,
    )
    return {
        j for tag, i1, i2, _, _ in matcher.get_opcodes() if tag == "equal" for j in range(i1, i2)
    }


def _keeps(f: int, owner: dict[int, int], kept: set[int]) -> bool:
    """Whether file line `f` stays: its search line was kept; a blank line the search did not
    quote stays unless the code lines around it both go."""
    if f in owner:
        return owner[f] in kept
    before = max((j for ff, j in owner.items() if ff < f), default=None)
    after = min((j for ff, j in owner.items() if ff > f), default=None)
    return before is None or after is None or before in kept or after in kept


def _insertions(
    piece: Piece, owner: dict[int, int], indent: Indent, eol: str
) -> dict[int, list[str]]:
    """The model's new lines, keyed by the file line they go before."""
    where = {j: f for f, j in owner.items()}
    matcher = difflib.SequenceMatcher(
        None,
        [line.rstrip() for line in piece.needle],
        [line.rstrip() for line in piece.replacement],
        autojunk=False,
    )
    inserts: dict[int, list[str]] = {}
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag not in ("replace", "insert"):
            continue
        replaced = [where[j] for j in range(i1, i2) if j in where]
        anchor = min(replaced) if replaced else _after(where, i1, piece.window)
        inserts.setdefault(anchor, []).extend(
            _rendered(line, indent) + eol for line in piece.replacement[j1:j2]
        )
    return inserts


def _after(where: dict[int, int], i1: int, window: Window) -> int:
    """The file line just after the last search line before `i1` that has a place in the file."""
    before = [f for j, f in where.items() if j < i1]
    return max(before) + 1 if before else window.start


def _rendered(line: str, indent: Indent) -> str:
    """A new line in the file's indentation; PatchRejected when it cannot be mapped."""
    moved = indent.render(line)
    if moved is None:
        raise PatchRejected(
            "the replacement's indentation cannot be mapped onto the file's; "
            "copy the search lines with their exact indentation"
        )
    return moved


# --- elisions --------------------------------------------------------------------------------


def place_elided(
    bare: list[str], needle: list[str], new: list[str], text: str, search: str
) -> list[Piece]:
    """The pieces of a search that leaves lines out with `...`, each placed in order among the
    file's lines (`bare`: without their line ends); the replacement must leave out the same
    places. Refused unless there is one placement."""
    codes = [line.strip() for line in bare]
    kept = _paired_parts(needle, new, text, search)
    options = [find_windows(codes, part) for part, _ in kept]
    for (part, _), found in zip(kept, options, strict=True):
        if not found:
            raise not_found(text, "\n".join(part), " (a piece between the '...' lines)")
    crowded = next((found for found in options if len(found) > _MAX_CANDIDATES), None)
    chosen = _only_placement(options) if crowded is None else None
    if chosen is None:
        spread = crowded or next(found for found in options if len(found) > 1)
        raise ambiguous(
            len(spread), [w.start + 1 for w in spread], bare, " in a piece between the '...' lines"
        )
    if not chosen:
        raise not_found(text, search, " with its pieces in this order")
    return [Piece(w, p, r) for w, (p, r) in zip(chosen, kept, strict=True)]


def _paired_parts(
    needle: list[str], new: list[str], text: str, search: str
) -> list[tuple[list[str], list[str]]]:
    """(search piece, replacement piece) pairs around the elisions, pieces without code left
    out; refused when the two do not leave out the same places."""
    parts, news = _split(needle), _split(new)
    if len(parts) != len(news):
        raise PatchRejected(
            "the search leaves lines out with '...' but the replacement does not leave out the "
            "same places; quote the lines in full",
            hint=closest_region_of(text, parts),
        )
    pairs = list(zip(parts, news, strict=True))
    if any(_has_code(r) and not _has_code(p) for p, r in pairs):
        raise PatchRejected(
            "the replacement adds lines where the search quotes none; quote the lines around them"
        )
    kept = [(p, r) for p, r in pairs if _has_code(p)]
    if not kept:
        raise not_found(text, search)
    return kept


def _has_code(lines: list[str]) -> bool:
    return any(line.strip() for line in lines)


def _split(lines: list[str]) -> list[list[str]]:
    """Lines cut at every elision line."""
    parts: list[list[str]] = [[]]
    for line in lines:
        if is_elision(line):
            parts.append([])
        else:
            parts[-1].append(line)
    return parts


def _only_placement(options: list[list[Window]]) -> list[Window] | None:
    """The one in-order, non-overlapping choice of a window per piece; [] when there is none,
    None when there are several."""
    memo: dict[tuple[int, int], int] = {}

    def ways(k: int, after: int) -> int:
        if k == len(options):
            return 1
        key = (k, after)
        if key not in memo:
            memo[key] = min(2, sum(ways(k + 1, w.end) for w in options[k] if w.start >= after))
        return memo[key]

    total = ways(0, 0)
    if total != 1:
        return [] if total == 0 else None
    chosen, after = [], 0
    for k, found in enumerate(options):
        window = next(w for w in found if w.start >= after and ways(k + 1, w.end) == 1)
        chosen.append(window)
        after = window.end
    return chosen


def closest_region_of(text: str, parts: list[list[str]]) -> str:
    """The closest region to the first quoted piece."""
    first = next((p for p in parts if any(line.strip() for line in p)), [])
    return closest_region(text, "\n".join(first))
