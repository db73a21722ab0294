"""The run log: task runs, attempts, validations, model calls, orchestrator runs and passes,
session state.

Revision ID: 0001
Revises:
Create Date: 2025-11-22 00:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _id(table: str) -> list[sa.SchemaItem]:
    """The integer primary key every table has."""
    return [
        sa.Column("id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=f"pk_{table}"),
    ]


def _ts(name: str, nullable: bool = False) -> sa.Column[sa.DateTime]:
    """A timezone-aware timestamp (stored as UTC)."""
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _fk(table: str, column: str, target: str) -> sa.ForeignKeyConstraint:
    """A foreign key to `target.id`, named by the store's naming convention."""
    return sa.ForeignKeyConstraint([column], [f"{target}.id"], name=f"fk_{table}_{column}_{target}")


def _index(table: str, column: str) -> None:
    """An index on a foreign-key column, named by the store's naming convention."""
    op.create_index(f"ix_{table}_{column}", table, [column], unique=False)


def upgrade() -> None:
    op.create_table(
        "task_runs",
        *_id("task_runs"),
        sa.Column("task_id", sa.Text(), nullable=False),
        sa.Column("repo_path", sa.Text(), nullable=False),
        sa.Column("task_description", sa.Text(), nullable=False),
        sa.Column("mode", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("success", sa.Boolean(), nullable=True),
        sa.Column("total_prompt_tokens", sa.Integer(), server_default="0", nullable=False),
        sa.Column("total_completion_tokens", sa.Integer(), server_default="0", nullable=False),
        sa.Column("total_latency_ms", sa.Integer(), server_default="0", nullable=False),
        sa.Column("final_diff", sa.Text(), nullable=True),
        sa.Column("branch", sa.Text(), nullable=True),
        sa.Column("config_json", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        _ts("created_at"),
        _ts("completed_at", nullable=True),
        sa.UniqueConstraint("task_id", name="uq_task_runs_task_id"),
    )
    op.create_table(
        "run_attempts",
        *_id("run_attempts"),
        sa.Column("task_run_id", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("raw_response", sa.Text(), nullable=False),
        sa.Column("patch_applied", sa.Boolean(), nullable=False),
        sa.Column("error_info", sa.Text(), nullable=True),
        sa.Column("unified_diff", sa.Text(), nullable=False),
        _ts("created_at"),
        _fk("run_attempts", "task_run_id", "task_runs"),
    )
    _index("run_attempts", "task_run_id")
    op.create_table(
        "validation_results",
        *_id("validation_results"),
        sa.Column("attempt_id", sa.Integer(), nullable=True),
        sa.Column("task_run_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("test_output", sa.Text(), nullable=True),
        sa.Column("lint_output", sa.Text(), nullable=True),
        sa.Column("type_check_output", sa.Text(), nullable=True),
        sa.Column("failing_tests", sa.Text(), nullable=False),
        sa.Column("passing_tests", sa.Text(), nullable=False),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("timed_out", sa.Boolean(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        _ts("created_at"),
        _fk("validation_results", "attempt_id", "run_attempts"),
        _fk("validation_results", "task_run_id", "task_runs"),
    )
    _index("validation_results", "attempt_id")
    _index("validation_results", "task_run_id")
    op.create_table(
        "orchestrator_runs",
        *_id("orchestrator_runs"),
        sa.Column("task_id", sa.Text(), nullable=False),
        sa.Column("repo_path", sa.Text(), nullable=False),
        sa.Column("task_description", sa.Text(), nullable=False),
        sa.Column("total_parts", sa.Integer(), nullable=True),
        sa.Column("total_steps", sa.Integer(), nullable=True),
        sa.Column("parts_completed", sa.Integer(), server_default="0", nullable=False),
        sa.Column("steps_completed", sa.Integer(), server_default="0", nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        _ts("created_at"),
        _ts("completed_at", nullable=True),
        sa.UniqueConstraint("task_id", name="uq_orchestrator_runs_task_id"),
    )
    op.create_table(
        "orchestrator_passes",
        *_id("orchestrator_passes"),
        sa.Column("orchestrator_run_id", sa.Integer(), nullable=False),
        sa.Column("task_run_id", sa.Integer(), nullable=False),
        sa.Column("pass_type", sa.Text(), nullable=False),
        sa.Column("part_id", sa.Text(), nullable=True),
        sa.Column("step_id", sa.Text(), nullable=True),
        sa.Column("sequence_order", sa.Integer(), nullable=False),
        _ts("created_at"),
        _fk("orchestrator_passes", "orchestrator_run_id", "orchestrator_runs"),
        _fk("orchestrator_passes", "task_run_id", "task_runs"),
    )
    _index("orchestrator_passes", "orchestrator_run_id")
    _index("orchestrator_passes", "task_run_id")
    op.create_table(
        "llm_calls",
        *_id("llm_calls"),
        sa.Column("task_run_id", sa.Integer(), nullable=True),
        sa.Column("stage", sa.Text(), nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        sa.Column("system_prompt", sa.Text(), nullable=False),
        sa.Column("user_prompt", sa.Text(), nullable=False),
        sa.Column("response", sa.Text(), nullable=True),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("tokens_estimated", sa.Boolean(), nullable=False),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        _ts("created_at"),
        _fk("llm_calls", "task_run_id", "task_runs"),
    )
    _index("llm_calls", "task_run_id")
    op.create_table(
        "session_state",
        *_id("session_state"),
        sa.Column("run_key", sa.Text(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        _ts("updated_at"),
        sa.UniqueConstraint("run_key", "key", name="uq_session_state_run_key"),
    )


def downgrade() -> None:
    op.drop_table("session_state")
    op.drop_index("ix_llm_calls_task_run_id", table_name="llm_calls")
    op.drop_table("llm_calls")
    op.drop_index("ix_orchestrator_passes_task_run_id", table_name="orchestrator_passes")
    op.drop_index("ix_orchestrator_passes_orchestrator_run_id", table_name="orchestrator_passes")
    op.drop_table("orchestrator_passes")
    op.drop_table("orchestrator_runs")
    op.drop_index("ix_validation_results_task_run_id", table_name="validation_results")
    op.drop_index("ix_validation_results_attempt_id", table_name="validation_results")
    op.drop_table("validation_results")
    op.drop_index("ix_run_attempts_task_run_id", table_name="run_attempts")
    op.drop_table("run_attempts")
    op.drop_table("task_runs")
