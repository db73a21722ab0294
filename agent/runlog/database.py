"""The database under the run log: engine, migrations, column types and the Database base."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, suppress
from datetime import UTC, datetime, timedelta
from functools import cache, cached_property
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from sqlalchemy import (
    Connection,
    DateTime,
    Dialect,
    Engine,
    Text,
    TypeDecorator,
    create_engine,
    event,
    make_url,
    text,
)
from sqlalchemy.exc import DBAPIError

from agent.errors import ConnectionLost

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

Clock = Callable[[], datetime]

_ALEMBIC_IN_USE = threading.Lock()  # alembic's `context` and `op` are process-wide proxies
_SQLITE_WRITERS: dict[str, threading.RLock] = {}  # SQLite file → the lock its writers take
_SQLITE_WRITERS_GUARD = threading.Lock()
MIGRATION_LOCK = 0x63726120  # PostgreSQL advisory lock key held while migrating ("cra ")
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utc_now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


class ServerClock:
    """The database server's clock, for a database that several hosts share: a heartbeat
    stamped by one host and judged stale by another's reaper compare on one clock, whatever
    the hosts' clocks say. The offset from this host's clock is measured (`SELECT now()`,
    halfway through the round trip) at the first reading and every `refresh` seconds after;
    a database that cannot answer keeps the last offset (zero before the first). `host` is
    this host's clock, the one corrected."""

    def __init__(self, engine: Engine, *, refresh: float = 300.0, host: Clock = utc_now) -> None:
        self._engine, self._refresh, self._host = engine, refresh, host
        self._offset = timedelta(0)
        self._measured: float | None = None
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        mono = time.monotonic()
        if self._measured is None or mono - self._measured >= self._refresh:
            with self._lock:
                if self._measured is None or mono - self._measured >= self._refresh:
                    self._measure()
        return self._host() + self._offset

    def _measure(self) -> None:
        self._measured = time.monotonic()  # a database that cannot answer is asked again later
        try:
            with self._engine.connect() as connection:
                before = self._host()
                server = connection.execute(text("SELECT now()")).scalar_one()
                after = self._host()
        except DBAPIError:
            return
        if isinstance(server, datetime) and server.tzinfo is not None:
            self._offset = server - (before + (after - before) / 2)


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp stored as UTC and read back timezone-aware on every dialect."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the run log; use an aware UTC clock")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class JSONText(TypeDecorator[Any]):
    """A JSON value stored as TEXT, the same on every dialect."""

    impl = Text()
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        return None if value is None else json.dumps(value)

    def process_result_value(self, value: str | None, dialect: Dialect) -> Any:
        return None if value is None else json.loads(value)


def migrations_location() -> str:
    """The Alembic script directory: shipped as `agent._migrations`, else the checkout's."""
    try:
        return str(resources.files("agent._migrations"))
    except ModuleNotFoundError:  # an editable install made before the mapping existed
        return str(Path(__file__).resolve().parent.parent / "migrations")


def _on_sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    """Per-connection SQLite settings: WAL, a busy timeout, enforced foreign keys."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.execute("PRAGMA journal_mode=WAL")
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


REVISION_LINE = re.compile(r"^(down_revision|revision)\b[^=]*=(.*)$", re.MULTILINE)


@cache
def migration_heads() -> frozenset[str] | None:
    """The newest revisions of the shipped migrations, read from their files without importing
    Alembic (about a third of a second of every `cra` start); None when a file cannot be read
    that way (then Alembic decides)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for script in (Path(migrations_location()) / "versions").glob("*.py"):
        found = dict((key, re.findall(r"[\"']([^\"']+)[\"']", value))
                     for key, value in REVISION_LINE.findall(script.read_text()))  # fmt: skip
        if len(found.get("revision", [])) != 1:
            if script.name == "__init__.py":
                continue
            return None
        revisions.update(found["revision"])
        parents.update(found.get("down_revision", []))
    return frozenset(revisions - parents) or None


def at_head(engine: Engine) -> bool:
    """Whether the database's schema is at the newest shipped migration (one query)."""
    heads = migration_heads()
    if heads is None:
        return False
    try:
        with engine.connect() as connection:
            rows = connection.exec_driver_sql("SELECT version_num FROM alembic_version")
            return frozenset(row[0] for row in rows) == heads
    except DBAPIError:  # no alembic_version table yet: a new database
        return False


def upgrade(engine: Engine) -> None:
    """Bring the schema to the newest migration (no alembic.ini needed)."""
    from alembic import command  # imported only when a migration may be due
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", migrations_location())
    with _ALEMBIC_IN_USE, engine.begin() as connection:
        _lock_for_migration(connection)
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def _lock_for_migration(connection: Connection) -> None:
    """Serialise concurrent upgrades (workers starting together) until the transaction ends."""
    if connection.dialect.name == "sqlite":
        connection.exec_driver_sql("BEGIN IMMEDIATE")
    elif connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})


class Database:
    """A migrated database: the engine, the clock (this host's for a SQLite file, the
    server's for a database hosts share: ServerClock), a session factory for ORM readers;
    closed once. `clock` replaces that choice; `host_clock` is this host's clock within it."""

    def __init__(self, engine: Engine, *, clock: Clock | None = None,
                 host_clock: Clock = utc_now) -> None:
        self._engine = engine
        self._clock = clock or (host_clock if engine.dialect.name == "sqlite" else
                                ServerClock(engine, host=host_clock))  # fmt: skip
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
