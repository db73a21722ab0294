"""What the repository index reports: an update's stats, an indexed file, an indexed definition."""

from __future__ import annotations

from pydantic import Field

from agent.models import Record


class IndexStats(Record):
    """One update: totals of the index after it, and what this update parsed, reused, removed."""

    files: int = 0
    parsed: int = 0
    reused: int = 0
    removed: int = 0
    symbols: int = 0
    languages: dict[str, int] = Field(default_factory=dict)
    skipped: dict[str, int] = Field(default_factory=dict)
    syntax_errors: int = 0
    capped: int = 0
    seconds: float = 0.0


class FileInfo(Record):
    """One indexed file."""

    path: str
    language: str
    status: str
    size: int
    tokens: int
    is_test: bool
    doc: str = ""


class SymbolInfo(Record):
    """One indexed definition (lines 1-based, inclusive)."""

    path: str
    name: str
    qualname: str
    kind: str
    start_line: int
    end_line: int
    signature: str
    doc: str = ""
