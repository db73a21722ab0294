"""An oracle's label read: `oracle`, or `oracle:<mode>[+<mode>…][@rate]` naming context-honesty,
at most one noise mode and any mistake modes."""

from __future__ import annotations

from dataclasses import dataclass, field

import agent.bench.oracle.misconceptions as misconceptions
import agent.bench.oracle.noise as noise
from agent.bench.oracle.misconceptions import Rates, mode_rates

ORACLE = "oracle"


CONTEXT = "context"  # answer only from what the prompt shows


DEFAULT_RATE = 0.3


@dataclass(frozen=True)
class OracleSpec:
    """An oracle label read: context-honest or not, its noise mode ("" for none) and rate, the
    rates of its substantive mistakes (none by default)."""

    context: bool = False
    mode: str = ""
    rate: float = DEFAULT_RATE
    mistakes: Rates = field(default_factory=Rates)


def parse_label(label: str) -> OracleSpec | None:
    """The spec of "oracle" or "oracle:<mode>[+<mode>…][@rate]" — `context`, at most one noise
    mode, any mistake modes (misconceptions.mode_rates reads their rates); None for a real
    model. ValueError for an unknown mode."""
    if label != ORACLE and not label.startswith(ORACLE + ":"):
        return None
    rest = label.removeprefix(ORACLE).removeprefix(":")
    modes, _, rate = rest.partition("@")
    parts = [m for m in modes.split("+") if m]
    context = CONTEXT in parts
    noisy = [m for m in parts if m in noise.MODES]
    wrong = [m for m in parts if m in misconceptions.MODES or m == misconceptions.SMALL]
    known = (
        f"{', '.join(sorted(noise.MODES))}, alone or after {CONTEXT}+; mistakes "
        f"{', '.join([*misconceptions.MODES, misconceptions.SMALL])}, joined by +"
    )
    unknown = [m for m in parts if m != CONTEXT and m not in noisy and m not in wrong]
    if unknown:
        raise ValueError(f"unknown oracle noise mode {unknown[0]!r}; known: {known}")
    if len(noisy) > 1:
        raise ValueError(
            f"more than one oracle noise mode ({'+'.join(noisy)}): give at most one of {known}"
        )
    given = float(rate) if rate else None
    return OracleSpec(
        context=context,
        mode=noisy[0] if noisy else "",
        rate=DEFAULT_RATE if given is None else given,
        mistakes=mode_rates(wrong, given),
    )
