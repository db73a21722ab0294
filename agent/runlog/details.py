"""What readers of the run log get: summary and detail models, built from its rows."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import Connection, Row, select

from agent.models import LLMCallRecord, Record, Usage, ValidationResult
from agent.runlog.tables import AttemptRow, LLMCallRow, ValidationRow


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
    setup: list[ValidationDetail] = Field(default_factory=list)  # the setup step, if any


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


# --- row → model -----------------------------------------------------------------------------


def columns_for(row: Row[Any], model: type[BaseModel]) -> dict[str, Any]:
    """The row's column values that `model` has fields for."""
    return {key: value for key, value in row._mapping.items() if key in model.model_fields}


def summary_of(row: Row[Any], attempts: int) -> TaskRunSummary:
    """A task run row as a summary line (first line of the description, at most 80 chars)."""
    lines = row.task_description.strip().splitlines() or [""]
    short = lines[0] if len(lines[0]) <= 80 else lines[0][:79] + "…"
    total = row.total_prompt_tokens + row.total_completion_tokens
    values = {**columns_for(row, TaskRunSummary), "task_description": short}
    return TaskRunSummary(total_tokens=total, attempts=attempts, **values)


def _validation(row: Row[Any]) -> ValidationDetail:
    """A validation row as a detail."""
    result = ValidationResult.model_validate(row, from_attributes=True)
    return ValidationDetail(result=result, **columns_for(row, ValidationDetail))


def _llm_call(row: Row[Any]) -> LLMCallDetail:
    """A model-call row as a detail."""
    record = LLMCallRecord.model_validate(row, from_attributes=True)
    return LLMCallDetail(record=record, **columns_for(row, LLMCallDetail))


def detail_of(connection: Connection, run: Row[Any]) -> TaskRunDetail:
    """Everything recorded under one task run, each kind in insertion order."""
    validations = [
        _validation(v)
        for v in connection.execute(
            select(ValidationRow).where(ValidationRow.task_run_id == run.id).order_by("id")
        )
    ]
    calls = [
        _llm_call(c)
        for c in connection.execute(
            select(LLMCallRow).where(LLMCallRow.task_run_id == run.id).order_by("id")
        )
    ]
    attempts = [
        AttemptDetail(
            validations=[v for v in validations if v.attempt_id == a.id],
            **columns_for(a, AttemptDetail),
        )
        for a in connection.execute(
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
    setup = [v for v in validations if v.kind == "setup"]
    return TaskRunDetail(
        usage=usage,
        baseline=baseline,
        attempts=attempts,
        llm_calls=calls,
        setup=setup,
        **columns_for(run, TaskRunDetail),
    )
