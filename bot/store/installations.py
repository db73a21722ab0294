"""The App's installations as webhooks told of them, in the database: each removal,
suspension or change moves an installation's generation on, which cached tokens compare with."""

from __future__ import annotations

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError

from agent.runlog.database import Database
from bot.intake.installations import InstallationChange, Status
from bot.store.tables import InstallationRow


class Installations(Database):
    """Reads and writes the installations table (on the bot store's engine)."""

    def record(self, change: InstallationChange) -> None:
        """Note an installation's new status, moving its generation on (nothing when the
        change leaves its tokens standing)."""
        if change.status is None:
            return
        try:
            self._record(change.installation_id, change.status)
        except IntegrityError:  # another delivery inserted it first: now it is there to update
            self._record(change.installation_id, change.status)

    def _record(self, installation_id: int, status: Status) -> None:
        row = InstallationRow.installation_id == installation_id
        now = self._clock()
        with self._write() as connection:
            moved = connection.execute(
                update(InstallationRow)
                .where(row)
                .values(status=status, generation=InstallationRow.generation + 1, changed_at=now)
            )
            if moved.rowcount == 0:
                connection.execute(
                    insert(InstallationRow).values(
                        installation_id=installation_id, status=status, generation=1, changed_at=now
                    )
                )

    def generation(self, installation_id: int) -> int:
        """How often webhooks said the installation was removed, suspended or changed (0:
        never)."""
        query = select(InstallationRow.generation).where(
            InstallationRow.installation_id == installation_id
        )
        with self._sessions() as session:
            return session.scalar(query) or 0
