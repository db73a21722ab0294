"""The bot's runs, one per trigger, beside the run log: the Run record and BotStore, which also
remembers deliveries (bot.store.deliveries); its tables are bot.store.tables."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import (
    ColumnElement,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from agent.models import Record
from agent.runlog.tables import LLMCallRow
from bot.errors import BotError
from bot.intake.triggers import Trigger
from bot.store.deliveries import Deliveries
from bot.store.tables import RunRow

RunStatus = Literal["queued", "running", "succeeded", "partial", "failed", "cancelled", "rejected"]
RUN_STATUSES: tuple[RunStatus, ...] = (
    "queued",
    "running",
    "succeeded",
    "partial",
    "failed",
    "cancelled",
    "rejected",
)
ACTIVE_STATUSES: tuple[RunStatus, ...] = ("queued", "running")
STALE_CANCEL = "cancelled; its worker had stopped"  # the error of a run a cancel ended at once
ACTIVE_COMMANDS = ("solve", "plan")  # help, cancel and busy runs only reply
Sign = Literal["heartbeat", "progress"]  # its worker's heartbeat, or the run's own progress


class ActiveRunExists(BotError):
    """A solve or plan run is already queued or running on this issue."""

    def __init__(self, run_id: int) -> None:
        super().__init__(f"run {run_id} is already active on this issue")
        self.run_id = run_id


class Run(Record):
    """A stored run, as the app, the queue and the runner see it."""

    id: int
    status: RunStatus
    command: str
    source: str
    actor: str
    repository: str
    issue_number: int
    is_pull_request: bool
    instructions: str
    reply_text: str | None
    related_run_id: int | None
    installation_id: int | None
    delivery_id: str | None
    comment_id: int | None
    trigger_comment_id: int | None
    check_run_id: int | None
    branch: str | None
    pr_number: int | None
    pr_url: str | None
    error: str | None
    task_id: str | None
    cancel_requested: bool
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    heartbeat_at: datetime | None = None
    worker: str | None = None
    requeues: int = 0
    progress_at: datetime | None = None
    progress: str | None = None

    def last_sign_of_life(self) -> datetime | None:
        """When its worker last showed it was alive: the heartbeat, else the start."""
        return self.heartbeat_at or self.started_at

    def last_progress(self) -> datetime | None:
        """When the run itself last moved (a model call, a test command, an edit), else its
        start."""
        return self.progress_at or self.started_at


UPDATABLE = frozenset(Run.model_fields) - {"id", "created_at"}


def run_values(
    trigger: Trigger,
    command: str,
    reply_text: str | None,
    related_run_id: int | None,
    created_at: datetime,
) -> dict[str, Any]:
    """The columns of a new queued run for a trigger."""
    return {
        "status": "queued",
        "command": command,
        "source": trigger.source,
        "actor": trigger.actor,
        "repository": trigger.repository,
        "issue_number": trigger.issue_number,
        "is_pull_request": trigger.is_pull_request,
        "instructions": trigger.instructions,
        "reply_text": reply_text if reply_text is not None else trigger.reply,
        "related_run_id": related_run_id,
        "installation_id": trigger.installation_id,
        "delivery_id": trigger.delivery_id,
        "trigger_comment_id": trigger.comment_id,
        "cancel_requested": False,
        "requeues": 0,
        "created_at": created_at,
    }


def _stamp(sign: Sign) -> Any:
    """The column of a sign: the worker's heartbeat, or the run's own progress."""
    return RunRow.heartbeat_at if sign == "heartbeat" else RunRow.progress_at


def _silent_since(cutoff: datetime, sign: Sign = "heartbeat") -> ColumnElement[bool]:
    """A run whose last sign (or, before its first, its start) is older than `cutoff`."""
    return func.coalesce(_stamp(sign), RunRow.started_at) < cutoff


def _run(row: RunRow) -> Run:
    """A row as the Run model."""
    return Run.model_validate(row, from_attributes=True)


# --- the store -------------------------------------------------------------------------------


class BotStore(Deliveries):
    """Reads and writes runs (and deliveries); every write is its own short transaction."""

    def ping(self) -> None:
        """Run a trivial query; raises the driver's error when the database is unreachable."""
        with self._engine.connect() as connection:
            connection.execute(select(1))

    # --- runs --------------------------------------------------------------------------------

    def create_run(
        self,
        trigger: Trigger,
        *,
        command: str | None = None,
        reply_text: str | None = None,
        related_run_id: int | None = None,
    ) -> Run:
        """Store a queued run for a trigger; ActiveRunExists for a second active solve or plan."""
        for _ in range(2):  # the active run may finish between the conflict and the lookup
            try:
                return self._insert_run(
                    trigger, command or trigger.command, reply_text, related_run_id
                )
            except IntegrityError:
                active = self.active_run(trigger.repository, trigger.issue_number)
                if active is not None:
                    raise ActiveRunExists(active.id) from None
        raise BotError(f"could not store a run for {trigger.repository}#{trigger.issue_number}")

    def _insert_run(
        self, trigger: Trigger, command: str, reply_text: str | None, related_run_id: int | None
    ) -> Run:
        """Insert one queued run row."""
        values = run_values(trigger, command, reply_text, related_run_id, self._clock())
        with self._write() as connection:
            run_id = connection.execute(insert(RunRow).returning(RunRow.id), values).scalar_one()
        return Run.model_validate({**dict.fromkeys(Run.model_fields), **values, "id": run_id})

    def create_busy_reply(self, trigger: Trigger, active_run_id: int, text: str) -> Run | None:
        """Store the one "busy" reply to the active run; None when it already has one."""
        try:
            return self._insert_run(trigger, "busy", text, active_run_id)
        except IntegrityError:  # uq_runs_one_busy_reply: another delivery got there first
            return None

    def get_run(self, run_id: int) -> Run | None:
        """The run with this id, or None (also for ids no database column can hold)."""
        if not 0 < run_id < 2**63:
            return None
        with self._sessions() as session:
            row = session.get(RunRow, run_id)
            return None if row is None else _run(row)

    def active_run(self, repository: str, issue_number: int) -> Run | None:
        """The queued or running solve or plan run on an issue or pull request, if any."""
        query = (
            select(RunRow)
            .where(
                RunRow.repository == repository,
                RunRow.issue_number == issue_number,
                RunRow.status.in_(ACTIVE_STATUSES),
                RunRow.command.in_(ACTIVE_COMMANDS),
            )
            .order_by(RunRow.id.desc())
            .limit(1)
        )
        with self._sessions() as session:
            row = session.scalar(query)
            return None if row is None else _run(row)

    def update_run(self, run_id: int, *, finished: bool = False, **fields: Any) -> None:
        """Set columns of a run (`finished` stamps its end); LookupError when it is missing."""
        unknown = set(fields) - UPDATABLE
        if unknown:
            raise ValueError(f"not updatable run fields: {sorted(unknown)}")
        if finished:
            fields["finished_at"] = self._clock()
        if not self._update_where(RunRow.id == run_id, **fields):
            raise LookupError(f"no run with id {run_id}")

    def finish_run(self, run_id: int, status: RunStatus, *, error: str | None = None) -> None:
        """Set a run's final status (and error) and stamp its end."""
        self.update_run(run_id, status=status, error=error, finished=True)

    def end_run(self, run_id: int, status: RunStatus, *, error: str | None = None) -> bool:
        """End a run still active; False when something else ended it first (the reaper, a
        cancel of a silent worker): the first terminal status stays (compare-and-set)."""
        where = (RunRow.id == run_id) & RunRow.status.in_(ACTIVE_STATUSES)
        return self._update_where(where, status=status, error=error, finished_at=self._clock())

    def claim_run(self, run_id: int, *, worker: str | None = None) -> bool:
        """Move a run from queued to running; False when it was not queued (atomic)."""
        where = (RunRow.id == run_id) & (RunRow.status == "queued")
        now = self._clock()
        return self._update_where(
            where, status="running", started_at=now, heartbeat_at=now, worker=worker
        )

    def beat(self, run_id: int) -> bool:
        """Stamp a running run's heartbeat; False when it is no longer running."""
        where = (RunRow.id == run_id) & (RunRow.status == "running")
        return self._update_where(where, heartbeat_at=self._clock())

    def record_progress(self, run_id: int, what: str) -> bool:
        """Stamp that a running run moved, and how; False when it is no longer running."""
        where = (RunRow.id == run_id) & (RunRow.status == "running")
        return self._update_where(where, progress_at=self._clock(), progress=what)

    def request_cancel(self, run_id: int, *, stale_before: datetime | None = None) -> bool:
        """Ask an active run to stop; False if not active.

        A queued run is cancelled at once, and so is a running one whose worker has shown no
        sign of life since `stale_before` (nobody is left to read the request).
        """
        now = self._clock()
        queued = (RunRow.id == run_id) & (RunRow.status == "queued")
        if self._update_where(queued, status="cancelled", cancel_requested=True, finished_at=now):
            return True
        running = (RunRow.id == run_id) & (RunRow.status == "running")
        if stale_before is not None and self._update_where(
            running & _silent_since(stale_before),
            status="cancelled",
            cancel_requested=True,
            finished_at=now,
            error=STALE_CANCEL,
        ):
            return True
        return self._update_where(running, cancel_requested=True)

    def stale_runs(self, stale_before: datetime, *, sign: Sign = "heartbeat") -> list[Run]:
        """Running runs with no `sign` since `stale_before`: their worker's heartbeat (it
        died), or their own progress (it hangs)."""
        query = (
            select(RunRow)
            .where(RunRow.status == "running", _silent_since(stale_before, sign))
            .order_by(RunRow.id)
        )
        with self._sessions() as session:
            return [_run(row) for row in session.scalars(query)]

    def end_stale_run(self, run: Run, error: str, *, sign: Sign = "heartbeat") -> bool:
        """Fail a run seen stale, unless it stamped that `sign` again or ended since
        (compare-and-set: of several reapers, exactly one wins)."""
        seen, column = (run.heartbeat_at if sign == "heartbeat" else run.progress_at), _stamp(sign)
        where = (
            (RunRow.id == run.id)
            & (RunRow.status == "running")
            & (column.is_(None) if seen is None else column == seen)
        )
        return self._update_where(where, status="failed", error=error, finished_at=self._clock())

    def queued_before(self, cutoff: datetime) -> list[Run]:
        """Runs still queued that were created before `cutoff`, oldest first."""
        query = (
            select(RunRow)
            .where(RunRow.status == "queued", RunRow.created_at < cutoff)
            .order_by(RunRow.id)
        )
        with self._sessions() as session:
            return [_run(row) for row in session.scalars(query)]

    def count_requeue(self, run: Run) -> bool:
        """Count one more re-queue of a run still queued as `run` saw it (compare-and-set: of
        several reapers, exactly one queues it again)."""
        where = (
            (RunRow.id == run.id) & (RunRow.status == "queued") & (RunRow.requeues == run.requeues)
        )
        return self._update_where(where, requeues=run.requeues + 1)

    def fail_queued_run(self, run: Run, error: str) -> bool:
        """Fail a run that is still queued (no worker could start it); whether this call did."""
        where = (RunRow.id == run.id) & (RunRow.status == "queued")
        return self._update_where(where, status="failed", error=error, finished_at=self._clock())

    def cancel_requested(self, run_id: int) -> bool:
        """Whether someone asked this run to stop."""
        query = select(RunRow.cancel_requested).where(RunRow.id == run_id)
        with self._sessions() as session:
            return bool(session.scalar(query))

    def _update_where(self, where: ColumnElement[bool], **values: Any) -> bool:
        """One UPDATE of the runs matching `where`; whether any row changed."""
        with self._write() as connection:
            result = connection.execute(update(RunRow).where(where).values(**values))
        return int(getattr(result, "rowcount", 0)) > 0

    # --- readers -----------------------------------------------------------------------------

    def runs_with_status(self, *statuses: str) -> list[Run]:
        """The runs in any of these statuses, oldest first."""
        query = select(RunRow).where(RunRow.status.in_(statuses)).order_by(RunRow.id)
        with self._sessions() as session:
            return [_run(row) for row in session.scalars(query)]

    def list_runs(
        self, repository: str | None = None, status: str | None = None, limit: int = 50
    ) -> list[Run]:
        """The newest runs first, of one repository and status when given."""
        query = select(RunRow).order_by(RunRow.id.desc()).limit(limit)
        if repository is not None:
            query = query.where(RunRow.repository == repository)
        if status is not None:
            query = query.where(RunRow.status == status)
        with self._sessions() as session:
            return [_run(row) for row in session.scalars(query)]

    def running_count(
        self, *, repository: str | None = None, installation_id: int | None = None
    ) -> int:
        """How many solve or plan runs are running, in one repository or installation."""
        query = (
            select(func.count())
            .select_from(RunRow)
            .where(RunRow.status == "running", RunRow.command.in_(ACTIVE_COMMANDS))
        )
        if repository is not None:
            query = query.where(RunRow.repository == repository)
        if installation_id is not None:
            query = query.where(RunRow.installation_id == installation_id)
        with self._sessions() as session:
            return int(session.scalar(query) or 0)

    def counts_by_status(self) -> dict[str, int]:
        """How many runs are in each status (every status listed, zeros included)."""
        query = select(RunRow.status, func.count()).group_by(RunRow.status)
        counts: dict[str, int] = dict.fromkeys(RUN_STATUSES, 0)
        with self._sessions() as session:
            counts.update({status: int(n) for status, n in session.execute(query)})
        return counts

    def run_durations(self, commands: Sequence[str] = ACTIVE_COMMANDS) -> list[float]:
        """Seconds from start to finish of every finished run of these commands."""
        query = select(RunRow.started_at, RunRow.finished_at).where(
            RunRow.command.in_(list(commands)),
            RunRow.started_at.is_not(None),
            RunRow.finished_at.is_not(None),
        )
        with self._sessions() as session:
            return [
                (finished - started).total_seconds()
                for started, finished in session.execute(query)
                if started is not None and finished is not None
            ]

    def model_tokens_by_role(self) -> dict[str, int]:
        """Prompt plus completion tokens of every recorded model call, by role (run log)."""
        total = func.sum(LLMCallRow.prompt_tokens + LLMCallRow.completion_tokens)
        query = select(LLMCallRow.role, total).group_by(LLMCallRow.role).order_by(LLMCallRow.role)
        with self._sessions() as session:
            return {role: int(n or 0) for role, n in session.execute(query)}
