"""Validations say when the test command was run again for time: it first timed out under the
limit derived from the baseline, and the run kept is its re-run under the configured timeout.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28 00:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("validation_results") as batch:
        batch.add_column(sa.Column("rerun_for_time_s", sa.Double(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("validation_results") as batch:
        batch.drop_column("rerun_for_time_s")
