"""SIGINT and SIGTERM during a `cra` run: the first one raises Interrupted where the run is
(between calls or inside one: a blocking read is interrupted too), later ones are ignored so
that the run can end cleanly — its status recorded as cancelled, its worktree removed."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from agent.errors import Interrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupts:
    """Which signal interrupted the run, if one did."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:
            return  # already ending: let the clean-up finish
        self.signum = signum
        raise Interrupted(signum)

    @property
    def exit_code(self) -> int | None:
        return None if self.signum is None else 128 + self.signum


@contextmanager
def interruptible() -> Iterator[Interrupts]:
    """Within the block, SIGINT and SIGTERM raise Interrupted once (main thread only)."""
    interrupts = Interrupts()
    if threading.current_thread() is not threading.main_thread():
        yield interrupts
        return
    previous = {signum: signal.signal(signum, interrupts.handle) for signum in SIGNALS}
    try:
        yield interrupts
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
