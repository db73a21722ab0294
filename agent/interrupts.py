"""SIGINT and SIGTERM during a `cra` run: the first one raises Interrupted where the run is
(between calls or inside one: a blocking read is interrupted too), later ones are ignored so
that the run can end cleanly — its status recorded as cancelled, its worktree removed.

Inside `deferred()` the first one is held until the block ends: for starting a process, where
an exception between the fork and the caller holding the process would leave it running."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from agent.errors import Interrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_local = threading.local()  # per thread: how deep in deferred() blocks it is


class Interrupts:
    """Which signal interrupted the run, if one did."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.held = False  # a signal came inside deferred(): raised when the block ends

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:
            return  # already ending: let the clean-up finish
        self.signum = signum
        if getattr(_local, "depth", 0):  # handlers run in the main thread: its depth
            self.held = True
            return
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
    _local.active = interrupts
    try:
        yield interrupts
    finally:
        _local.active = None
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def received() -> int | None:
    """The signal that interrupted this thread's `interruptible` block so far, if one did."""
    active: Interrupts | None = getattr(_local, "active", None)
    return None if active is None else active.signum


@contextmanager
def deferred() -> Iterator[None]:
    """Hold a SIGINT or SIGTERM that comes inside the block; Interrupted when it ends (on the
    thread that runs `interruptible`; elsewhere a plain block)."""
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        yield
    finally:
        _local.depth -= 1
        active: Interrupts | None = getattr(_local, "active", None)
        if not _local.depth and active is not None and active.held:
            active.held = False
            raise Interrupted(active.signum or signal.SIGTERM)
