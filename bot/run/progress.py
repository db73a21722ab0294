"""The live step checklist: orchestrator events turned into (throttled) comment edits."""

from __future__ import annotations

import logging
from collections.abc import Callable

from agent.models import PlanStep, RunEvent
from bot.errors import BotError

log = logging.getLogger(__name__)
Publish = Callable[[str, list[tuple[str, str]], str], None]


class ProgressReporter:
    """A RunObserver keeping the checklist and publishing it at most once per `interval`."""

    def __init__(self, publish: Publish, *, interval: float, clock: Callable[[], float]) -> None:
        self._publish = publish
        self._interval = interval
        self._clock = clock
        self._last: float | None = None
        self.steps: dict[str, list[str]] = {}
        self.status = "running"
        self.note = ""

    def on_event(self, event: RunEvent) -> None:
        """Update the checklist; publish when the interval has passed."""
        self._apply(event)
        now = self._clock()
        if self._last is None or now - self._last >= self._interval:
            self._send()
            self._last = now

    def flush(self, status: str, note: str = "") -> None:
        """Publish the final state, whatever the interval."""
        self.status, self.note = status, note
        for entry in self.steps.values():
            if entry[1] in ("pending", "running") and status != "running":
                entry[1] = "skipped"
        self._send()

    def _apply(self, event: RunEvent) -> None:
        key = f"{event.part_id}/{event.step_id}"
        if event.kind in ("plan_made", "adjustment_made") and event.part_id:
            self._replan(event.part_id, event.steps)
        elif event.kind == "pass_started" and event.pass_type == "implement":
            self.steps.setdefault(key, [key, "pending"])[1] = "running"
        elif event.kind in ("step_passed", "step_failed"):
            state = (
                "passed"
                if event.kind == "step_passed"
                else ("skipped" if event.status == "skipped" else "failed")
            )
            self.steps.setdefault(key, [key, state])[1] = state
        elif event.kind == "pass_started" and event.pass_type:
            self.note = f"working: {event.pass_type.replace('_', ' ')}"

    def _replan(self, part_id: str, steps: list[PlanStep]) -> None:
        prefix = f"{part_id}/"
        for key in [k for k, v in self.steps.items() if k.startswith(prefix) and v[1] == "pending"]:
            del self.steps[key]
        for step in steps:
            label = step.description.strip().splitlines()[0] if step.description.strip() else ""
            self.steps.setdefault(f"{part_id}/{step.id}", [label or step.id, "pending"])

    def _send(self) -> None:
        items = [(label, state) for label, state in self.steps.values()]
        try:
            self._publish(self.status, items, self.note)
        except BotError as exc:  # progress is best effort; the run goes on
            log.warning("could not update the progress comment: %s", exc)
