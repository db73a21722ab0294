"""The database under the run log: its engine and the Database through which it is written.

Its clock is agent.runlog.clock, its column types agent.runlog.columns, its migrations
agent.runlog.migrate.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext, suppress
from datetime import datetime
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from sqlalchemy import Connection, Dialect, Engine, create_engine, event, make_url

from agent.errors import ConnectionLost
from agent.runlog.clock import Clock, ServerClock, utc_now
from agent.runlog.migrate import at_head, upgrade

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

_SQLITE_WRITERS: dict[str, threading.RLock] = {}  # SQLite file → the lock its writers take
_SQLITE_WRITERS_GUARD = threading.Lock()


_BUSY_TIMEOUT_MS = 5000


def use_wal(cursor: Any) -> None:
    """Put the file in WAL mode (it stays so); a no-op when it already is.

    The switch from a new file's rollback journal to WAL takes an exclusive lock, and SQLite
    answers "database is locked" at once, without its busy handler, when another process holds
    the file meanwhile (processes opening a fresh database together, one of them migrating it):
    retried within the busy timeout, as any other wait for the file is.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
    while cursor.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _on_sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    """Per-connection SQLite settings: WAL, a busy timeout, enforced foreign keys."""
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
    use_wal(cursor)
    # WAL + NORMAL: a crash of cra loses nothing committed; only a power cut may lose the
    # last transactions. FULL would fsync on every commit (3 ms each, hundreds per run).
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def build_engine(url: str) -> Engine:
    """An engine for the URL; SQLite gets its directory created and its pragmas set."""
    parsed = make_url(url)
    is_sqlite = parsed.get_backend_name() == "sqlite"
    if is_sqlite and parsed.database and parsed.database != ":memory:":
        Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(parsed, pool_pre_ping=not is_sqlite)
    if is_sqlite:
        event.listen(engine, "connect", _on_sqlite_connect)
    return engine


def writer_lock(engine: Engine) -> threading.RLock | None:
    """What a write transaction holds in this process: for a SQLite file, one lock per file
    (None for a server database, which orders its own writers).

    SQLite has one writer at a time; a second one waits in its busy handler, which polls with
    sleeps of 1, 2, 5, 10 … ms. Threads queued on a lock instead start the moment the writer
    commits (other processes still meet the busy timeout).
    """
    url = engine.url
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    path = str(Path(url.database).expanduser().resolve())
    with _SQLITE_WRITERS_GUARD:
        return _SQLITE_WRITERS.setdefault(path, threading.RLock())


def _broken(connection: Any) -> bool:
    """Whether a DB-API connection knows itself closed or broken (psycopg tells)."""
    return bool(getattr(connection, "closed", False) or getattr(connection, "broken", False))


@contextmanager
def _committing(connection: Any) -> Iterator[Any]:
    """Commit a DB-API connection's transaction after the block, roll it back on an error."""
    try:
        yield connection
        connection.commit()
    except BaseException:
        connection.rollback()
        raise


class Database:
    """A migrated database: the engine, the clock (this host's for a SQLite file, the
    server's for a database hosts share: ServerClock), a session factory for ORM readers;
    closed once. `clock` replaces that choice; `host_clock` is this host's clock within it."""

    def __init__(
        self, engine: Engine, *, clock: Clock | None = None, host_clock: Clock = utc_now
    ) -> None:
        self._engine = engine
        self._clock = clock or (
            host_clock if engine.dialect.name == "sqlite" else ServerClock(engine, host=host_clock)
        )
        self._writer = writer_lock(engine)
        self._held: Any = None  # a SQLite file's raw writer connection, kept between writes
        self._batches = threading.local()  # per thread: an open batch(), a kept connection
        self._kept: list[Any] = []  # the writers' own server connections (closed by close())

    @classmethod
    def open(cls, url: str, *, clock: Clock | None = None, host_clock: Clock = utc_now) -> Self:
        """Connect to the database at `url` and migrate it to the newest schema."""
        engine = build_engine(url)
        try:
            if not at_head(engine):
                upgrade(engine)
        except BaseException:
            engine.dispose()
            raise
        return cls(engine, clock=clock, host_clock=host_clock)

    @property
    def engine(self) -> Engine:
        return self._engine

    @cached_property
    def _sessions(self) -> sessionmaker[Session]:
        """ORM sessions, for the stores that map classes (cra-bot's); the run log has none, so
        that `cra` never imports SQLAlchemy's ORM."""
        from sqlalchemy.orm import sessionmaker

        return sessionmaker(self._engine, expire_on_commit=False)

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """One write transaction (committed on exit), SQLite writers of this process in turn;
        inside batch(), the batch's transaction."""
        batched: Connection | None = getattr(self._batches, "connection", None)
        if batched is not None:
            yield batched
            return
        with self._writer or nullcontext(), self._engine.begin() as connection:
            yield connection

    @contextmanager
    def _raw_write(self) -> Iterator[Any]:
        """One write transaction on a DB-API connection, for prepared statements (committed on
        exit); inside batch(), the batch's. A SQLite file's writers take turns on the one kept
        for them; a server database's come from the pool (pinged: a run's writes are minutes
        apart, and a connection may have gone in between)."""
        batched: Connection | None = getattr(self._batches, "connection", None)
        if batched is not None:
            yield batched.connection.dbapi_connection
        elif self._writer is not None:
            with self.raw_transaction() as connection:
                yield connection
        else:
            with self._engine.begin() as pooled:
                yield pooled.connection.dbapi_connection

    @contextmanager
    def batch(self) -> Iterator[None]:
        """The writes of this thread inside the block share one transaction, committed at its
        end (all or none): for records made at one moment — never around a model call or a
        command, which would hold SQLite's one writer lock meanwhile."""
        if getattr(self._batches, "connection", None) is not None:
            yield  # nested: the outer batch commits
            return
        with self._writer or nullcontext(), self._engine.begin() as connection:
            self._batches.connection = connection
            try:
                yield
            finally:
                self._batches.connection = None

    def now(self) -> datetime:
        """The current time on the store's clock."""
        return self._clock()

    @property
    def dialect(self) -> Dialect:
        return self._engine.dialect

    @contextmanager
    def raw_transaction(self) -> Iterator[Any]:
        """One write transaction on a DB-API connection, for prepared statements
        (agent.runlog.prepared): committed on exit, rolled back on an error.

        A SQLite file's writers take turns on one connection kept for them; a server
        database's writers each keep one of their own (per thread, outside the pool): no pool
        checkout, liveness ping and reset per write. A connection whose transaction failed is
        closed, and the thread's next write opens a fresh one.
        """
        if self._writer is None:
            connection = self._thread_connection()
            try:
                connection.autocommit = False  # it rests in autocommit (raw_statement)
                yield connection
            except BaseException as exc:
                broken = _broken(connection)
                self._drop(connection)
                if broken and isinstance(exc, Exception):  # not committed: safe to try again
                    raise ConnectionLost(f"the database connection broke: {exc}") from exc
                raise
            try:
                connection.commit()
                connection.autocommit = True
            except BaseException:
                self._drop(connection)
                raise
            return
        with self._writer:
            connection = self._held_connection()
            connection.execute("BEGIN")
            with _committing(connection):
                yield connection

    def _held_connection(self) -> Any:
        """The SQLite file's writer connection (the caller holds the writer lock), in
        autocommit: raw_transaction begins its transactions itself."""
        if self._held is None:
            self._held = self._engine.raw_connection()
            self._held.dbapi_connection.isolation_level = None
        return self._held.dbapi_connection

    @contextmanager
    def raw_statement(self) -> Iterator[Any]:
        """A DB-API connection on which each statement commits by itself, for a write that is
        one statement (agent.runlog.prepared): to a server database one round trip, where
        raw_transaction's costs three (BEGIN, the statement, COMMIT); on a SQLite file, one
        call into SQLite during the writers' turn instead of four. Durability is that of any
        commit.

        ConnectionLost when a server connection broke: unlike in raw_transaction, the
        statement may have committed, and the caller must find out before trying it again.
        """
        if self._writer is not None:
            with self._writer:
                yield self._held_connection()
            return
        if self.dialect.name == "sqlite":
            raise TypeError("raw_statement needs a SQLite file or a server database")
        connection = self._thread_connection()
        try:
            yield connection
        except BaseException as exc:
            if _broken(connection):
                self._drop(connection)
                if isinstance(exc, Exception):
                    raise ConnectionLost(f"the database connection broke: {exc}") from exc
            raise

    def _drop(self, connection: Any) -> None:
        """Forget and close this thread's connection after a failed transaction."""
        self._batches.raw = None
        with suppress(Exception):  # it may be the broken part
            connection.rollback()
        with suppress(Exception):
            connection.close()

    def _thread_connection(self) -> Any:
        """This thread's own DB-API connection to a server database (opened on first use),
        in autocommit between raw_transaction's transactions."""
        connection: Any = getattr(self._batches, "raw", None)
        if connection is None:
            fairy = self._engine.raw_connection()  # pinged and set up like any pooled one
            fairy.detach()  # ours now: closed by close(), never returned to the pool
            with _SQLITE_WRITERS_GUARD:
                self._kept.append(fairy)
            connection = fairy.dbapi_connection
            connection.rollback()  # whatever the checkout began (nothing to send when idle)
            connection.autocommit = True
            self._batches.raw = connection
        return connection

    def close(self) -> None:
        """Release every pooled connection, and those kept for writers."""
        if self._held is not None:
            self._held.close()
        for fairy in self._kept:
            with suppress(Exception):  # already closed after a failure
                fairy.close()
        self._kept.clear()
        self._engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
