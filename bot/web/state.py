"""What the app's views share: the services they use and the delivery counts, in app.extensions."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Protocol, cast

from flask import current_app

from bot.queue.queues import RunQueue
from bot.settings import BotSettings
from bot.store.admit import Intake
from bot.store.installations import Installations
from bot.store.runs import BotStore

EXTENSION = "cra"


class AppServices(Protocol):
    """What the app needs: the store, the queue and a health check."""

    @property
    def store(self) -> BotStore: ...

    @property
    def queue(self) -> RunQueue: ...

    def health(self) -> dict[str, str]:
        """Each dependency's state: "ok" or "error: …"."""
        ...


class DeliveryCounter:
    """Webhook deliveries counted by (event, outcome) in this process."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def add(self, event: str, outcome: str) -> None:
        """Count one delivery."""
        with self._lock:
            self._counts[(event, outcome)] = self._counts.get((event, outcome), 0) + 1

    def snapshot(self) -> dict[tuple[str, str], int]:
        """A copy of the counts."""
        with self._lock:
            return dict(self._counts)


@dataclass
class AppState:
    """What the views share, kept in `app.extensions["cra"]`."""

    settings: BotSettings
    services: AppServices
    secret: str | None
    deliveries: DeliveryCounter = field(default_factory=DeliveryCounter)
    intake: Intake = field(init=False)
    installations: Installations = field(init=False)

    def __post_init__(self) -> None:
        store = self.services.store
        self.intake = Intake(store)  # its statements are prepared once
        self.installations = Installations(store.engine, clock=store.now)


def current_state() -> AppState:
    """The shared state of the app handling the current request."""
    return cast(AppState, current_app.extensions[EXTENSION])
