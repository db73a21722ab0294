"""Rendering a file for a prompt: whole, as an outline with chosen bodies, or cut short.

An outline keeps the file's own lines (module-level code, class headers, chosen bodies) and
replaces what it leaves out with a line holding only `⋮`, so every shown line is exact text
the implementer can quote in a search block. A body shown full keeps the few lines bordering it
(the tail of the definition before, the head of the one after), as a diff's context does, so an
edit at a body's edge can be anchored on what stands around it.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence

from agent.llm.budget import CHARS_PER_TOKEN
from agent.models import SymbolDetail
from agent.retrieval.indexing.symbols import CONTAINER_KINDS, Symbol

MARK = "⋮"
MAX_SHOWN_DOCSTRING_LINES = 6
BORDER_LINES = 3  # git's context lines around a change
_INDENT = re.compile(r"^[ \t]*")


def render_outline(
    text: str,
    symbols: Sequence[Symbol],
    details: Mapping[str, SymbolDetail],
    default: SymbolDetail = "signature",
    *,
    fold_containers: bool = False,
    borders: bool = True,
) -> str:
    """`text` with each definition shown full, as its signature, or omitted (by qualname).
    `fold_containers`: a class shown as its signature is its header and docstring's first
    lines, like a function, not its members and attributes — the file's headlines.
    `borders`: a full body keeps the lines bordering it (BORDER_LINES each side)."""
    lines = text.splitlines()
    children: dict[str | None, list[Symbol]] = defaultdict(list)
    for symbol in sorted(symbols, key=lambda s: (s.start, -s.end)):
        children[symbol.parent].append(symbol)
    if fold_containers:
        children = defaultdict(list, {None: children[None]})
    renderer = _Renderer(lines, children, details, default)
    shown = renderer.region(1, len(lines), children[None])
    full = renderer.full if borders else []
    return "\n".join(_collapse(_with_borders(shown, lines, full)))


# A rendered line: its text and, for a marker, the span (1-based, inclusive) of the lines it hides.
_Line = tuple[str, tuple[int, int] | None]


def _with_borders(shown: list[_Line], lines: list[str], full: list[tuple[int, int]]) -> list[str]:
    """The rendered lines, with the lines of a hidden span that border a body shown full
    (BORDER_LINES above its start, below its end) taken out of the marker and shown."""
    near: set[int] = set()
    for start, end in full:
        near.update(range(start - BORDER_LINES, start))
        near.update(range(end + 1, end + 1 + BORDER_LINES))
    out: list[str] = []
    for text, span in shown:
        if span is None:
            out.append(text)
            continue
        first, last = span
        head = first
        while head <= last and head in near:
            head += 1
        tail = last
        while tail >= head and tail in near:
            tail -= 1
        out += lines[first - 1 : head - 1]
        if head <= tail:
            out.append(text)
        out += lines[tail:last]
    return out


class _Renderer:
    """Walks the definition tree of one file, emitting kept lines and markers."""

    def __init__(
        self,
        lines: list[str],
        children: Mapping[str | None, list[Symbol]],
        details: Mapping[str, SymbolDetail],
        default: SymbolDetail,
    ) -> None:
        self.lines = lines
        self.children = children
        self.details = details
        self.default = default
        self.full: list[tuple[int, int]] = []  # the spans of the bodies shown full

    def kept(self, first: int, last: int) -> list[_Line]:
        """Lines `first`..`last` (1-based, inclusive) as they stand."""
        return [(line, None) for line in self.lines[first - 1 : last]]

    def region(self, first: int, last: int, nodes: Sequence[Symbol]) -> list[_Line]:
        """Lines `first`..`last` (1-based, inclusive), with `nodes` rendered by their detail."""
        out: list[_Line] = []
        cursor = first
        for node in nodes:
            if node.start < cursor or node.end > last:
                continue  # overlapping spans: the first one wins
            comment = node.first if node.first >= cursor else node.start
            out += self.kept(cursor, comment - 1)
            out += self.node(node, comment)
            cursor = node.end + 1
        return out + self.kept(cursor, last)

    def node(self, node: Symbol, comment: int) -> list[_Line]:
        """One definition at its effective detail, with the comment above it (from line
        `comment`; `node.start` when it has none): hidden with an omitted definition, its first
        lines kept with a signature."""
        detail = self.detail(node)
        if detail == "full":
            self.full.append((comment, node.end))
            return self.kept(comment, node.end)
        if detail == "omitted":
            return [(self.indent(node.start) + MARK, (comment, node.end))]
        return self.leading(comment, node.start - 1) + self.shape(node)

    def leading(self, first: int, last: int) -> list[_Line]:
        """A comment above a definition shown by its signature: whole when short, else its
        first lines and a marker for the rest (JSDoc's @param and @example lines)."""
        if last - first + 1 <= MAX_SHOWN_DOCSTRING_LINES:
            return self.kept(first, last)
        head = first + MAX_SHOWN_DOCSTRING_LINES - 1
        return [*self.kept(first, head - 1), (self.indent(head) + MARK, (head, last))]

    def shape(self, node: Symbol) -> list[_Line]:
        """A definition by its signature: a container's header and members, else its header,
        a short docstring and a marker for the body."""
        header_end = node.header_end
        kids = self.children.get(node.qualname, [])
        if kids and node.kind in CONTAINER_KINDS:
            return self.kept(node.start, header_end) + self.region(header_end + 1, node.end, kids)
        body_indent = self.body_indent(node)
        if node.doc_end and node.doc_end - header_end <= MAX_SHOWN_DOCSTRING_LINES:
            header_end = node.doc_end
        header = self.kept(node.start, header_end)
        if node.end > header_end:
            return [*header, (body_indent + MARK, (header_end + 1, node.end))]
        return header

    def detail(self, node: Symbol) -> SymbolDetail:
        """The chosen detail; an omitted container with a visible member shows its signature."""
        chosen = self.details.get(node.qualname, self.default)
        if chosen == "omitted" and self.any_visible(node):
            return "signature"
        return chosen

    def any_visible(self, node: Symbol) -> bool:
        """True when some member of `node` (at any depth) is shown."""
        return any(
            self.details.get(kid.qualname, self.default) != "omitted" or self.any_visible(kid)
            for kid in self.children.get(node.qualname, [])
        )

    def indent(self, line: int) -> str:
        """The leading whitespace of a line."""
        match = _INDENT.match(self.lines[line - 1]) if 0 < line <= len(self.lines) else None
        return match.group(0) if match else ""

    def body_indent(self, node: Symbol) -> str:
        """The indentation of a definition's body (its first non-blank line after the header)."""
        for number in range(node.header_end + 1, node.end + 1):
            if self.lines[number - 1].strip():
                return self.indent(number)
        step = "\t" if self.indent(node.start).startswith("\t") else "    "
        return self.indent(node.start) + step


def _collapse(lines: list[str]) -> list[str]:
    """Runs of the same marker (and the blank lines between them) become one marker."""
    out: list[str] = []
    for line in lines:
        if line.strip() == MARK:
            end = len(out)
            while end and not out[end - 1].strip():
                end -= 1
            if end and out[end - 1] == line:
                del out[end:]
                continue
        out.append(line)
    return out


def truncate(text: str, max_chars: int) -> str | None:
    """The first lines of `text` within `max_chars`, with a marker saying how many follow."""
    lines = text.splitlines()
    if len(text) <= max_chars:
        return text

    def note(first: int) -> str:
        return f"{MARK} lines {first}-{len(lines)} not shown"

    kept: list[str] = []
    used = 0  # the kept lines, each with its newline
    for number, line in enumerate(lines, start=1):
        if used + len(line) + 1 + len(note(number + 1)) > max_chars:
            return "\n".join([*kept, note(number)]) if kept else None
        kept.append(line)
        used += len(line) + 1
    return "\n".join(kept)


def chars_for(tokens: int) -> int:
    """The most characters that estimate to at most `tokens` tokens."""
    return max(0, math.floor(tokens * CHARS_PER_TOKEN))
