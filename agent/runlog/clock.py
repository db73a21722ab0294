"""The run log's clock: this host's UTC time, or the database server's for a database that
several hosts share."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


class ServerClock:
    """The database server's clock, for a database that several hosts share: a heartbeat
    stamped by one host and judged stale by another's reaper compare on one clock, whatever
    the hosts' clocks say. The offset from this host's clock is measured (`SELECT now()`,
    halfway through the round trip) at the first reading and every `refresh` seconds after;
    a database that cannot answer keeps the last offset (zero before the first). `host` is
    this host's clock, the one corrected."""

    def __init__(self, engine: Engine, *, refresh: float = 300.0, host: Clock = utc_now) -> None:
        self._engine, self._refresh, self._host = engine, refresh, host
        self._offset = timedelta(0)
        self._measured: float | None = None
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        mono = time.monotonic()
        if self._measured is None or mono - self._measured >= self._refresh:
            with self._lock:
                if self._measured is None or mono - self._measured >= self._refresh:
                    self._measure()
        return self._host() + self._offset

    def _measure(self) -> None:
        self._measured = time.monotonic()  # a database that cannot answer is asked again later
        try:
            with self._engine.connect() as connection:
                before = self._host()
                server = connection.execute(text("SELECT now()")).scalar_one()
                after = self._host()
        except DBAPIError:
            return
        if isinstance(server, datetime) and server.tzinfo is not None:
            self._offset = server - (before + (after - before) / 2)
