"""Webhook deliveries remembered by id, so that GitHub's redeliveries are recognised (deduped)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from agent.runlog.database import Database
from bot.store.tables import DeliveryRow

DELIVERY_RETENTION = timedelta(days=7)  # GitHub redelivers with the same id for days


class Deliveries(Database):
    """Reads and writes delivery ids; BotStore is one (bot.store.runs)."""

    def record_delivery(
        self, delivery_id: str, event: str, action: str | None, outcome: str | None = None
    ) -> bool:
        """Remember a delivery id; False when it was seen before (atomic on the primary key)."""
        row = {
            "delivery_id": delivery_id,
            "event": event,
            "action": action,
            "outcome": outcome,
            "received_at": self._clock(),
        }
        try:
            with self._write() as connection:
                connection.execute(insert(DeliveryRow), row)
        except IntegrityError:
            return False
        return True

    def set_delivery_outcome(self, delivery_id: str, outcome: str) -> None:
        """Record what became of a delivery (ignored, solve, busy, …)."""
        statement = (
            update(DeliveryRow)
            .where(DeliveryRow.delivery_id == delivery_id)
            .values(outcome=outcome)
        )
        with self._write() as connection:
            connection.execute(statement)

    def delivery_outcome(self, delivery_id: str) -> str | None:
        """The recorded outcome of a delivery (None if unknown or not yet decided)."""
        query = select(DeliveryRow.outcome).where(DeliveryRow.delivery_id == delivery_id)
        with self._sessions() as session:
            return session.scalar(query)

    def has_delivery(self, delivery_id: str) -> bool:
        """Whether a delivery id is recorded."""
        query = select(DeliveryRow.delivery_id).where(DeliveryRow.delivery_id == delivery_id)
        with self._sessions() as session:
            return session.scalar(query) is not None

    def count_deliveries(self) -> int:
        """How many delivery ids are recorded."""
        with self._sessions() as session:
            return session.scalar(select(func.count()).select_from(DeliveryRow)) or 0

    def forget_delivery(self, delivery_id: str) -> None:
        """Drop a delivery id (its handling failed), so that GitHub's redelivery is accepted."""
        with self._write() as connection:
            connection.execute(delete(DeliveryRow).where(DeliveryRow.delivery_id == delivery_id))

    def prune_deliveries(self, older_than: timedelta = DELIVERY_RETENTION) -> int:
        """Drop delivery ids received before now − older_than (at least 7 days); how many."""
        if older_than < DELIVERY_RETENTION:
            raise ValueError("delivery ids are kept at least 7 days (GitHub redelivers them)")
        cutoff = self._clock() - older_than
        with self._write() as connection:
            result = connection.execute(delete(DeliveryRow).where(DeliveryRow.received_at < cutoff))
        return int(getattr(result, "rowcount", 0))
