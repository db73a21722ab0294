"""A bench against an earlier one: rows matched by (model, setting), tasks gained and lost, and
the change of the resolved and false-success rates.

A rate measured with the fix's tests given to the run is not one measured with them hidden, so a
row is compared with the baseline's row of the same model in another setting only when asked
(`--across-settings`); otherwise such a pair is refused with both settings named.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from agent.bench.report.data import BenchReport, Comparison, ModelSummary, TaskRow
from agent.bench.results import Outcome
from agent.errors import SettingsMismatch

__all__ = ["Baseline", "compare", "from_report", "match_rows"]


class Baseline(BaseModel):
    """An earlier bench: its rows, and each row's outcome on each task."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str
    models: list[ModelSummary]
    outcomes: dict[str, dict[str, Outcome]]  # configuration -> instance_id -> outcome


def from_report(source: str, report: BenchReport) -> Baseline:
    """The baseline an earlier report makes."""
    outcomes = {
        m.column: {
            row.instance_id: cell.outcome
            for row in report.tasks
            if (cell := row.cells.get(m.column)) is not None
        }
        for m in report.models
    }
    return Baseline(source=source, models=report.models, outcomes=outcomes)


def match_rows(
    now: Sequence[ModelSummary], then: Sequence[ModelSummary]
) -> list[tuple[ModelSummary, ModelSummary | None]]:
    """Each current row and its baseline row: the same model in the same setting, else the same
    model's baseline row in the other setting that no current row matches exactly, else None."""
    exact = {(b.model, b.tests): b for b in then}
    taken = {(s.model, s.tests) for s in now} & exact.keys()
    spare: dict[str, list[ModelSummary]] = {}
    for b in then:
        if (b.model, b.tests) not in taken:
            spare.setdefault(b.model, []).append(b)
    pairs: list[tuple[ModelSummary, ModelSummary | None]] = []
    for s in now:
        match = exact.get((s.model, s.tests))
        if match is None and spare.get(s.model):
            match = spare[s.model].pop(0)
        pairs.append((s, match))
    return pairs


def compare(
    models: Sequence[ModelSummary],
    rows: Sequence[TaskRow],
    baseline: Baseline,
    *,
    across_settings: bool = False,
) -> list[Comparison]:
    """Per row: tasks gained and lost against its baseline row, and the rates' changes.

    Only tasks both benches scored are compared; a task with an error on either side, or run on
    one side only, is neither gained nor lost. Rows only the baseline has come last.
    SettingsMismatch when a pair crosses settings and `across_settings` is not set.
    """
    pairs = match_rows(models, baseline.models)
    crossed = [
        (s.model, s.tests, b.tests) for s, b in pairs if b is not None and b.tests != s.tests
    ]
    if crossed and not across_settings:
        raise SettingsMismatch(baseline.source, crossed)
    found = [_against(s, b, rows, baseline) if b is not None else _new(s) for s, b in pairs]
    used = {b.column for _, b in pairs if b is not None}
    found += [_gone(b) for b in baseline.models if b.column not in used]
    return found


def _against(
    now: ModelSummary, then: ModelSummary, rows: Sequence[TaskRow], baseline: Baseline
) -> Comparison:
    current = {
        row.instance_id: cell.outcome
        for row in rows
        if (cell := row.cells.get(now.column)) is not None
    }
    before = baseline.outcomes.get(then.column, {})
    both = [i for i in current if _scored(current[i]) and _scored(before.get(i))]
    return Comparison(
        model=now.model,
        tests=now.tests,
        baseline_tests=then.tests,
        in_baseline=True,
        rate=now.rate,
        baseline_rate=then.rate,
        rate_delta=_delta(now.rate, then.rate),
        false_successes=now.false_successes,
        baseline_false_successes=then.false_successes,
        false_success_rate=now.false_success_rate,
        baseline_false_success_rate=then.false_success_rate,
        false_success_delta=_delta(now.false_success_rate, then.false_success_rate),
        compared=len(both),
        calls_per_task=now.calls_per_task,
        baseline_calls_per_task=then.calls_per_task,
        prompt_tokens_per_task=now.prompt_tokens_per_task,
        baseline_prompt_tokens_per_task=then.prompt_tokens_per_task,
        gained=[i for i in both if current[i] == "resolved" and before[i] != "resolved"],
        lost=[i for i in both if current[i] != "resolved" and before[i] == "resolved"],
    )


def _new(now: ModelSummary) -> Comparison:
    return Comparison(
        model=now.model,
        tests=now.tests,
        in_baseline=False,
        rate=now.rate,
        false_successes=now.false_successes,
        false_success_rate=now.false_success_rate,
    )


def _gone(then: ModelSummary) -> Comparison:
    return Comparison(
        model=then.model,
        tests=then.tests,
        baseline_tests=then.tests,
        in_baseline=True,
        in_current=False,
        baseline_rate=then.rate,
        baseline_false_successes=then.false_successes,
        baseline_false_success_rate=then.false_success_rate,
    )


def _delta(now: float | None, then: float | None) -> float | None:
    return now - then if now is not None and then is not None else None


def _scored(outcome: Outcome | None) -> bool:
    return outcome in ("resolved", "unresolved")
