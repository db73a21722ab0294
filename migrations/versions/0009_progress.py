"""Runs carry their own progress: the run stamps when it last moved (a model call, a test
command, an edit) and what that was, so that the reaper can end a run that stalled though its
worker's heartbeat still beats.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27 01:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("progress_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("progress", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("progress")
        batch.drop_column("progress_at")
