"""The run log's tables (SQLAlchemy Core): what the migrations must produce.

Each table is declared by a row class: its columns are class attributes, and the class stands
for its table in statements (`insert(TaskRunRow)`, `TaskRunRow.id == …`). Core, not the ORM:
the run log writes with Core statements and reads rows as named tuples, and mapping classes
would cost every `cra` start SQLAlchemy's ORM, a fifth of its imports before the first model
call (issue 14).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy import (
    Boolean,
    Column,
    Double,
    ForeignKey,
    Integer,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
)

from agent.runlog.columns import NAMING, JSONText, UTCDateTime

if TYPE_CHECKING:
    from sqlalchemy.sql.elements import ColumnClause
    from sqlalchemy.sql.selectable import FromClause


class Base:
    """A run-log table, declared by a subclass's Column attributes; never instantiated."""

    metadata: ClassVar[MetaData] = MetaData(naming_convention=NAMING)
    __tablename__: ClassVar[str]
    __table__: ClassVar[Table]
    __table_args__: ClassVar[tuple[Any, ...]] = ()
    id: ClassVar[ColumnClause[int]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """The table of the class's Column attributes, in order, after an integer key `id`."""
        super().__init_subclass__(**kwargs)
        columns = [Column("id", Integer, primary_key=True)]
        for name, value in list(vars(cls).items()):
            if isinstance(value, Column):
                value.name = value.key = name
                columns.append(value)
        cls.__table__ = Table(cls.__tablename__, cls.metadata, *columns, *cls.__table_args__)
        cls.id = cls.__table__.c.id

    @classmethod
    def __clause_element__(cls) -> FromClause:
        """The table, where a statement is given the class."""
        return cls.__table__


def _text(*, null: bool = False, unique: bool | None = None) -> ColumnClause[str]:
    return Column(Text, nullable=null, unique=unique)


def _int(*, null: bool = False) -> ColumnClause[int]:
    return Column(Integer, nullable=null)


def _count() -> ColumnClause[int]:
    """A counter that starts at 0 (in Python and in the database)."""
    return Column(Integer, nullable=False, default=0, server_default="0")


def _bool(*, null: bool = False) -> ColumnClause[bool]:
    return Column(Boolean, nullable=null)


def _time(*, null: bool = False) -> ColumnClause[datetime]:
    return Column(UTCDateTime(), nullable=null)


def _json(*, null: bool = False) -> ColumnClause[Any]:
    return Column(JSONText, nullable=null)


def _float(*, null: bool = False) -> ColumnClause[float]:
    return Column(Double, nullable=null)


def _link(table: str, *, null: bool = False) -> ColumnClause[int]:
    """An indexed reference to another table's id."""
    return Column(Integer, ForeignKey(f"{table}.id"), nullable=null, index=True)


class TaskRunRow(Base):
    """One agent run over a repository (a solve, or one pass of an orchestrator run)."""

    __tablename__ = "task_runs"
    task_id = _text(unique=True)
    repo_path = _text()
    task_description = _text()
    mode = _text()
    status = _text()
    success = _bool(null=True)
    total_prompt_tokens = _count()
    total_completion_tokens = _count()
    total_latency_ms = _count()
    final_diff = _text(null=True)
    branch = _text(null=True)
    config_json = _text(null=True)
    error = _text(null=True)
    created_at = _time()
    completed_at = _time(null=True)


class AttemptRow(Base):
    """One generate → apply → validate attempt of a task run."""

    __tablename__ = "run_attempts"
    task_run_id = _link("task_runs")
    attempt = _int()
    prompt_tokens = _int()
    completion_tokens = _int()
    latency_ms = _int()
    raw_response = _text()
    patch_applied = _bool()
    error_info = _text(null=True)
    unified_diff = _text()
    created_at = _time()


class ValidationRow(Base):
    """One run of the test, lint and type-check commands."""

    __tablename__ = "validation_results"
    attempt_id = _link("run_attempts", null=True)
    task_run_id = _link("task_runs")
    kind = _text()
    success = _bool()
    test_output = _text(null=True)
    lint_output = _text(null=True)
    type_check_output = _text(null=True)
    failing_tests = _json()
    passing_tests = _json()
    exit_code = _int(null=True)
    timed_out = _bool()
    duration_ms = _int()
    report = _json(null=True)
    timeout_s = _float(null=True)
    rerun_for_time_s = _float(null=True)
    created_at = _time()


class OrchestratorRunRow(Base):
    """One orchestrated solve: a meta-plan, its parts and their steps."""

    __tablename__ = "orchestrator_runs"
    task_id = _text(unique=True)
    repo_path = _text()
    task_description = _text()
    total_parts = _int(null=True)
    total_steps = _int(null=True)
    parts_completed = _count()
    steps_completed = _count()
    status = _text()
    created_at = _time()
    completed_at = _time(null=True)


class PassRow(Base):
    """The link from an orchestrator run to the task run of one of its passes."""

    __tablename__ = "orchestrator_passes"
    orchestrator_run_id = _link("orchestrator_runs")
    task_run_id = _link("task_runs")
    pass_type = _text()
    part_id = _text(null=True)
    step_id = _text(null=True)
    sequence_order = _int()
    created_at = _time()


class LLMCallRow(Base):
    """One model call, with its prompts and answer."""

    __tablename__ = "llm_calls"
    task_run_id = _link("task_runs", null=True)
    stage = _text()
    role = _text()
    model = _text()
    system_prompt = _text()
    user_prompt = _text()
    response = _text(null=True)
    prompt_tokens = _int()
    completion_tokens = _int()
    tokens_estimated = _bool()
    latency_ms = _int()
    error = _text(null=True)
    created_at = _time()


class StateRow(Base):
    """One JSON value of a run's session state."""

    __tablename__ = "session_state"
    __table_args__ = (UniqueConstraint("run_key", "key"),)
    run_key = _text()
    key = _text()
    value = _text()
    updated_at = _time()
