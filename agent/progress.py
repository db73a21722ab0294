"""Progress on the terminal: a bar for long counted work, and a solve run's steps as they pass.

On a terminal the bar redraws one line in place (done of total, rate, time left); anywhere else
it writes a few plain lines. Both write to stderr-like streams and never raise.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

from agent.models import RunEvent

BAR_WIDTH = 24
REDRAW_S = 0.1
PLAIN_STEPS = 4  # plain lines at 25 %, 50 %, 75 % and 100 %


class ProgressBar:
    """`bar(done, total)` after each unit of work; `finish()` ends the line."""

    def __init__(self, stream: TextIO, label: str, *, unit: str = "files", min_total: int = 0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream, self.label, self.unit = stream, label, unit
        self.min_total = min_total
        self.clock = clock
        self.tty = _isatty(stream)
        self.started = clock()  # the work began when the bar was made
        self.last_draw = float("-inf")
        self.plain_seen = 0
        self.drawn = False

    def __call__(self, done: int, total: int) -> None:
        if total < max(1, self.min_total):
            return
        now = self.clock()
        if self.tty:
            if done == total or now - self.last_draw >= REDRAW_S:
                self.last_draw = now
                self._write("\r" + self.line(done, total, now - self.started) + "\x1b[K")
        else:
            step = done * PLAIN_STEPS // total
            if step > self.plain_seen or (done == total and not self.drawn):
                self.plain_seen = step
                self._write(f"{self.label}: {done}/{total} {self.unit}\n")
        self.drawn = True

    def line(self, done: int, total: int, elapsed: float) -> str:
        """`label [████░░░░] 120/800 files · 45/s · 15 s left`."""
        filled = BAR_WIDTH * done // total
        bar = "█" * filled + "░" * (BAR_WIDTH - filled)
        text = f"{self.label} [{bar}] {done}/{total} {self.unit}"
        if elapsed > 0 and done:
            rate = done / elapsed
            text += f" · {rate:.0f}/s · {(total - done) / rate:.0f} s left"
        return text

    def finish(self) -> None:
        """End the bar's line on a terminal."""
        if self.tty and self.drawn:
            self._write("\n")
        self.drawn = False

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


_PASS_NAMES = {"baseline": "running the tests once (the baseline)",
               "meta_plan": "planning (meta-plan)", "part_plan": "planning the part"}


def describe_event(event: RunEvent) -> str | None:
    """The line a person wants for an event, or None for the ones that say nothing new."""
    where = "/".join(x for x in (event.part_id, event.step_id) if x)
    first = event.message.strip().splitlines()[0] if event.message.strip() else ""
    if event.kind == "pass_started" and event.pass_type in _PASS_NAMES:
        return f"  ▸ {_PASS_NAMES[event.pass_type]}" + (f" {where}" if where else "")
    if event.kind == "pass_started" and event.pass_type == "implement":
        return f"  ▸ step {where}"
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
