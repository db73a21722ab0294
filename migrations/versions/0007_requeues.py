"""Runs count how often the reaper queued them again: a run no worker could start (its job
failed before it claimed the run) ends failed after a few tries instead of cycling forever.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 05:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("requeues", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("requeues")
