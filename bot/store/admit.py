"""Admitting a delivery in one transaction: its id (deduplicated), and its run or busy reply."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Dialect, bindparam, insert, select, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import InstrumentedAttribute
from sqlalchemy.sql.expression import Executable

from agent.errors import ConnectionLost
from agent.runlog.prepared import Bound, Prepared
from bot.errors import BotError
from bot.intake.triggers import Trigger
from bot.intake.webhooks import Event
from bot.store.runs import BotStore, run_values
from bot.store.tables import ONE_ACTIVE_RUN, DeliveryRow, RunRow

DELIVERY_COLUMNS = ("delivery_id", "event", "action", "outcome", "received_at")


def _insert_new(
    table: type[Any], columns: Sequence[str], returned: InstrumentedAttribute[Any]
) -> Callable[[str], Executable]:
    """INSERT … ON CONFLICT DO NOTHING RETURNING a column: a row back only when it went in
    (on SQLite without RETURNING: see _inserted).

    Any unique index stops it: the delivery id (primary key), one active solve or plan run per
    issue, one busy reply per active run (bot.store.runs's partial unique indexes).
    """

    def build(dialect: str) -> Executable:
        upsert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        values: dict[str, Any] = {column: bindparam(column) for column in columns}
        statement = upsert(table).values(values).on_conflict_do_nothing()
        # SQLite tells the new rowid without RETURNING, whose row costs one more call into it
        return statement if dialect == "sqlite" else statement.returning(returned)

    return build


def _inserted(connection: Any, dialect: Dialect, insert: Bound) -> Any | None:
    """Run an _insert_new statement: the new row's returned column (its rowid on SQLite), or
    None when a unique index refused it."""
    if dialect.name == "sqlite":
        changed, rowid = insert.execute(connection, rowid=True)
        return rowid if changed else None
    row = insert.execute(connection)[1]
    return None if row is None else row[0]


def _delivery_and_run(run_columns: Sequence[str]) -> Callable[[str], Executable]:
    """One PostgreSQL statement storing a delivery (unless its id was seen) and, only when it
    went in, its queued run; it answers (the new delivery's id, the new run's id).

    The run is inserted without ON CONFLICT: when a run is already active on the issue, the
    unique index fails the whole statement, nothing is stored, and the transaction path
    (Intake._admit) answers with the busy reply.
    """

    def build(_: str) -> Executable:
        delivery = (
            postgresql.insert(DeliveryRow)
            .values({column: bindparam(column) for column in DELIVERY_COLUMNS})
            .on_conflict_do_nothing()
            .returning(DeliveryRow.delivery_id)
            .cte("delivery")
        )
        table = RunRow.__table__
        row = [
            delivery.c.delivery_id
            if column == "delivery_id"
            else bindparam(column, type_=table.c[column].type)
            for column in run_columns
        ]
        run = (
            insert(RunRow)
            .from_select(list(run_columns), select(*row).select_from(delivery))
            .returning(RunRow.id)
            .cte("run")
        )
        return select(
            select(delivery.c.delivery_id).scalar_subquery(), select(run.c.id).scalar_subquery()
        )

    return build


ACTIVE_RUN = Prepared(
    lambda _: (
        select(RunRow.id)
        .where(
            RunRow.repository == bindparam("repository"),
            RunRow.issue_number == bindparam("issue"),
            text(ONE_ACTIVE_RUN),
        )
        .order_by(RunRow.id.desc())
        .limit(1)
    )
)
SET_OUTCOME = Prepared(
    lambda _: (
        update(DeliveryRow)
        .where(DeliveryRow.delivery_id == bindparam("delivery"))
        .values(outcome=bindparam("new_outcome"))
    )
)
RUN_OF_DELIVERY = Prepared(
    lambda _: (
        select(RunRow.id, RunRow.command)
        .where(RunRow.delivery_id == bindparam("delivery"), RunRow.status == "queued")
        .order_by(RunRow.id)
        .limit(1)
    )
)


@dataclass(frozen=True)
class Admission:
    """What became of a delivery: its outcome, and the run stored for it (to enqueue)."""

    outcome: str
    run_id: int | None = None


class Intake:
    """The webhook's one write transaction per delivery, on statements prepared once."""

    def __init__(self, store: BotStore) -> None:
        self._store = store
        self._add_delivery = Prepared(
            _insert_new(DeliveryRow, DELIVERY_COLUMNS, DeliveryRow.delivery_id)
        )
        self._add_run: Prepared | None = None
        self._add_both: Prepared | None = None
        self._one_statement = store.dialect.name == "postgresql"

    def admit(
        self, event: Event, trigger: Trigger | None, outcome: str, busy_text: Callable[[int], str]
    ) -> Admission:
        """Record the delivery (outcome "duplicate" when its id was seen) and, for a solve,
        plan, help or refusal, its queued run — or the one "busy" reply when a run is already
        active on the issue. All or nothing: after an error GitHub's redelivery is accepted.

        A delivery without a trigger is one statement committing by itself; on PostgreSQL so
        is a delivery with its run (one round trip instead of BEGIN, two INSERTs and COMMIT).
        """
        if trigger is None:
            return self._admit_delivery(event, outcome, busy_text)
        if self._one_statement:
            try:
                admitted = self._admit_at_once(event, trigger, outcome)
            except ConnectionLost:  # it may have landed: the transaction below tells
                return self._landed(event, self._retrying(event, trigger, outcome, busy_text))
            if admitted is not None:
                return admitted
        return self._retrying(event, trigger, outcome, busy_text)

    def _retrying(
        self, event: Event, trigger: Trigger | None, outcome: str, busy_text: Callable[[int], str]
    ) -> Admission:
        """_admit, once more on a fresh connection when the first one broke."""
        try:
            return self._admit(event, trigger, outcome, busy_text)
        except ConnectionLost:  # nothing was committed: once more, on a fresh connection
            return self._admit(event, trigger, outcome, busy_text)

    def _delivery(self, event: Event, outcome: str, now: datetime) -> Bound:
        """The INSERT of the delivery, bound."""
        return self._add_delivery.bind(
            self._store.dialect,
            {
                "delivery_id": event.delivery_id,
                "event": event.name,
                "action": event.action,
                "outcome": outcome,
                "received_at": now,
            },
        )

    def _run(self, values: dict[str, Any]) -> Bound:
        """The INSERT of a queued run, bound."""
        if self._add_run is None:
            self._add_run = Prepared(_insert_new(RunRow, list(values), RunRow.id))
        return self._add_run.bind(self._store.dialect, values)

    def _admit_delivery(
        self, event: Event, outcome: str, busy_text: Callable[[int], str]
    ) -> Admission:
        """admit for a delivery that triggers nothing: one statement."""
        delivery = self._delivery(event, outcome, self._store.now())
        try:
            with self._store.raw_statement() as connection:
                stored = _inserted(connection, self._store.dialect, delivery)
        except ConnectionLost:  # it may have landed: then the retry sees a duplicate
            return self._retrying(event, None, outcome, busy_text)
        return Admission("duplicate" if stored is None else outcome)

    def _admit_at_once(self, event: Event, trigger: Trigger, outcome: str) -> Admission | None:
        """admit in one statement (PostgreSQL); None, having stored nothing, when a run is
        already active on the trigger's issue."""
        now, dialect = self._store.now(), self._store.dialect
        values = {
            **run_values(trigger, trigger.command, None, None, now),
            "delivery_id": event.delivery_id,
            "event": event.name,
            "action": event.action,
            "outcome": outcome,
            "received_at": now,
        }
        if self._add_both is None:  # the run's delivery id is the stored delivery's
            columns = [name for name in values if name not in DELIVERY_COLUMNS]
            self._add_both = Prepared(_delivery_and_run([*columns, "delivery_id"]))
        both = self._add_both.bind(dialect, values)
        with self._store.raw_statement() as connection:
            try:
                row = both.execute(connection)[1]
            except IntegrityError:  # an active run: the busy reply's path
                return None
        if row is None or row[0] is None:
            return Admission("duplicate")
        return Admission(trigger.command, int(row[1]))

    def _landed(self, event: Event, admitted: Admission) -> Admission:
        """After a statement whose answer the connection lost: a "duplicate" may be that
        statement's own delivery, which landed; then its queued run (if any) is ours."""
        if admitted.outcome != "duplicate":
            return admitted
        with self._store.raw_transaction() as connection:
            row = RUN_OF_DELIVERY.first(
                connection, self._store.dialect, {"delivery": event.delivery_id}
            )
        return admitted if row is None else Admission(str(row[1]), int(row[0]))

    def _admit(
        self, event: Event, trigger: Trigger | None, outcome: str, busy_text: Callable[[int], str]
    ) -> Admission:
        """admit, in one transaction (its statements bound before it begins: a SQLite file's
        writers take turns, and a turn holds only the database's work)."""
        now, dialect = self._store.now(), self._store.dialect
        delivery = self._delivery(event, outcome, now)
        run = None
        if trigger is not None:
            run = self._run(run_values(trigger, trigger.command, None, None, now))
        with self._store.raw_transaction() as connection:
            if _inserted(connection, dialect, delivery) is None:
                return Admission("duplicate")
            if trigger is None or run is None:
                return Admission(outcome)
            run_id = _inserted(connection, dialect, run)
            if run_id is not None:
                return Admission(trigger.command, int(run_id))
            return self._busy(connection, dialect, trigger, now, busy_text)

    def _busy(
        self,
        connection: Any,
        dialect: Dialect,
        trigger: Trigger,
        now: datetime,
        busy_text: Callable[[int], str],
    ) -> Admission:
        """The busy reply to the run active on the trigger's issue (no run when it has one)."""
        where = {"repository": trigger.repository, "issue": trigger.issue_number}
        active = ACTIVE_RUN.first(connection, dialect, where)
        if active is None:  # it finished between the conflict and the lookup: try once more
            values = run_values(trigger, trigger.command, None, None, now)
            run_id = _inserted(connection, dialect, self._run(values))
            if run_id is None:
                raise BotError(
                    f"could not store a run for {trigger.repository}#{trigger.issue_number}"
                )
            return Admission(trigger.command, int(run_id))
        active_id = int(active[0])
        values = run_values(trigger, "busy", busy_text(active_id), active_id, now)
        busy_id = _inserted(connection, dialect, self._run(values))
        SET_OUTCOME.first(
            connection, dialect, {"delivery": trigger.delivery_id, "new_outcome": "busy"}
        )
        return Admission("busy", None if busy_id is None else int(busy_id))
