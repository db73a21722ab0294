"""The repository index: files, symbols and imports of a worktree in a per-repository SQLite file.

Incremental by git blob SHA: a file whose SHA is unchanged is never read again, deleted files
disappear. An FTS5 table holds one row per file (path terms, symbol names, docstrings), with
identifiers split on snake_case and camelCase, for bm25 ranking.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from sqlalchemy import (
    URL,
    Connection,
    Engine,
    create_engine,
    delete,
    event,
    func,
    insert,
    select,
)

from agent.config.files import RetrievalConfig
from agent.git.repo import run_git
from agent.retrieval.indexing.index_records import (
    FTS_DDL,
    FTS_WEIGHTS,
    FileInfo,
    IndexStats,
    SymbolInfo,
    edges,
    files,
    imports,
    meta_table,
    metadata,
    symbols,
)
from agent.retrieval.indexing.links import resolve_edges
from agent.retrieval.indexing.parsing import terms
from agent.retrieval.indexing.scan import (
    FileRecord,
    Listing,
    ScanRules,
    is_test_path,
    list_worktree,
    read_file,
)
from agent.retrieval.indexing.snapshots import SNAPSHOT_KIND
from agent.runlog.database import use_wal

SCHEMA_VERSION = "5"  # 3: long assignments; 4: JavaScript exports and objects; 5: snapshots
_CHUNK = 500

_INSERT_COLUMNS = {
    "files": ("id", "path", "blob_sha", "language", "status", "size", "tokens", "is_test", "doc"),
    "symbols": (
        "file_id",
        "name",
        "qualname",
        "kind",
        "start_line",
        "end_line",
        "signature",
        "doc",
    ),
    "imports": ("file_id", "module", "names", "level"),
    "file_fts": ("rowid", "path", "names", "docs", "vocabulary"),
}
_INSERTS = {
    table: f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
    for table, cols in _INSERT_COLUMNS.items()
}
_PARSE_BATCH = 200
Progress = Callable[[int, int], None]  # (files read, files to read)
_Rows = dict[str, list[tuple[Any, ...]]]


def scan_rules(config: RetrievalConfig) -> ScanRules:
    """The scan rules of a retrieval config."""
    return ScanRules(tuple(config.skip_dirs), tuple(config.skip_globs), config.max_file_bytes)


def default_index_path(data_dir: Path, repo: Path) -> Path:
    """The index file of the repository `repo` belongs to; its worktrees share it."""
    common = (repo / run_git(["rev-parse", "--git-common-dir"], repo).strip()).resolve()
    name = common.parent.name if common.name == ".git" else common.name.removesuffix(".git")
    digest = hashlib.sha1(str(common).encode(), usedforsecurity=False).hexdigest()[:12]
    return data_dir / "index" / f"{name or 'repo'}-{digest}.sqlite"


def _on_connect(dbapi_connection: Any, _record: Any) -> None:
    """Per-connection settings: WAL, a busy timeout, relaxed fsync (the index is derived data)."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout=5000")
    use_wal(cursor)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


class RepoIndex:
    """Reader and incremental writer of one repository's index file."""

    def __init__(self, engine: Engine, rules: ScanRules) -> None:
        self._engine = engine
        self._rules = rules

    @classmethod
    def open(cls, db_path: Path, *, config: RetrievalConfig | None = None) -> RepoIndex:
        """Open (creating or rebuilding on a schema or rules change) the index at `db_path`."""
        db_path.parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(URL.create("sqlite", database=str(db_path)))
        event.listen(engine, "connect", _on_connect)
        index = cls(engine, scan_rules(config or RetrievalConfig()))
        try:
            index._prepare()
        except BaseException:
            engine.dispose()
            raise
        return index

    def close(self) -> None:
        """Release every pooled connection."""
        self._engine.dispose()

    def __enter__(self) -> RepoIndex:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _prepare(self) -> None:
        """Create the tables; drop everything first when the stored fingerprint differs."""
        fingerprint = json.dumps([SCHEMA_VERSION, self._rules.__dict__], sort_keys=True)
        with self._engine.begin() as conn:
            metadata.create_all(conn)
            conn.exec_driver_sql(FTS_DDL)
            stored = conn.scalar(select(meta_table.c.value).where(meta_table.c.key == "schema"))
            if stored == fingerprint:
                return
            conn.exec_driver_sql("DROP TABLE IF EXISTS file_fts")
            metadata.drop_all(conn)
            metadata.create_all(conn)
            conn.exec_driver_sql(FTS_DDL)
            conn.execute(insert(meta_table).values(key="schema", value=fingerprint))

    # --- writing ------------------------------------------------------------------------------

    def update(self, worktree: Path, *, progress: Progress | None = None) -> IndexStats:
        """Bring the index in line with the tracked files of `worktree`; unchanged SHAs are reused.

        Content is read from disk: a tracked file with uncommitted edits is indexed as it is now.
        `progress(done, total)` is told after each changed file is read.
        """
        started = time.perf_counter()
        listing = list_worktree(worktree, self._rules)
        with self._engine.begin() as conn:
            known = {
                row.path: (row.id, row.blob_sha)
                for row in conn.execute(select(files.c.path, files.c.id, files.c.blob_sha))
            }
            changed = [p for p, sha in listing.entries.items() if known.get(p, (0, ""))[1] != sha]
            gone = [known[p][0] for p in known if p not in listing.entries]
            self._delete(conn, gone)
            next_id = (conn.scalar(select(func.max(files.c.id))) or 0) + 1
            rows: _Rows = {name: [] for name in _INSERTS}
            done = 0
            for batch in _chunks(changed, _PARSE_BATCH):  # bounded memory on a cold index
                self._delete(conn, [known[p][0] for p in batch if p in known])
                for path in batch:
                    record = read_file(
                        worktree, path, listing.entries[path], self._rules.max_file_bytes
                    )
                    if record is not None:
                        file_id = known[path][0] if path in known else next_id
                        next_id = max(next_id, file_id + 1)
                        _stage(rows, record, file_id)
                    done += 1
                    if progress is not None:
                        progress(done, len(changed))
                _flush(conn, rows)
            if changed or gone:
                self._relink(conn)
            stats = self._totals(conn, listing)
        return stats.model_copy(
            update={
                "parsed": len(changed),
                "reused": len(listing.entries) - len(changed),
                "removed": len(gone),
                "seconds": round(time.perf_counter() - started, 3),
            }
        )

    def _delete(self, conn: Connection, file_ids: list[int]) -> None:
        """Remove files (and everything derived from them) by id."""
        for chunk in _chunks(file_ids):
            conn.execute(delete(symbols).where(symbols.c.file_id.in_(chunk)))
            conn.execute(delete(imports).where(imports.c.file_id.in_(chunk)))
            conn.execute(delete(edges).where(edges.c.src_id.in_(chunk) | edges.c.dst_id.in_(chunk)))
            conn.execute(delete(files).where(files.c.id.in_(chunk)))
            marks = ",".join("?" * len(chunk))
            conn.exec_driver_sql(f"DELETE FROM file_fts WHERE rowid IN ({marks})", tuple(chunk))

    def _relink(self, conn: Connection) -> None:
        """Recompute the import edges between indexed files."""
        paths = dict(
            conn.execute(select(files.c.id, files.c.path).where(files.c.status != "binary")).all()
        )
        refs = conn.execute(
            select(imports.c.file_id, imports.c.module, imports.c.names, imports.c.level)
        ).all()
        conn.execute(delete(edges))
        rows = [{"src_id": s, "dst_id": d} for s, d in resolve_edges(paths, refs)]
        if rows:
            conn.execute(insert(edges), rows)

    def _totals(self, conn: Connection, listing: Listing) -> IndexStats:
        """The index totals after an update (parsed/reused/removed filled in by the caller)."""
        counts = Counter(
            {
                f"status:{status}": n
                for status, n in conn.execute(
                    select(files.c.status, func.count()).group_by(files.c.status)
                )
            }
        )
        languages: dict[str, int] = dict(
            conn.execute(
                select(files.c.language, func.count())
                .where(files.c.status != "binary")
                .group_by(files.c.language)
                .order_by(files.c.language)
            ).all()
        )
        skipped = Counter(listing.skipped)
        if counts["status:binary"]:
            skipped["binary"] = counts["status:binary"]
        return IndexStats(
            files=sum(languages.values()),
            symbols=conn.scalar(select(func.count(symbols.c.id))) or 0,
            languages=languages,
            skipped=dict(sorted(skipped.items())),
            syntax_errors=counts["status:syntax_error"],
            capped=counts["status:capped"],
        )

    # --- reading ------------------------------------------------------------------------------

    def files(self) -> list[FileInfo]:
        """Every indexed file (binary files excluded), by path."""
        return self._file_infos(files.c.status != "binary")

    def file(self, path: str) -> FileInfo | None:
        """The indexed file at `path`, or None."""
        found = self._file_infos((files.c.path == path) & (files.c.status != "binary"))
        return found[0] if found else None

    def _file_infos(self, where: Any) -> list[FileInfo]:
        """The files matching `where`, by path."""
        columns = [files.c[name] for name in FileInfo.model_fields]
        with self._engine.connect() as conn:
            rows = conn.execute(select(*columns).where(where).order_by(files.c.path)).mappings()
            return [FileInfo.model_validate(dict(row)) for row in rows]

    def search(self, query_terms: Sequence[str], *, limit: int) -> list[tuple[str, float]]:
        """Files matching any of `query_terms` by bm25 (higher is better), best first."""
        words = [t for t in dict.fromkeys(query_terms) if t.isalnum()]
        if not words:
            return []
        sql = (
            "SELECT files.path, -bm25(file_fts, ?, ?, ?, ?) AS score FROM file_fts "
            "JOIN files ON files.id = file_fts.rowid WHERE file_fts MATCH ? "
            "ORDER BY score DESC, files.path LIMIT ?"
        )
        match = " OR ".join(f'"{w}"' for w in words)
        with self._engine.connect() as conn:
            rows = conn.exec_driver_sql(sql, (*FTS_WEIGHTS, match, limit)).all()
        return [(str(path), float(score)) for path, score in rows]

    def symbols_in(self, path: str) -> list[SymbolInfo]:
        """The definitions indexed for `path`, in line order."""
        return self._symbols(files.c.path == path)

    def symbols_named(self, names: Iterable[str]) -> list[SymbolInfo]:
        """Definitions whose name or qualified name is one of `names`."""
        wanted = sorted(set(names))
        found: list[SymbolInfo] = []
        for chunk in _chunks(wanted):
            found += self._symbols(symbols.c.name.in_(chunk) | symbols.c.qualname.in_(chunk))
        return found

    def _symbols(self, where: Any) -> list[SymbolInfo]:
        """The definitions matching `where`, by path and line."""
        query = (
            select(files.c.path, *[symbols.c[n] for n in list(SymbolInfo.model_fields)[1:]])
            .join(files, files.c.id == symbols.c.file_id)
            .where(where)
            .order_by(files.c.path, symbols.c.start_line)
        )
        with self._engine.connect() as conn:
            return [SymbolInfo.model_validate(dict(r)) for r in conn.execute(query).mappings()]

    def import_edges(self, paths: Iterable[str]) -> list[tuple[str, str]]:
        """(importer, imported) pairs with either end in `paths`."""
        wanted = sorted(set(paths))
        src, dst = files.alias("src"), files.alias("dst")
        found: list[tuple[str, str]] = []
        with self._engine.connect() as conn:
            for chunk in _chunks(wanted):
                query = (
                    select(src.c.path, dst.c.path)
                    .select_from(edges)
                    .join(src, src.c.id == edges.c.src_id)
                    .join(dst, dst.c.id == edges.c.dst_id)
                    .where(src.c.path.in_(chunk) | dst.c.path.in_(chunk))
                )
                found += [(str(a), str(b)) for a, b in conn.execute(query)]
        return sorted(set(found))


def _stage(rows: _Rows, record: FileRecord, file_id: int) -> None:
    """Queue the rows of one file: the file, its symbols, imports and search row."""
    parsed = record.parsed
    rows["files"].append(
        (
            file_id,
            record.path,
            record.blob_sha,
            parsed.language,
            record.status,
            record.size,
            record.tokens,
            is_test_path(record.path),
            parsed.doc,
        )
    )
    if record.status == "binary":
        return
    rows["symbols"] += [
        (file_id, s.name, s.qualname, s.kind, s.start, s.end, s.signature, s.doc)
        for s in parsed.symbols
    ]
    rows["imports"] += [(file_id, i.module, ",".join(i.names), i.level) for i in parsed.imports]
    rows["file_fts"].append((file_id, *_search_row(record)))


def _flush(conn: Connection, rows: _Rows) -> None:
    """Insert the queued rows (plain executemany: the cold index inserts ~100k rows)."""
    for table, queued in rows.items():
        if queued:
            conn.exec_driver_sql(_INSERTS[table], queued)
        queued.clear()


def _search_row(record: FileRecord) -> tuple[str, str, str, str]:
    """The FTS columns of a file: path terms, symbol-name terms, docstrings, vocabulary (a
    snapshot's keys are recorded test names, not definitions: its vocabulary holds them)."""
    parsed = record.parsed
    names = " ".join(" ".join(terms(s.name)) for s in parsed.symbols if s.kind != SNAPSHOT_KIND)
    docs = " ".join([parsed.doc, *(s.doc for s in parsed.symbols if s.doc)])
    return " ".join(terms(record.path)), names, docs, record.vocabulary


def _chunks(items: Sequence[Any], size: int = _CHUNK) -> Iterator[list[Any]]:
    """`items` in lists of at most `size` (default: within SQLite's bound-parameter limit)."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])
