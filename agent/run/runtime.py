"""What a solve run is given from outside: run log, models, environment, observer, cancel."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from agent.llm.router import ModelRouter
from agent.models import RunEvent
from agent.runlog.store import RunLog
from agent.sandbox.base import Sandbox
from agent.sandbox.envcache import EnvCache


class RunObserver(Protocol):
    """Receives progress events; the bot turns them into a live checklist."""

    def on_event(self, event: RunEvent) -> None:
        """Handle one event; must not raise."""
        ...


class NullObserver:
    """An observer that ignores everything."""

    def on_event(self, event: RunEvent) -> None:
        """Ignore the event."""
        del event


def never_cancel() -> bool:
    """The default cancellation check: never."""
    return False


@dataclass(frozen=True)
class Runtime:
    """The run's outside world, constructed by the CLI or the bot and passed in."""

    log: RunLog
    models: ModelRouter
    environ: Mapping[str, str]
    work_dir: Path
    sandbox: Sandbox  # where every repository command runs; `none` only by explicit choice
    env_cache: EnvCache | None = None  # setup results kept per repository; None: none kept
    observer: RunObserver = field(default_factory=NullObserver)
    should_cancel: Callable[[], bool] = never_cancel
    new_id: Callable[[], str] = field(default=lambda: str(uuid.uuid4()))
    clock: Callable[[], float] = time.monotonic
