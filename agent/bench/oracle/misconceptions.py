"""A task's misconceptions: which substantive mistakes the oracle makes on it, drawn once per task
from a seed (its instance id) and redrawn only now and then on a retry, as a real model's are.

A mistake is named by a *concept* — `judge:pkg/mod.py`, `plan`, `edit:pkg/mod.py:0`, `partial`,
`test:tests/test_mod.py` — and a draw for it is a pure function of the task, the concept and how
many times it was asked before (`attempt`): the first ask draws it; each later ask (a retry, a
refinement, a second sample) redraws it with probability REDRAW, else keeps the belief it had.
So a wrong edit stays wrong on a retry most of the time, and voting or retrying looks in the bench
as it does in the papers (recovery.md, §4: "coverage ≠ selection").
"""

from __future__ import annotations

import random
from dataclasses import dataclass, fields, replace

REDRAW = 0.3  # the chance a retry or second sample redraws a misconception
SMALL = "small"


@dataclass(frozen=True)
class Rates:
    """How often each substantive mistake is made, per decision (0 for none)."""

    false_no: float = 0.0  # a file or definition of the fix judged not relevant
    false_yes: float = 0.0  # something else judged relevant
    wrong_plan: float = 0.0  # a plan names a near file instead of the fix's, or leaves one out
    wrong_edit: float = 0.0  # an edit that applies and is wrong (per hunk)
    partial_edit: float = 0.0  # of a fix that changes several places, one left unedited
    wrong_test: float = 0.0  # a test written asserts the wrong thing or cannot fail

    def scaled(self, factor: float) -> Rates:
        """Every rate times `factor`, at most 1."""
        return Rates(**{f.name: min(1.0, getattr(self, f.name) * factor) for f in fields(self)})

    @property
    def any(self) -> bool:
        return any(getattr(self, f.name) > 0 for f in fields(self))


# Calibrated on published 7B figures: docs/bench.md ("Substantive mistakes") gives the sources.
SMALL_RATES = Rates(
    false_no=0.20,
    false_yes=0.12,
    wrong_plan=0.40,
    wrong_edit=0.50,
    partial_edit=0.35,
    wrong_test=0.30,
)
# A mistake mode: the rates it sets.
MODES: dict[str, tuple[str, ...]] = {
    "wrong-judgments": ("false_no", "false_yes"),
    "wrong-plans": ("wrong_plan",),
    "wrong-edits": ("wrong_edit",),
    "partial-edits": ("partial_edit",),
    "wrong-tests": ("wrong_test",),
}


def mode_rates(modes: list[str], rate: float | None) -> Rates:
    """The rates a label's mistake modes set: `small` all of SMALL_RATES scaled by `rate`
    (default 1.0); each other mode its own rates, each `rate` when given, else its SMALL one.
    ValueError for `small` beside another mistake mode (it holds them all)."""
    if SMALL in modes:
        if len(modes) > 1:
            raise ValueError(
                f"{SMALL} already makes every mistake; drop "
                f"{'+'.join(m for m in modes if m != SMALL)}"
            )
        return SMALL_RATES.scaled(1.0 if rate is None else rate)
    chosen = {
        name: getattr(SMALL_RATES, name) if rate is None else min(1.0, rate)
        for mode in modes
        for name in MODES[mode]
    }
    return replace(Rates(), **chosen)


@dataclass(frozen=True)
class Belief:
    """One draw of a misconception: `roll` in [0, 1) against the mistake's rate, and `pick`, a
    number choosing which wrong variant is believed (taken modulo the variants at hand)."""

    roll: float
    pick: int

    def wrong(self, rate: float) -> bool:
        return self.roll < rate


def generation(task: str, concept: str, attempt: int) -> int:
    """How many times the misconception was redrawn by its `attempt`-th ask (0: the first): each
    ask after the first redraws it with probability REDRAW."""
    return sum(
        random.Random(f"{task}|{concept}|redraw|{n}").random() < REDRAW
        for n in range(1, attempt + 1)
    )


@dataclass(frozen=True)
class Misconceptions:
    """A task's misconceptions at its rates, consulted by the oracle (see the module's
    docstring)."""

    task: str
    rates: Rates

    def belief(self, concept: str, attempt: int = 0) -> Belief:
        """The belief about `concept` at its `attempt`-th ask."""
        rng = random.Random(f"{self.task}|{concept}|{generation(self.task, concept, attempt)}")
        return Belief(roll=rng.random(), pick=rng.randrange(1 << 30))

    def mistaken(self, concept: str, rate: float, attempt: int = 0) -> int | None:
        """The wrong variant believed about `concept` (its pick), or None when right."""
        held = self.belief(concept, attempt)
        return held.pick if held.wrong(rate) else None
