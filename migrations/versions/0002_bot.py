"""The GitHub App's tables: webhook deliveries (dedupe) and runs.

Revision ID: 0002
Revises: 0001
Create Date: 2025-12-01 00:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ONE_ACTIVE_RUN = "status IN ('queued', 'running') AND command IN ('solve', 'plan')"


def _ts(name: str, nullable: bool = False) -> sa.Column[sa.DateTime]:
    """A timezone-aware timestamp (stored as UTC)."""
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _text(name: str, nullable: bool = False) -> sa.Column[sa.Text]:
    """A TEXT column."""
    return sa.Column(name, sa.Text(), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "deliveries",
        _text("delivery_id"),
        _text("event"),
        _text("action", nullable=True),
        _text("outcome", nullable=True),
        _ts("received_at"),
        sa.PrimaryKeyConstraint("delivery_id", name="pk_deliveries"),
    )
    op.create_index("ix_deliveries_received_at", "deliveries", ["received_at"], unique=False)
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), nullable=False),
        _text("status"),
        _text("command"),
        _text("source"),
        _text("actor"),
        _text("repository"),
        sa.Column("issue_number", sa.Integer(), nullable=False),
        sa.Column("is_pull_request", sa.Boolean(), nullable=False),
        _text("instructions"),
        _text("reply_text", nullable=True),
        sa.Column("related_run_id", sa.Integer(), nullable=True),
        sa.Column("installation_id", sa.BigInteger(), nullable=True),
        _text("delivery_id", nullable=True),
        sa.Column("comment_id", sa.BigInteger(), nullable=True),
        sa.Column("trigger_comment_id", sa.BigInteger(), nullable=True),
        sa.Column("check_run_id", sa.BigInteger(), nullable=True),
        _text("branch", nullable=True),
        sa.Column("pr_number", sa.Integer(), nullable=True),
        _text("pr_url", nullable=True),
        _text("error", nullable=True),
        _text("orchestrator_task_id", nullable=True),
        sa.Column("cancel_requested", sa.Boolean(), server_default=sa.false(), nullable=False),
        _ts("created_at"),
        _ts("started_at", nullable=True),
        _ts("finished_at", nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_runs"),
    )
    op.create_index("ix_runs_status", "runs", ["status"], unique=False)
    op.create_index(
        "ix_runs_repository_issue_number", "runs", ["repository", "issue_number"], unique=False
    )
    op.create_index(
        "uq_runs_one_active",
        "runs",
        ["repository", "issue_number"],
        unique=True,
        sqlite_where=sa.text(ONE_ACTIVE_RUN),
        postgresql_where=sa.text(ONE_ACTIVE_RUN),
    )


def downgrade() -> None:
    op.drop_index("uq_runs_one_active", table_name="runs")
    op.drop_index("ix_runs_repository_issue_number", table_name="runs")
    op.drop_index("ix_runs_status", table_name="runs")
    op.drop_table("runs")
    op.drop_index("ix_deliveries_received_at", table_name="deliveries")
    op.drop_table("deliveries")
