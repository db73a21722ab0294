"""Admitting a delivery in one transaction: its id (deduplicated), and its run or busy reply."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Dialect, bindparam, insert, select, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import InstrumentedAttribute
from sqlalchemy.sql.expression import Executable

from agent.errors import ConnectionLost
from agent.prepared import Prepared
from bot.errors import BotError
from bot.store import BotStore, run_values
from bot.tables import ONE_ACTIVE_RUN, DeliveryRow, RunRow
from bot.triggers import Trigger
from bot.webhooks import Event

DELIVERY_COLUMNS = ("delivery_id", "event", "action", "outcome", "received_at")


def _insert_new(table: type[Any], columns: Sequence[str],
                returned: InstrumentedAttribute[Any]) -> Callable[[str], Executable]:  # fmt: skip
    """INSERT … ON CONFLICT DO NOTHING RETURNING a column: a row back only when it went in.

    Any unique index stops it: the delivery id (primary key), one active solve or plan run per
    issue, one busy reply per active run (bot.store's partial unique indexes).
    """

    def build(dialect: str) -> Executable:
        upsert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        values: dict[str, Any] = {column: bindparam(column) for column in columns}
        return upsert(table).values(values).on_conflict_do_nothing().returning(returned)

    return build


def _delivery_and_run(run_columns: Sequence[str]) -> Callable[[str], Executable]:
    """One PostgreSQL statement storing a delivery (unless its id was seen) and, only when it
    went in, its queued run; it answers (the new delivery's id, the new run's id).

    The run is inserted without ON CONFLICT: when a run is already active on the issue, the
    unique index fails the whole statement, nothing is stored, and the transaction path
    (Intake._admit) answers with the busy reply.
    """

    def build(_: str) -> Executable:
        delivery = (postgresql.insert(DeliveryRow)
                    .values({column: bindparam(column) for column in DELIVERY_COLUMNS})
                    .on_conflict_do_nothing().returning(DeliveryRow.delivery_id)
                    .cte("delivery"))  # fmt: skip
        table = RunRow.__table__
        row = [delivery.c.delivery_id if column == "delivery_id"
               else bindparam(column, type_=table.c[column].type) for column in run_columns]
        run = (insert(RunRow).from_select(list(run_columns), select(*row).select_from(delivery))
               .returning(RunRow.id).cte("run"))  # fmt: skip
        return select(select(delivery.c.delivery_id).scalar_subquery(),
                      select(run.c.id).scalar_subquery())  # fmt: skip

    return build


ACTIVE_RUN = Prepared(lambda _: select(RunRow.id).where(
    RunRow.repository == bindparam("repository"), RunRow.issue_number == bindparam("issue"),
    text(ONE_ACTIVE_RUN)).order_by(RunRow.id.desc()).limit(1))  # fmt: skip
SET_OUTCOME = Prepared(lambda _: update(DeliveryRow).where(
    DeliveryRow.delivery_id == bindparam("delivery")).values(outcome=bindparam("new_outcome")))
RUN_OF_DELIVERY = Prepared(lambda _: select(RunRow.id, RunRow.command).where(
    RunRow.delivery_id == bindparam("delivery"), RunRow.status == "queued")
    .order_by(RunRow.id).limit(1))  # fmt: skip


@dataclass(frozen=True)
class Admission:
    """What became of a delivery: its outcome, and the run stored for it (to enqueue)."""

    outcome: str
    run_id: int | None = None


class Intake:
    """The webhook's one write transaction per delivery, on statements prepared once."""

    def __init__(self, store: BotStore) -> None:
        self._store = store
        self._add_delivery = Prepared(_insert_new(DeliveryRow, DELIVERY_COLUMNS,
                                                  DeliveryRow.delivery_id))  # fmt: skip
        self._add_run: Prepared | None = None
        self._add_both: Prepared | None = None
        self._one_statement = store.dialect.name == "postgresql"

    def admit(self, event: Event, trigger: Trigger | None, outcome: str,
              busy_text: Callable[[int], str]) -> Admission:  # fmt: skip
        """Record the delivery (outcome "duplicate" when its id was seen) and, for a solve,
        plan, help or refusal, its queued run — or the one "busy" reply when a run is already
        active on the issue. All or nothing: after an error GitHub's redelivery is accepted.

        On PostgreSQL, all but the busy reply is one statement committing by itself (one
        round trip instead of BEGIN, one or two statements and COMMIT).
        """
        if self._one_statement:
            try:
                admitted = self._admit_at_once(event, trigger, outcome)
            except ConnectionLost:  # it may have landed: the transaction below tells
                return self._landed(event, self._retrying(event, trigger, outcome, busy_text))
            if admitted is not None:
                return admitted
        return self._retrying(event, trigger, outcome, busy_text)

    def _retrying(self, event: Event, trigger: Trigger | None, outcome: str,
                  busy_text: Callable[[int], str]) -> Admission:  # fmt: skip
        """_admit, once more on a fresh connection when the first one broke."""
        try:
            return self._admit(event, trigger, outcome, busy_text)
        except ConnectionLost:  # nothing was committed: once more, on a fresh connection
            return self._admit(event, trigger, outcome, busy_text)

    def _admit_at_once(self, event: Event, trigger: Trigger | None,
                       outcome: str) -> Admission | None:  # fmt: skip
        """admit in one statement (PostgreSQL); None, having stored nothing, when a run is
        already active on the trigger's issue."""
        now, dialect = self._store.now(), self._store.dialect
        values = {"delivery_id": event.delivery_id, "event": event.name,
                  "action": event.action, "outcome": outcome, "received_at": now}
        with self._store.raw_statement() as connection:
            if trigger is None:
                row = self._add_delivery.first(connection, dialect, values)
                return Admission("duplicate" if row is None else outcome)
            values = {**run_values(trigger, trigger.command, None, None, now), **values}
            if self._add_both is None:  # the run's delivery id is the stored delivery's
                columns = [name for name in values if name not in DELIVERY_COLUMNS]
                self._add_both = Prepared(_delivery_and_run([*columns, "delivery_id"]))
            try:
                row = self._add_both.first(connection, dialect, values)
            except dialect.loaded_dbapi.IntegrityError:  # an active run: the busy reply's path
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
            row = RUN_OF_DELIVERY.first(connection, self._store.dialect,
                                        {"delivery": event.delivery_id})  # fmt: skip
        return admitted if row is None else Admission(str(row[1]), int(row[0]))

    def _admit(self, event: Event, trigger: Trigger | None, outcome: str,
               busy_text: Callable[[int], str]) -> Admission:  # fmt: skip
        """admit, in one transaction."""
        now, dialect = self._store.now(), self._store.dialect
        delivery = {"delivery_id": event.delivery_id, "event": event.name,
                    "action": event.action, "outcome": outcome, "received_at": now}
        with self._store.raw_transaction() as connection:
            if self._add_delivery.first(connection, dialect, delivery) is None:
                return Admission("duplicate")
            if trigger is None:
                return Admission(outcome)
            values = run_values(trigger, trigger.command, None, None, now)
            run_id = self._insert_run(connection, dialect, values)
            if run_id is not None:
                return Admission(trigger.command, run_id)
            return self._busy(connection, dialect, trigger, now, busy_text)

    def _insert_run(self, connection: Any, dialect: Dialect, values: dict[str, Any]) -> int | None:
        """The id of the new run, or None when a unique index refused it."""
        if self._add_run is None:
            self._add_run = Prepared(_insert_new(RunRow, list(values), RunRow.id))
        row = self._add_run.first(connection, dialect, values)
        return None if row is None else int(row[0])

    def _busy(self, connection: Any, dialect: Dialect, trigger: Trigger, now: datetime,
              busy_text: Callable[[int], str]) -> Admission:  # fmt: skip
        """The busy reply to the run active on the trigger's issue (no run when it has one)."""
        where = {"repository": trigger.repository, "issue": trigger.issue_number}
        active = ACTIVE_RUN.first(connection, dialect, where)
        if active is None:  # it finished between the conflict and the lookup: try once more
            values = run_values(trigger, trigger.command, None, None, now)
            run_id = self._insert_run(connection, dialect, values)
            if run_id is None:
                raise BotError(f"could not store a run for {trigger.repository}"
                               f"#{trigger.issue_number}")  # fmt: skip
            return Admission(trigger.command, run_id)
        active_id = int(active[0])
        values = run_values(trigger, "busy", busy_text(active_id), active_id, now)
        busy_id = self._insert_run(connection, dialect, values)
        SET_OUTCOME.first(connection, dialect, {"delivery": trigger.delivery_id,
                                                "new_outcome": "busy"})  # fmt: skip
        return Admission("busy", busy_id)
