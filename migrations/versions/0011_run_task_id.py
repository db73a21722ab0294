"""A bot run names the agent's run it started by the one run id the agent uses end to end:
`runs.orchestrator_task_id` is `runs.task_id`.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28 06:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.alter_column("orchestrator_task_id", new_column_name="task_id")


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.alter_column("task_id", new_column_name="orchestrator_task_id")
