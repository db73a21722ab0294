"""The run log's tables (SQLAlchemy rows): what the migrations must produce."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import Boolean, ForeignKey, Integer, MetaData, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from agent.database import NAMING, JSONText, UTCDateTime


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
    report: Mapped[dict[str, Any] | None] = mapped_column(JSONText)
    timeout_s: Mapped[float | None]
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
