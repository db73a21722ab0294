"""One "busy" reply per active run: a partial unique index on the busy runs' related run.

Older databases may hold several busy runs answering the same active run (one per delivery);
all but the first are renamed `busy_repeat` so that the index can be built.

Revision ID: 0005
Revises: 0003 (to be chained after 0004 when it lands)
Create Date: 2026-11-24 00:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ONE_BUSY_REPLY = "command = 'busy'"


def upgrade() -> None:
    op.execute(
        "UPDATE runs SET command = 'busy_repeat' WHERE command = 'busy' "
        "AND related_run_id IS NOT NULL AND id NOT IN ("
        "SELECT first_id FROM (SELECT MIN(id) AS first_id FROM runs WHERE command = 'busy' "
        "GROUP BY related_run_id) AS firsts)"
    )
    op.create_index(
        "uq_runs_one_busy_reply",
        "runs",
        ["related_run_id"],
        unique=True,
        sqlite_where=sa.text(ONE_BUSY_REPLY),
        postgresql_where=sa.text(ONE_BUSY_REPLY),
    )


def downgrade() -> None:
    op.drop_index("uq_runs_one_busy_reply", table_name="runs")
