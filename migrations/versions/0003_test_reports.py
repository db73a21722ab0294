"""Validations keep the test report (outcomes and counts) and the timeout they ran under.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24 00:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("validation_results") as batch:
        batch.add_column(sa.Column("report", sa.Text(), nullable=True))
        batch.add_column(sa.Column("timeout_s", sa.Double(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("validation_results") as batch:
        batch.drop_column("timeout_s")
        batch.drop_column("report")
