"""The parsed shape of a source file: symbols with line spans, imports, parse status."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

ParseStatus = Literal["parsed", "text", "syntax_error"]
# The kinds whose members are definitions of their own (an outline shows them inside it);
# "object" is a JavaScript object literal of functions (`const api = { parse() {…} }`).
CONTAINER_KINDS = frozenset({"class", "interface", "impl", "module", "namespace", "object"})


class Symbol(NamedTuple):
    """A definition: lines are 1-based and inclusive; `header_end` is the signature's last line."""

    name: str
    qualname: str
    kind: str
    start: int
    end: int
    header_end: int
    signature: str
    doc: str = ""
    parent: str | None = None
    doc_end: int = 0  # last line of a leading Python docstring, 0 when there is none
    # first line of the comment right above it (JSDoc, Go's `//`), else 0; parsed afresh
    # where a file is rendered, not kept in the index
    doc_start: int = 0

    @property
    def first(self) -> int:
        """Its first line, the comment right above it included: shown, left out and ranked
        with it."""
        return self.doc_start if 0 < self.doc_start < self.start else self.start


class ImportRef(NamedTuple):
    """One import: a dotted module (Python, `level` for relative) or a relative path (JS/TS)."""

    module: str
    names: tuple[str, ...] = ()
    level: int = 0


@dataclass
class ParsedFile:
    """The outcome of parsing one file's text."""

    language: str
    status: ParseStatus
    doc: str = ""
    symbols: list[Symbol] = field(default_factory=list)
    imports: list[ImportRef] = field(default_factory=list)


def first_line(text: str | None) -> str:
    """The first non-blank line of `text`, stripped, at most 160 characters."""
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:160]
    return ""
