"""The bot's tables: webhook deliveries (deduplicated by id), runs (one per trigger) and the
installations webhooks told of, beside the run log's; what migrations 0002 and later produce."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import BigInteger, Boolean, Index, Integer, MetaData, Text, false, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from agent.runlog.columns import NAMING, UTCDateTime

ONE_ACTIVE_RUN = "status IN ('queued', 'running') AND command IN ('solve', 'plan')"
ONE_BUSY_REPLY = "command = 'busy'"  # one "busy" reply per active run, however many deliveries


class BotBase(DeclarativeBase):
    """Declarative base of the bot's tables; its metadata is what migration 0002 produces."""

    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        str: Text(),
        bool: Boolean(),
        int: Integer(),
        datetime: UTCDateTime(),
    }


class DeliveryRow(BotBase):
    """One webhook delivery seen, by GitHub's delivery id."""

    __tablename__ = "deliveries"
    delivery_id: Mapped[str] = mapped_column(primary_key=True)
    event: Mapped[str]
    action: Mapped[str | None]
    outcome: Mapped[str | None]
    received_at: Mapped[datetime] = mapped_column(index=True)


class RunRow(BotBase):
    """One run: a trigger, and what the worker made of it."""

    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_repository_issue_number", "repository", "issue_number"),
        # The database, not a read-then-write, keeps one solve or plan run active per issue.
        Index(
            "uq_runs_one_active",
            "repository",
            "issue_number",
            unique=True,
            sqlite_where=text(ONE_ACTIVE_RUN),
            postgresql_where=text(ONE_ACTIVE_RUN),
        ),
        Index(
            "uq_runs_one_busy_reply",
            "related_run_id",
            unique=True,
            sqlite_where=text(ONE_BUSY_REPLY),
            postgresql_where=text(ONE_BUSY_REPLY),
        ),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    status: Mapped[str] = mapped_column(index=True)
    command: Mapped[str]
    source: Mapped[str]
    actor: Mapped[str]
    repository: Mapped[str]
    issue_number: Mapped[int]
    is_pull_request: Mapped[bool]
    instructions: Mapped[str]
    reply_text: Mapped[str | None]
    related_run_id: Mapped[int | None]
    installation_id: Mapped[int | None] = mapped_column(BigInteger)
    delivery_id: Mapped[str | None]
    comment_id: Mapped[int | None] = mapped_column(BigInteger)
    trigger_comment_id: Mapped[int | None] = mapped_column(BigInteger)
    check_run_id: Mapped[int | None] = mapped_column(BigInteger)
    branch: Mapped[str | None]
    pr_number: Mapped[int | None]
    pr_url: Mapped[str | None]
    error: Mapped[str | None]
    task_id: Mapped[str | None]
    cancel_requested: Mapped[bool] = mapped_column(default=False, server_default=false())
    created_at: Mapped[datetime]
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    heartbeat_at: Mapped[datetime | None]  # stamped by the worker while it works (migration 0006)
    worker: Mapped[str | None]  # host:pid of the process executing it
    requeues: Mapped[int] = mapped_column(default=0, server_default="0")  # by the reaper (0007)
    progress_at: Mapped[datetime | None]  # stamped by the run as it moves (migration 0009)
    progress: Mapped[str | None]  # what it last did then: "a model call answered (coding)", …


class InstallationRow(BotBase):
    """An App installation the webhooks said was removed, suspended or changed (migration 0008):
    its generation moves on with each such event, and tokens cached before it are dropped."""

    __tablename__ = "installations"
    installation_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    status: Mapped[str]  # "active", "suspended" or "deleted"
    generation: Mapped[int]
    changed_at: Mapped[datetime]
