"""The App's installations that webhooks said were removed, suspended or changed: a generation
each, which workers compare with their cached tokens'.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27 01:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "installations",
        sa.Column("installation_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("installation_id", name="pk_installations"),
    )


def downgrade() -> None:
    op.drop_table("installations")
