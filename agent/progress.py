"""Progress for people: a bar redrawn in place on a terminal, occasional plain lines elsewhere,
and a solve run's steps as they pass.

On a terminal the bar redraws one line in place (done of total, rate, time left). Anywhere else
(a file, a pipe, a CI log) it writes a plain line each tenth of the work or every 30 seconds,
whichever comes first, and the last state it was told — never a carriage return. Both write to
stderr-like streams and never raise.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TextIO

from agent.models import RunEvent

BAR_WIDTH = 24
REDRAW_S = 0.1
PLAIN_PARTS = 10  # a plain line each tenth of the work ...
PLAIN_EVERY_S = 30.0  # ... or after this long without one, whichever comes first


class Pace:
    """When a plain line is due: at each tenth of the work, PLAIN_EVERY_S after the last one,
    and when the work is done."""

    def __init__(self, started: float) -> None:
        self.last_line = started  # when the work began, on the clock `due` is given
        self.part = 0

    def due(self, done: int, total: int, now: float) -> bool:
        """Whether `done` of `total` at `now` deserves a line; if so, it counts as written."""
        part = done * PLAIN_PARTS // total if total > 0 else PLAIN_PARTS
        if part <= self.part and now - self.last_line < PLAIN_EVERY_S:
            return False
        self.part, self.last_line = max(part, self.part), now
        return True


class ProgressBar:
    """`bar(done, total)` after each unit of work (`detail` adds a few words); `finish()` shows
    the last state if it was not shown yet, and ends the line on a terminal. Thread-safe."""

    def __init__(
        self,
        stream: TextIO,
        label: str,
        *,
        unit: str = "files",
        min_total: int = 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream, self.label, self.unit = stream, label, unit
        self.min_total = min_total
        self.clock = clock
        self.tty = _isatty(stream)
        self.started = clock()  # the work began when the bar was made
        self.pace = Pace(self.started)
        self.last_draw = float("-inf")
        self.pending: tuple[int, int, str, float] | None = None  # told but not yet shown
        self.shown: tuple[int, int, str, float] | None = None  # on screen last
        self.drawn = False
        self.lock = threading.Lock()

    def __call__(self, done: int, total: int, detail: str = "") -> None:
        if total < max(1, self.min_total):
            return
        with self.lock:
            now = self.clock()
            self.pending = (done, total, detail, now)
            if self._due(done, total, now):
                self._show()

    def line(self, done: int, total: int, elapsed: float, detail: str = "") -> str:
        """`label [████░░░░] 120/800 files · 45/s · 15 s left`."""
        filled = BAR_WIDTH * done // total
        bar = "█" * filled + "░" * (BAR_WIDTH - filled)
        text = f"{self.label} [{bar}] {done}/{total} {self.unit}"
        text += f" · {detail}" if detail else ""
        if elapsed > 0 and done:
            rate = done / elapsed
            pace = f"{rate:.0f}/s" if rate >= 1 else f"{1 / rate:.0f} s each"
            text += f" · {pace} · {(total - done) / rate:.0f} s left"
        return text

    def plain(self, done: int, total: int, detail: str = "") -> str:
        """`label: 120/800 files, detail`."""
        return f"{self.label}: {done}/{total} {self.unit}" + (f", {detail}" if detail else "")

    def note(self, text: str) -> None:
        """A line of its own, above the bar on a terminal (the bar drawn again below it)."""
        with self.lock:
            if self.tty and self.drawn:
                self._write("\r\x1b[K" + text + "\n")
                self.drawn = False
                self.pending = self.pending or self.shown
                if self.pending is not None:
                    self._show()
            else:
                self._write(text + "\n")

    def finish(self) -> None:
        """Show the last state if it was not shown yet; end the bar's line on a terminal."""
        with self.lock:
            if self.pending is not None:
                self._show()
            if self.tty and self.drawn:
                self._write("\n")
            self.drawn = False

    def _due(self, done: int, total: int, now: float) -> bool:
        if not self.tty:
            return self.pace.due(done, total, now)
        if done == total or now - self.last_draw >= REDRAW_S:
            self.last_draw = now
            return True
        return False

    def _show(self) -> None:
        assert self.pending is not None
        done, total, detail, now = self.shown = self.pending
        self.pending = None
        if self.tty:
            self._write("\r" + self.line(done, total, now - self.started, detail) + "\x1b[K")
        else:
            self._write(self.plain(done, total, detail) + "\n")
        self.drawn = True

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass  # progress is a courtesy: a closed stream must not stop the work


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class StepPrinter:
    """A RunObserver printing a solve run's passes and steps as they happen."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def on_event(self, event: RunEvent) -> None:
        """One line per event worth a line; never raises."""
        line = describe_event(event)
        if line is None:
            return
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass


_PASS_NAMES = {
    "baseline": "running the tests once (the baseline)",
    "reproduce": "writing a test that reproduces the issue",
    "meta_plan": "planning (meta-plan)",
    "part_plan": "planning the part",
}


def describe_event(event: RunEvent) -> str | None:
    """The line a person wants for an event, or None for the ones that say nothing new."""
    where = "/".join(x for x in (event.part_id, event.step_id) if x)
    first = event.message.strip().splitlines()[0] if event.message.strip() else ""
    if event.kind == "pass_started" and event.pass_type in _PASS_NAMES:
        return f"  ▸ {_PASS_NAMES[event.pass_type]}" + (f" {where}" if where else "")
    if event.kind == "pass_started" and event.pass_type == "implement":
        return f"  ▸ step {where}"
    if event.kind == "reproduced":
        said = {"reproduced": "written", "named": "named by the issue"}.get(
            event.status or "", "none"
        )
        return f"  · reproduction {said}: {first}"
    if event.kind == "plan_made":
        steps = "; ".join(f"{s.id}: {s.description.splitlines()[0]}" for s in event.steps)
        return f"  · plan for part {event.part_id}: {len(event.steps)} step(s) — {steps}"
    if event.kind in ("step_passed", "step_failed"):
        mark = "✓" if event.kind == "step_passed" else "✗"
        return f"  {mark} step {where} {event.status}: {first}"
    if event.kind == "adjustment_made":
        return f"  · plan adjusted after {where}" + (f": {first}" if first else "")
    if event.kind == "run_finished":
        return f"  ■ run {event.status}" + (f": {first}" if first else "")
    return None
