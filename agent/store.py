"""The run log: task runs, attempts, validations, model calls, passes and session state."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Literal, Self

import pydantic_core
from alembic import command
from alembic.config import Config
from pydantic import BaseModel
from sqlalchemy import (
    Boolean,
    Connection,
    DateTime,
    Dialect,
    Engine,
    ForeignKey,
    Integer,
    MetaData,
    Text,
    TypeDecorator,
    UniqueConstraint,
    create_engine,
    event,
    func,
    insert,
    make_url,
    select,
    text,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

from agent.models import AttemptRecord, LLMCallRecord, Record, Usage, ValidationResult

Clock = Callable[[], datetime]
TaskRunStatus = Literal["running", "complete", "partial", "failed", "cancelled", "error"]
ValidationKind = Literal["baseline", "attempt"]

_ALEMBIC_IN_USE = threading.Lock()  # alembic's `context` and `op` are process-wide proxies
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


# --- tables ----------------------------------------------------------------------------------


class Base(DeclarativeBase):
    """Declarative base of the run log; its metadata is what migrations must produce."""

    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        str: Text(),
        bool: Boolean(),
        datetime: UTCDateTime(),
    }
    id: Mapped[int] = mapped_column(Integer, primary_key=True, sort_order=-1)


class TaskRunRow(Base):
    """One agent run over a repository (a solve, or one pass of an orchestrator run)."""

    __tablename__ = "task_runs"
    task_id: Mapped[str] = mapped_column(unique=True)
    repo_path: Mapped[str]
    task_description: Mapped[str]
    mode: Mapped[str]
    status: Mapped[str]
    success: Mapped[bool | None]
    total_prompt_tokens: Mapped[int] = mapped_column(default=0, server_default="0")
    total_completion_tokens: Mapped[int] = mapped_column(default=0, server_default="0")
    total_latency_ms: Mapped[int] = mapped_column(default=0, server_default="0")
    final_diff: Mapped[str | None]
    branch: Mapped[str | None]
    config_json: Mapped[str | None]
    error: Mapped[str | None]
    created_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]


class AttemptRow(Base):
    """One generate → apply → validate attempt of a task run."""

    __tablename__ = "run_attempts"
    task_run_id: Mapped[int] = mapped_column(ForeignKey("task_runs.id"), index=True)
    attempt: Mapped[int]
    prompt_tokens: Mapped[int]
    completion_tokens: Mapped[int]
    latency_ms: Mapped[int]
    raw_response: Mapped[str]
    patch_applied: Mapped[bool]
    error_info: Mapped[str | None]
    unified_diff: Mapped[str]
    created_at: Mapped[datetime]


class ValidationRow(Base):
    """One run of the test, lint and type-check commands."""

    __tablename__ = "validation_results"
    attempt_id: Mapped[int | None] = mapped_column(ForeignKey("run_attempts.id"), index=True)
    task_run_id: Mapped[int] = mapped_column(ForeignKey("task_runs.id"), index=True)
    kind: Mapped[str]
    success: Mapped[bool]
    test_output: Mapped[str | None]
    lint_output: Mapped[str | None]
    type_check_output: Mapped[str | None]
    failing_tests: Mapped[list[str]] = mapped_column(JSONText)
    passing_tests: Mapped[list[str]] = mapped_column(JSONText)
    exit_code: Mapped[int | None]
    timed_out: Mapped[bool]
    duration_ms: Mapped[int]
    created_at: Mapped[datetime]


class OrchestratorRunRow(Base):
    """One orchestrated solve: a meta-plan, its parts and their steps."""

    __tablename__ = "orchestrator_runs"
    task_id: Mapped[str] = mapped_column(unique=True)
    repo_path: Mapped[str]
    task_description: Mapped[str]
    total_parts: Mapped[int | None]
    total_steps: Mapped[int | None]
    parts_completed: Mapped[int] = mapped_column(default=0, server_default="0")
    steps_completed: Mapped[int] = mapped_column(default=0, server_default="0")
    status: Mapped[str]
    created_at: Mapped[datetime]
    completed_at: Mapped[datetime | None]


class PassRow(Base):
    """The link from an orchestrator run to the task run of one of its passes."""

    __tablename__ = "orchestrator_passes"
    orchestrator_run_id: Mapped[int] = mapped_column(ForeignKey("orchestrator_runs.id"), index=True)
    task_run_id: Mapped[int] = mapped_column(ForeignKey("task_runs.id"), index=True)
    pass_type: Mapped[str]
    part_id: Mapped[str | None]
    step_id: Mapped[str | None]
    sequence_order: Mapped[int]
    created_at: Mapped[datetime]


class LLMCallRow(Base):
    """One model call, with its prompts and answer."""

    __tablename__ = "llm_calls"
    task_run_id: Mapped[int | None] = mapped_column(ForeignKey("task_runs.id"), index=True)
    stage: Mapped[str]
    role: Mapped[str]
    model: Mapped[str]
    system_prompt: Mapped[str]
    user_prompt: Mapped[str]
    response: Mapped[str | None]
    prompt_tokens: Mapped[int]
    completion_tokens: Mapped[int]
    tokens_estimated: Mapped[bool]
    latency_ms: Mapped[int]
    error: Mapped[str | None]
    created_at: Mapped[datetime]


class StateRow(Base):
    """One JSON value of a run's session state."""

    __tablename__ = "session_state"
    __table_args__ = (UniqueConstraint("run_key", "key"),)
    run_key: Mapped[str]
    key: Mapped[str]
    value: Mapped[str]
    updated_at: Mapped[datetime]


# --- what readers return ---------------------------------------------------------------------


class TaskRunSummary(Record):
    """One line of `cra runs`: a task run at a glance."""

    id: int
    task_id: str
    status: str
    repo_path: str
    task_description: str
    created_at: datetime
    total_tokens: int
    attempts: int


class ValidationDetail(Record):
    """A stored validation with its place in the run."""

    id: int
    kind: str
    attempt_id: int | None
    created_at: datetime
    result: ValidationResult


class AttemptDetail(Record):
    """A stored attempt with the validations that judged it."""

    id: int
    attempt: int
    prompt_tokens: int
    completion_tokens: int
    latency_ms: int
    raw_response: str
    patch_applied: bool
    error_info: str | None
    unified_diff: str
    created_at: datetime
    validations: list[ValidationDetail]


class LLMCallDetail(Record):
    """A stored model call."""

    id: int
    created_at: datetime
    record: LLMCallRecord


class TaskRunDetail(Record):
    """A task run with everything recorded under it, in the order it happened."""

    id: int
    task_id: str
    repo_path: str
    task_description: str
    mode: str
    status: str
    success: bool | None
    usage: Usage
    final_diff: str | None
    branch: str | None
    config_json: str | None
    error: str | None
    created_at: datetime
    completed_at: datetime | None
    baseline: list[ValidationDetail]
    attempts: list[AttemptDetail]
    llm_calls: list[LLMCallDetail]


class PassDetail(Record):
    """One pass of an orchestrator run and the task run that holds its records."""

    id: int
    pass_type: str
    part_id: str | None
    step_id: str | None
    sequence_order: int
    task_run_id: int
    created_at: datetime


class OrchestratorRunSummary(Record):
    """One line of `cra runs`: an orchestrator run at a glance."""

    id: int
    task_id: str
    repo_path: str
    task_description: str
    total_steps: int | None
    steps_completed: int
    status: str
    created_at: datetime


class OrchestratorRunDetail(Record):
    """An orchestrator run with its passes in sequence order."""

    id: int
    task_id: str
    repo_path: str
    task_description: str
    total_parts: int | None
    total_steps: int | None
    parts_completed: int
    steps_completed: int
    status: str
    created_at: datetime
    completed_at: datetime | None
    passes: list[PassDetail]


# --- opening ---------------------------------------------------------------------------------


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


def upgrade(engine: Engine) -> None:
    """Bring the schema to the newest migration (no alembic.ini needed)."""
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


# --- the run log -----------------------------------------------------------------------------


class Database:
    """A migrated database: the engine, a session factory, the clock; closed once."""

    def __init__(self, engine: Engine, *, clock: Clock | None = None) -> None:
        self._engine = engine
        self._clock = clock or utc_now
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    @classmethod
    def open(cls, url: str, *, clock: Clock | None = None) -> Self:
        """Connect to the database at `url` and migrate it to the newest schema."""
        engine = build_engine(url)
        try:
            upgrade(engine)
        except BaseException:
            engine.dispose()
            raise
        return cls(engine, clock=clock)

    @property
    def engine(self) -> Engine:
        return self._engine

    def close(self) -> None:
        """Release every pooled connection."""
        self._engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class RunLog(Database):
    """The one writer and reader of the run log; every write commits at once."""

    def _add(self, row: Base) -> int:
        """Insert one row in its own transaction and return its id.

        Core statements, not the ORM unit of work: a run writes hundreds of records, one
        transaction each, and the session machinery cost more than the write itself.
        """
        kind = type(row)
        values = {k: v for k, v in vars(row).items() if k in kind.__table__.c}
        with self._engine.begin() as conn:
            return int(conn.execute(insert(kind).values(values).returning(kind.id)).scalar_one())

    def _update(self, kind: type[Base], row_id: int, **values: Any) -> None:
        """Set columns of one row in its own transaction; LookupError when it is missing."""
        with self._engine.begin() as conn:
            result = conn.execute(update(kind).where(kind.id == row_id).values(**values))
            if result.rowcount == 0:
                raise LookupError(f"no {kind.__tablename__} row with id {row_id}")

    # --- task runs ---------------------------------------------------------------------------

    def start_task_run(
        self,
        *,
        task_id: str,
        repo_path: str,
        task_description: str,
        mode: str,
        config_json: str | None = None,
    ) -> int:
        """Record a task run as running; returns its id."""
        return self._add(
            TaskRunRow(
                task_id=task_id,
                repo_path=repo_path,
                task_description=task_description,
                mode=mode,
                status="running",
                config_json=config_json,
                created_at=self._clock(),
            )
        )

    def finish_task_run(
        self,
        task_run_id: int,
        *,
        status: TaskRunStatus,
        success: bool | None,
        usage: Usage,
        final_diff: str | None = None,
        branch: str | None = None,
        error: str | None = None,
    ) -> None:
        """Record how a task run ended and what it cost."""
        self._update(
            TaskRunRow,
            task_run_id,
            status=status,
            success=success,
            total_prompt_tokens=usage.prompt_tokens,
            total_completion_tokens=usage.completion_tokens,
            total_latency_ms=usage.latency_ms,
            final_diff=final_diff,
            branch=branch,
            error=error,
            completed_at=self._clock(),
        )

    def record_attempt(self, task_run_id: int, attempt: AttemptRecord) -> int:
        """Record one attempt (not its validation); returns its id."""
        return self._add(
            AttemptRow(
                task_run_id=task_run_id,
                attempt=attempt.attempt,
                prompt_tokens=attempt.usage.prompt_tokens,
                completion_tokens=attempt.usage.completion_tokens,
                latency_ms=attempt.usage.latency_ms,
                raw_response=attempt.raw_response,
                patch_applied=attempt.patch_applied,
                error_info=attempt.error_info,
                unified_diff=attempt.unified_diff,
                created_at=self._clock(),
            )
        )

    def record_validation(
        self,
        task_run_id: int,
        validation: ValidationResult,
        *,
        attempt_id: int | None,
        kind: ValidationKind,
    ) -> int:
        """Record one validation (a baseline has no attempt); returns its id."""
        return self._add(
            ValidationRow(
                task_run_id=task_run_id,
                attempt_id=attempt_id,
                kind=kind,
                created_at=self._clock(),
                **validation.model_dump(),
            )
        )

    def record_llm_call(self, record: LLMCallRecord) -> int:
        """Record one model call, linked to its task run when it has one; returns its id."""
        return self._add(LLMCallRow(created_at=self._clock(), **record.model_dump()))

    # --- orchestrator runs -------------------------------------------------------------------

    def start_orchestrator_run(self, *, task_id: str, repo_path: str, task_description: str) -> int:
        """Record an orchestrator run as running; returns its id."""
        return self._add(
            OrchestratorRunRow(
                task_id=task_id,
                repo_path=repo_path,
                task_description=task_description,
                status="running",
                created_at=self._clock(),
            )
        )

    def update_orchestrator_run(
        self,
        run_id: int,
        *,
        total_parts: int | None = None,
        total_steps: int | None = None,
        parts_completed: int | None = None,
        steps_completed: int | None = None,
        status: str | None = None,
        completed: bool = False,
    ) -> None:
        """Set the given progress fields of an orchestrator run; `completed` stamps its end."""
        given = {
            "total_parts": total_parts,
            "total_steps": total_steps,
            "parts_completed": parts_completed,
            "steps_completed": steps_completed,
            "status": status,
        }
        values: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
        if completed:
            values["completed_at"] = self._clock()
        self._update(OrchestratorRunRow, run_id, **values)

    def record_pass(
        self,
        *,
        orchestrator_run_id: int,
        task_run_id: int,
        pass_type: str,
        sequence_order: int,
        part_id: str | None = None,
        step_id: str | None = None,
    ) -> int:
        """Link one pass (held by a task run) to its orchestrator run; returns its id."""
        return self._add(
            PassRow(
                orchestrator_run_id=orchestrator_run_id,
                task_run_id=task_run_id,
                pass_type=pass_type,
                sequence_order=sequence_order,
                part_id=part_id,
                step_id=step_id,
                created_at=self._clock(),
            )
        )

    # --- session state -----------------------------------------------------------------------

    def set_state(self, run_key: str, key: str, value: object) -> None:
        """Store a JSON-able value (pydantic models included) under (run_key, key)."""
        insert = postgresql.insert if self._engine.dialect.name == "postgresql" else sqlite.insert
        row = {
            "run_key": run_key,
            "key": key,
            "value": pydantic_core.to_json(value).decode(),
            "updated_at": self._clock(),
        }
        statement = insert(StateRow).values(row)
        statement = statement.on_conflict_do_update(
            index_elements=["run_key", "key"],
            set_={"value": statement.excluded.value, "updated_at": statement.excluded.updated_at},
        )
        with self._engine.begin() as conn:
            conn.execute(statement)

    def get_state(self, run_key: str, key: str) -> Any | None:
        """The decoded value under (run_key, key), or None."""
        query = select(StateRow.value).where(StateRow.run_key == run_key, StateRow.key == key)
        with self._sessions() as session:
            raw = session.scalar(query)
        return None if raw is None else json.loads(raw)

    def state_keys(self, run_key: str) -> list[str]:
        """The keys stored for a run, sorted."""
        query = select(StateRow.key).where(StateRow.run_key == run_key).order_by(StateRow.key)
        with self._sessions() as session:
            return list(session.scalars(query))

    # --- readers -----------------------------------------------------------------------------

    def list_task_runs(
        self, *, limit: int = 20, modes: Sequence[str] | None = None
    ) -> list[TaskRunSummary]:
        """The newest task runs first (only those of `modes` if given), with token totals and
        attempt counts."""
        attempts = (
            select(func.count(AttemptRow.id))
            .where(AttemptRow.task_run_id == TaskRunRow.id)
            .scalar_subquery()
        )
        query = select(TaskRunRow, attempts).order_by(TaskRunRow.id.desc()).limit(limit)
        if modes is not None:
            query = query.where(TaskRunRow.mode.in_(list(modes)))
        with self._sessions() as session:
            return [_summary(row, count) for row, count in session.execute(query)]

    def get_task_run(self, id_or_task_id: int | str) -> TaskRunDetail | None:
        """A task run with its baseline, attempts, validations and model calls; None if unknown."""
        column = TaskRunRow.id if isinstance(id_or_task_id, int) else TaskRunRow.task_id
        with self._sessions() as session:
            run = session.scalar(select(TaskRunRow).where(column == id_or_task_id))
            if run is None:
                return None
            return _detail(session, run)

    def list_orchestrator_runs(self, *, limit: int = 20) -> list[OrchestratorRunSummary]:
        """The newest orchestrator runs first."""
        query = select(OrchestratorRunRow).order_by(OrchestratorRunRow.id.desc()).limit(limit)
        with self._sessions() as session:
            return [
                OrchestratorRunSummary(**_pick(row, OrchestratorRunSummary))
                for row in session.scalars(query)
            ]

    def get_orchestrator_run(self, id_or_task_id: int | str) -> OrchestratorRunDetail | None:
        """An orchestrator run with its passes in sequence order; None if unknown."""
        column = (
            OrchestratorRunRow.id if isinstance(id_or_task_id, int) else OrchestratorRunRow.task_id
        )
        with self._sessions() as session:
            run = session.scalar(select(OrchestratorRunRow).where(column == id_or_task_id))
            if run is None:
                return None
            order = (PassRow.sequence_order, PassRow.id)
            rows = session.scalars(
                select(PassRow).where(PassRow.orchestrator_run_id == run.id).order_by(*order)
            )
            passes = [PassDetail.model_validate(p, from_attributes=True) for p in rows]
            return OrchestratorRunDetail(passes=passes, **_pick(run, OrchestratorRunDetail))


# --- row → model -----------------------------------------------------------------------------


def _pick(row: Base, model: type[BaseModel]) -> dict[str, Any]:
    """The row's column values that `model` has fields for."""
    return {
        c.key: getattr(row, c.key) for c in row.__table__.columns if c.key in model.model_fields
    }


def _summary(row: TaskRunRow, attempts: int) -> TaskRunSummary:
    """A task run row as a summary line (first line of the description, at most 80 chars)."""
    lines = row.task_description.strip().splitlines() or [""]
    short = lines[0] if len(lines[0]) <= 80 else lines[0][:79] + "…"
    total = row.total_prompt_tokens + row.total_completion_tokens
    values = {**_pick(row, TaskRunSummary), "task_description": short}
    return TaskRunSummary(total_tokens=total, attempts=attempts, **values)


def _validation(row: ValidationRow) -> ValidationDetail:
    """A validation row as a detail."""
    result = ValidationResult.model_validate(row, from_attributes=True)
    return ValidationDetail(result=result, **_pick(row, ValidationDetail))


def _llm_call(row: LLMCallRow) -> LLMCallDetail:
    """A model-call row as a detail."""
    record = LLMCallRecord.model_validate(row, from_attributes=True)
    return LLMCallDetail(record=record, **_pick(row, LLMCallDetail))


def _detail(session: Session, run: TaskRunRow) -> TaskRunDetail:
    """Everything recorded under one task run, each kind in insertion order."""
    validations = [
        _validation(v)
        for v in session.scalars(
            select(ValidationRow).where(ValidationRow.task_run_id == run.id).order_by("id")
        )
    ]
    calls = [
        _llm_call(c)
        for c in session.scalars(
            select(LLMCallRow).where(LLMCallRow.task_run_id == run.id).order_by("id")
        )
    ]
    attempts = [
        AttemptDetail(
            validations=[v for v in validations if v.attempt_id == a.id], **_pick(a, AttemptDetail)
        )
        for a in session.scalars(
            select(AttemptRow).where(AttemptRow.task_run_id == run.id).order_by("id")
        )
    ]
    usage = Usage(
        prompt_tokens=run.total_prompt_tokens,
        completion_tokens=run.total_completion_tokens,
        latency_ms=run.total_latency_ms,
        calls=len(calls),
        estimated=any(c.record.tokens_estimated for c in calls),
    )
    baseline = [v for v in validations if v.kind == "baseline"]
    return TaskRunDetail(
        usage=usage,
        baseline=baseline,
        attempts=attempts,
        llm_calls=calls,
        **_pick(run, TaskRunDetail),
    )
