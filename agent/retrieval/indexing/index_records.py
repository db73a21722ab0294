"""The repository index's records: the SQLite tables an update writes (files, symbols, imports,
edges, the full-text table), and what a query reads back (an update's stats, an indexed file,
an indexed definition)."""

from __future__ import annotations

from pydantic import Field
from sqlalchemy import Boolean, Column, ForeignKey, Integer, MetaData, String, Table, Text

from agent.models import Record

metadata = MetaData()
meta_table = Table("meta", metadata, Column("key", String, primary_key=True), Column("value", Text))
files = Table(
    "files",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("path", Text, nullable=False, unique=True),
    Column("blob_sha", String(40), nullable=False),
    Column("language", String, nullable=False),
    Column("status", String, nullable=False),
    Column("size", Integer, nullable=False),
    Column("tokens", Integer, nullable=False),
    Column("is_test", Boolean, nullable=False),
    Column("doc", Text, nullable=False),
)
symbols = Table(
    "symbols",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("file_id", Integer, ForeignKey("files.id"), nullable=False, index=True),
    Column("name", Text, nullable=False, index=True),
    Column("qualname", Text, nullable=False),
    Column("kind", String, nullable=False),
    Column("start_line", Integer, nullable=False),
    Column("end_line", Integer, nullable=False),
    Column("signature", Text, nullable=False),
    Column("doc", Text, nullable=False),
)
imports = Table(
    "imports",
    metadata,
    Column("file_id", Integer, ForeignKey("files.id"), nullable=False, index=True),
    Column("module", Text, nullable=False),
    Column("names", Text, nullable=False),
    Column("level", Integer, nullable=False),
)
edges = Table(
    "edges",
    metadata,
    Column("src_id", Integer, nullable=False, index=True),
    Column("dst_id", Integer, nullable=False, index=True),
)
FTS_DDL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS file_fts USING fts5("
    "path, names, docs, vocabulary, tokenize = 'porter unicode61')"
)
FTS_WEIGHTS = (4.0, 3.0, 1.0, 0.5)  # path, names, docs, the words used in the file


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
