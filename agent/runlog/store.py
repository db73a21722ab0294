"""The run log: the one writer and reader of its runs, passes, attempts, calls and state."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import pydantic_core
from sqlalchemy import bindparam, func, select, update
from sqlalchemy.sql.expression import Executable

from agent.models import AttemptRecord, LLMCallRecord, Usage, ValidationResult
from agent.runlog.database import Database
from agent.runlog.prepared import Prepared, insert_row, update_row
from agent.runlog.tables import (
    AttemptRow,
    Base,
    LLMCallRow,
    OrchestratorRunRow,
    PassRow,
    StateRow,
    TaskRunRow,
    ValidationRow,
)

if TYPE_CHECKING:  # the readers' models: imported by the readers, not by every writer
    from agent.runlog.details import (
        OrchestratorRunDetail,
        OrchestratorRunSummary,
        TaskRunDetail,
        TaskRunSummary,
    )


def _state_upsert(dialect: str) -> Executable:
    """INSERT of a state value, or UPDATE of the one already under its (run_key, key); the
    dialect's module imported only for its database (PostgreSQL's is a tenth of SQLAlchemy's
    import time, which no SQLite `cra` should pay)."""
    table = StateRow.__table__
    values = {
        name: bindparam(name, type_=table.c[name].type)
        for name in ("run_key", "key", "value", "updated_at")
    }
    if dialect == "postgresql":
        from sqlalchemy.dialects import postgresql

        pg = postgresql.insert(table).values(values)
        return pg.on_conflict_do_update(
            index_elements=["run_key", "key"],
            set_={"value": pg.excluded.value, "updated_at": pg.excluded.updated_at},
        )
    from sqlalchemy.dialects import sqlite

    lite = sqlite.insert(table).values(values)
    return lite.on_conflict_do_update(
        index_elements=["run_key", "key"],
        set_={"value": lite.excluded.value, "updated_at": lite.excluded.updated_at},
    )


SET_STATE = Prepared(_state_upsert)
TaskRunStatus = Literal["running", "complete", "partial", "failed", "cancelled", "error"]
ValidationKind = Literal["setup", "baseline", "attempt", "original", "piece", "left_out"]
# piece: the tests after one step of a group, for information (the group is gated once all are
# in); left_out: a run a test file stopped, again without it, for information


class RunLog(Database):
    """The one writer and reader of the run log; every write commits at once."""

    def _add(self, kind: type[Base], /, **given: Any) -> int:
        """Insert one row (the given values that are its columns, its scalar defaults for the
        others) in its own transaction, or the batch's; its id.

        A statement prepared once per set of columns, run on the DB-API connection: a run writes
        hundreds of records, and building, compiling and executing each through SQLAlchemy (let
        alone the ORM's unit of work) cost more than the write itself.
        """
        table = kind.__table__
        values = {name: value for name, value in given.items() if name in table.c}
        for column in table.c:
            if column.key not in values and column.default is not None:
                if not column.default.is_scalar:
                    raise TypeError(f"{table.name}.{column.key}: only scalar defaults are filled")
                values[column.key] = column.default.arg  # type: ignore[attr-defined]
        with self._raw_write() as connection:
            row = insert_row(table, frozenset(values)).first(connection, self.dialect, values)
        if row is None:
            raise LookupError(f"no id came back from the insert into {table.name}")
        return int(row[0])

    def _update(self, kind: type[Base], row_id: int, /, **values: Any) -> None:
        """Set columns of one row in its own transaction, or the batch's; LookupError when it
        is missing."""
        table = kind.__table__
        statement = update_row(table, frozenset(values))
        with self._raw_write() as connection:
            count, _ = statement.execute(connection, self.dialect, {**values, "row_id": row_id})
        if count == 0:
            raise LookupError(f"no {table.name} row with id {row_id}")

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
            TaskRunRow,
            task_id=task_id,
            repo_path=repo_path,
            task_description=task_description,
            mode=mode,
            status="running",
            config_json=config_json,
            created_at=self._clock(),
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
            AttemptRow,
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

    def update_attempt(self, attempt_id: int, *, error_info: str | None) -> None:
        """Set what went wrong in an attempt once its test run was judged."""
        self._update(AttemptRow, attempt_id, error_info=error_info)

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
            ValidationRow,
            task_run_id=task_run_id,
            attempt_id=attempt_id,
            kind=kind,
            created_at=self._clock(),
            **validation.model_dump(),
        )

    def record_llm_call(self, record: LLMCallRecord) -> int:
        """Record one model call, linked to its task run when it has one; returns its id."""
        return self._add(LLMCallRow, created_at=self._clock(), **record.model_dump())

    # --- orchestrator runs -------------------------------------------------------------------

    def start_orchestrator_run(self, *, task_id: str, repo_path: str, task_description: str) -> int:
        """Record an orchestrator run as running; returns its id."""
        return self._add(
            OrchestratorRunRow,
            task_id=task_id,
            repo_path=repo_path,
            task_description=task_description,
            status="running",
            created_at=self._clock(),
        )

    def abandon_run(self, task_id: str, error: str) -> None:
        """A run whose process died while it ran: failed, if the log still says running (an
        orchestrated run's passes that were running too, each with the error)."""
        orchestrated = self.get_orchestrator_run(task_id)
        if orchestrated is not None and orchestrated.status == "running":
            self.update_orchestrator_run(orchestrated.id, status="failed", completed=True)
            with self._write() as conn:
                conn.execute(
                    update(TaskRunRow)
                    .where(
                        TaskRunRow.id.in_([p.task_run_id for p in orchestrated.passes]),
                        TaskRunRow.status == "running",
                    )
                    .values(status="failed", success=False, error=error, completed_at=self._clock())
                )
        single = self.get_task_run(task_id)
        if single is not None and single.status == "running":
            self.finish_task_run(
                single.id, status="failed", success=False, usage=Usage(), error=error
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
            PassRow,
            orchestrator_run_id=orchestrator_run_id,
            task_run_id=task_run_id,
            pass_type=pass_type,
            sequence_order=sequence_order,
            part_id=part_id,
            step_id=step_id,
            created_at=self._clock(),
        )

    # --- session state -----------------------------------------------------------------------

    def set_state(self, run_key: str, key: str, value: object) -> None:
        """Store a JSON-able value (pydantic models included) under (run_key, key)."""
        values = {
            "run_key": run_key,
            "key": key,
            "value": pydantic_core.to_json(value).decode(),
            "updated_at": self._clock(),
        }
        with self._raw_write() as connection:
            SET_STATE.execute(connection, self.dialect, values)

    def get_state(self, run_key: str, key: str) -> Any | None:
        """The decoded value under (run_key, key), or None."""
        query = select(StateRow.value).where(StateRow.run_key == run_key, StateRow.key == key)
        with self._engine.connect() as connection:
            raw = connection.scalar(query)
        return None if raw is None else json.loads(raw)

    def state_keys(self, run_key: str) -> list[str]:
        """The keys stored for a run, sorted."""
        query = select(StateRow.key).where(StateRow.run_key == run_key).order_by(StateRow.key)
        with self._engine.connect() as connection:
            return list(connection.scalars(query))

    # --- readers -----------------------------------------------------------------------------

    def list_task_runs(
        self, *, limit: int = 20, modes: Sequence[str] | None = None
    ) -> list[TaskRunSummary]:
        """The newest task runs first (only those of `modes` if given), with token totals and
        attempt counts."""
        from agent.runlog.details import summary_of

        attempts = (
            select(func.count(AttemptRow.id))
            .where(AttemptRow.task_run_id == TaskRunRow.id)
            .scalar_subquery()
            .label("attempt_count")
        )
        query = select(TaskRunRow, attempts).order_by(TaskRunRow.id.desc()).limit(limit)
        if modes is not None:
            query = query.where(TaskRunRow.mode.in_(list(modes)))
        with self._engine.connect() as connection:
            return [summary_of(row, row.attempt_count) for row in connection.execute(query)]

    def get_task_run(self, id_or_task_id: int | str) -> TaskRunDetail | None:
        """A task run with its baseline, attempts, validations and model calls; None if unknown."""
        from agent.runlog.details import detail_of

        column = TaskRunRow.id if isinstance(id_or_task_id, int) else TaskRunRow.task_id
        with self._engine.connect() as connection:
            run = connection.execute(select(TaskRunRow).where(column == id_or_task_id)).first()
            if run is None:
                return None
            return detail_of(connection, run)

    def list_orchestrator_runs(self, *, limit: int = 20) -> list[OrchestratorRunSummary]:
        """The newest orchestrator runs first."""
        from agent.runlog.details import OrchestratorRunSummary, columns_for

        query = select(OrchestratorRunRow).order_by(OrchestratorRunRow.id.desc()).limit(limit)
        with self._engine.connect() as connection:
            return [
                OrchestratorRunSummary(**columns_for(row, OrchestratorRunSummary))
                for row in connection.execute(query)
            ]

    def get_orchestrator_run(self, id_or_task_id: int | str) -> OrchestratorRunDetail | None:
        """An orchestrator run with its passes in sequence order; None if unknown."""
        from agent.runlog.details import OrchestratorRunDetail, PassDetail, columns_for

        column = (
            OrchestratorRunRow.id if isinstance(id_or_task_id, int) else OrchestratorRunRow.task_id
        )
        with self._engine.connect() as connection:
            run = connection.execute(
                select(OrchestratorRunRow).where(column == id_or_task_id)
            ).first()
            if run is None:
                return None
            order = (PassRow.sequence_order, PassRow.id)
            rows = connection.execute(
                select(PassRow).where(PassRow.orchestrator_run_id == run.id).order_by(*order)
            )
            passes = [PassDetail.model_validate(p, from_attributes=True) for p in rows]
            return OrchestratorRunDetail(passes=passes, **columns_for(run, OrchestratorRunDetail))
