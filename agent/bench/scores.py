"""The numbers of a bench's results, per model and per task, and against a baseline.

Rates count only the tasks the bench could score: a result whose outcome is `error` (the harness
could not set the task up or score it) is neither a success nor a failure of the model; it is
counted in its own column and left out of the rate and its interval. The interval is Wilson's
score interval at 95%, which stays inside [0, 1] and behaves at 0/n and n/n, where the normal
approximation does not.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.bench.results import BenchResult, Outcome, read_results
from agent.bench.tasks import BenchTask

__all__ = [
    "SCHEMA_VERSION",
    "BaselineError",
    "BenchReport",
    "Cell",
    "Comparison",
    "ModelSummary",
    "TaskRow",
    "build_report",
    "compare",
    "load_baseline",
    "wilson_interval",
]

SCHEMA_VERSION: Literal[1] = 1
CONFIDENCE = 0.95
Z_95 = 1.959963984540054  # the standard normal quantile at 0.975
TITLE_CHARS = 200


class BaselineError(ValueError):
    """A --baseline file that is neither a results file nor a report."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelSummary(_Frozen):
    """How one model configuration did over the tasks it was given."""

    model: str
    tasks: int = Field(description="tasks with a result for this model (errors included)")
    resolved: int
    unresolved: int
    scored: int = Field(description="resolved + unresolved: the rate's denominator")
    errors: int = Field(description="harness errors: left out of the rate and its interval")
    rate: float | None = Field(description="resolved / (resolved + unresolved); null when 0/0")
    ci_low: float | None = Field(description="Wilson 95% score interval, lower bound")
    ci_high: float | None = Field(description="Wilson 95% score interval, upper bound")
    calls: int
    prompt_tokens: int
    completion_tokens: int
    wall_s: float
    tokens_per_task: float | None
    wall_s_per_task: float | None
    tokens_per_resolved: float | None = Field(
        description="all tokens spent (every task) divided by the tasks resolved")
    wall_s_per_resolved: float | None
    calls_per_task: float | None = None
    prompt_tokens_per_task: float | None = None
    largest_prompt: int = Field(default=0, description="the largest prompt of any call, tokens")
    calls_by_stage: dict[str, float] = Field(
        default_factory=dict, description="stage group -> calls per task (agent.bench.seen)")
    prompt_tokens_by_stage: dict[str, float] = Field(
        default_factory=dict, description="stage group -> prompt tokens per task")
    gold_files_seen: float | None = Field(
        default=None, description="share of the fixes' files shown whole or outlined to a planner")
    gold_hunks_seen: float | None = Field(
        default=None, description="share of the fixes' hunks whose lines an implement call saw")


class Cell(_Frozen):
    """One model on one task: its outcome and the run that holds its trace."""

    outcome: Outcome
    run_id: str | None = None
    run_status: str | None = None
    error: str | None = None
    tokens: int = 0
    wall_s: float = 0.0
    calls: int = 0
    prompt_tokens: int = 0
    largest_prompt: int = 0
    files_seen: int = 0
    files: int = 0
    hunks_seen: int = 0
    hunks: int = 0
    unseen_hunks: list[str] = Field(default_factory=list,
                                    description="hunks of the fix no implement call saw")


class TaskRow(_Frozen):
    """One task of the grid: its id, the first line of its statement, each model's cell."""

    instance_id: str
    title: str = ""
    cells: dict[str, Cell | None] = Field(description="model -> cell; null: not run")


class Comparison(_Frozen):
    """One model now against the baseline."""

    model: str
    in_baseline: bool
    in_current: bool = True
    rate: float | None = None
    baseline_rate: float | None = None
    rate_delta: float | None = None
    gained: list[str] = Field(default_factory=list,
                              description="resolved now, unresolved in the baseline")
    lost: list[str] = Field(default_factory=list,
                            description="resolved in the baseline, unresolved now")
    compared: int = Field(default=0, description="tasks both scored (no error on either side)")
    calls_per_task: float | None = None
    baseline_calls_per_task: float | None = None
    prompt_tokens_per_task: float | None = None
    baseline_prompt_tokens_per_task: float | None = None


class BenchReport(_Frozen):
    """The whole report: per-model summaries, the per-task grid, the baseline comparison."""

    schema_version: Literal[1] = SCHEMA_VERSION
    generated_at: str
    results_file: str
    interval: Literal["wilson"] = "wilson"
    confidence: float = CONFIDENCE
    models: list[ModelSummary]
    tasks: list[TaskRow]
    baseline_file: str | None = None
    comparison: list[Comparison] | None = None


# --- numbers ---------------------------------------------------------------------------------


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float] | None:
    """Wilson's score interval of a binomial proportion; None for no trials."""
    if trials <= 0:
        return None
    if not 0 <= successes <= trials:
        raise ValueError(f"{successes} successes out of {trials} trials")
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def latest(results: Iterable[BenchResult]) -> dict[tuple[str, str], BenchResult]:
    """One result per (instance_id, model): the last one written wins."""
    return {(r.instance_id, r.model): r for r in results}


def summarise(model: str, results: Sequence[BenchResult]) -> ModelSummary:
    """A model's counts, rate with its interval, and costs."""
    resolved = sum(r.outcome == "resolved" for r in results)
    unresolved = sum(r.outcome == "unresolved" for r in results)
    scored = resolved + unresolved
    interval = wilson_interval(resolved, scored)
    tokens = sum(r.prompt_tokens + r.completion_tokens for r in results)
    wall = sum(r.wall_s for r in results)
    return ModelSummary(
        model=model, tasks=len(results), resolved=resolved, unresolved=unresolved, scored=scored,
        errors=len(results) - scored, rate=resolved / scored if scored else None,
        ci_low=interval[0] if interval else None, ci_high=interval[1] if interval else None,
        calls=sum(r.calls for r in results),
        prompt_tokens=sum(r.prompt_tokens for r in results),
        completion_tokens=sum(r.completion_tokens for r in results), wall_s=wall,
        tokens_per_task=_per(tokens, len(results)), wall_s_per_task=_per(wall, len(results)),
        tokens_per_resolved=_per(tokens, resolved), wall_s_per_resolved=_per(wall, resolved),
        **_clean_room(results),
    )  # fmt: skip


def _clean_room(results: Sequence[BenchResult]) -> dict[str, object]:
    """What the runs' calls cost and saw, per task (agent.bench.seen's figures)."""
    count = len(results)
    by_calls: dict[str, int] = {}
    by_tokens: dict[str, int] = {}
    for r in results:
        for group, n in r.calls_by_stage.items():
            by_calls[group] = by_calls.get(group, 0) + n
        for group, n in r.prompt_tokens_by_stage.items():
            by_tokens[group] = by_tokens.get(group, 0) + n
    files = [seen for r in results for seen in r.gold_files_seen.values()]
    hunks = [seen for r in results for seen in r.gold_hunks_seen.values()]
    return {
        "calls_per_task": _per(sum(r.calls for r in results), count),
        "prompt_tokens_per_task": _per(sum(r.prompt_tokens for r in results), count),
        "largest_prompt": max((r.largest_prompt for r in results), default=0),
        "calls_by_stage": {g: n / count for g, n in by_calls.items()} if count else {},
        "prompt_tokens_by_stage": {g: n / count for g, n in by_tokens.items()} if count else {},
        "gold_files_seen": _per(sum(files), len(files)),
        "gold_hunks_seen": _per(sum(hunks), len(hunks)),
    }


def _per(total: float, count: int) -> float | None:
    return total / count if count else None


def title_of(statement: str) -> str:
    """The first non-blank line of a statement, cut to a readable length."""
    line = next((x.strip() for x in statement.splitlines() if x.strip()), "")
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"


def _cell(result: BenchResult) -> Cell:
    files, hunks = result.gold_files_seen, result.gold_hunks_seen
    return Cell(outcome=result.outcome, run_id=result.run_id, run_status=result.run_status,
                error=result.error, tokens=result.prompt_tokens + result.completion_tokens,
                wall_s=result.wall_s, calls=result.calls, prompt_tokens=result.prompt_tokens,
                largest_prompt=result.largest_prompt, files_seen=sum(files.values()),
                files=len(files), hunks_seen=sum(hunks.values()), hunks=len(hunks),
                unseen_hunks=[h for h, seen in hunks.items() if not seen])


def build_report(
    results: Iterable[BenchResult], tasks: Iterable[BenchTask] = (), *,
    results_file: str = "", baseline: Baseline | None = None, now: datetime | None = None,
) -> BenchReport:  # fmt: skip
    """The report of `results`; `tasks` add statements and the tasks no model ran yet."""
    found = latest(results)
    models = list(dict.fromkeys(model for _, model in found))
    titles = {t.instance_id: title_of(t.problem_statement) for t in tasks}
    ids = list(dict.fromkeys([*titles, *(instance for instance, _ in found)]))
    rows = [TaskRow(instance_id=i, title=titles.get(i, ""),
                    cells={m: _cell(found[i, m]) if (i, m) in found else None for m in models})
            for i in ids]
    summaries = [summarise(m, [r for (_, model), r in found.items() if model == m])
                 for m in models]
    when = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return BenchReport(
        generated_at=when, results_file=results_file, models=summaries, tasks=rows,
        baseline_file=baseline.source if baseline else None,
        comparison=compare(summaries, rows, baseline) if baseline else None,
    )  # fmt: skip


# --- the baseline ----------------------------------------------------------------------------


class Baseline(_Frozen):
    """An earlier bench: each model's rate and each (task, model)'s outcome."""

    source: str
    rates: dict[str, float | None]
    outcomes: dict[str, dict[str, Outcome]]  # model -> instance_id -> outcome
    calls: dict[str, float | None] = Field(default_factory=dict)  # model -> calls per task
    prompt_tokens: dict[str, float | None] = Field(default_factory=dict)  # per task


def load_baseline(path: Path) -> Baseline:
    """An earlier results JSONL file or an earlier report's JSON; BaselineError otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BaselineError(f"cannot read the baseline {path}: {exc.strerror}") from exc
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and "models" in whole and "tasks" in whole:
        try:
            return _from_report(str(path), BenchReport.model_validate(whole))
        except ValidationError as exc:
            raise BaselineError(f"{path} is not a report of this version of cra: "
                                f"{exc.error_count()} fields are wrong") from exc
    found = list(read_results(path))
    if not found:
        raise BaselineError(f"{path} holds no bench results and is not a bench report")
    report = build_report(found)
    return _from_report(str(path), report)


def _from_report(source: str, report: BenchReport) -> Baseline:
    outcomes: dict[str, dict[str, Outcome]] = {m.model: {} for m in report.models}
    for row in report.tasks:
        for model, cell in row.cells.items():
            if cell is not None:
                outcomes.setdefault(model, {})[row.instance_id] = cell.outcome
    return Baseline(source=source, rates={m.model: m.rate for m in report.models},
                    outcomes=outcomes, calls={m.model: m.calls_per_task for m in report.models},
                    prompt_tokens={m.model: m.prompt_tokens_per_task for m in report.models})


def compare(
    models: Sequence[ModelSummary], rows: Sequence[TaskRow], baseline: Baseline
) -> list[Comparison]:
    """Per model: tasks gained and lost against the baseline, and the rate's change.

    Only tasks both benches scored are compared; a task with an error on either side, or run on
    one side only, is neither gained nor lost. Models only the baseline has come last.
    """
    found: list[Comparison] = []
    for summary in models:
        then = baseline.outcomes.get(summary.model)
        if then is None:
            found.append(Comparison(model=summary.model, in_baseline=False, rate=summary.rate))
            continue
        now = {row.instance_id: cell.outcome for row in rows
               if (cell := row.cells.get(summary.model)) is not None}
        both = [i for i in now if _scored(now[i]) and _scored(then.get(i))]
        before = baseline.rates.get(summary.model)
        delta = summary.rate - before if summary.rate is not None and before is not None else None
        found.append(Comparison(
            model=summary.model, in_baseline=True, rate=summary.rate, baseline_rate=before,
            rate_delta=delta, compared=len(both), calls_per_task=summary.calls_per_task,
            baseline_calls_per_task=baseline.calls.get(summary.model),
            prompt_tokens_per_task=summary.prompt_tokens_per_task,
            baseline_prompt_tokens_per_task=baseline.prompt_tokens.get(summary.model),
            gained=[i for i in both if now[i] == "resolved" and then[i] != "resolved"],
            lost=[i for i in both if now[i] != "resolved" and then[i] == "resolved"],
        ))  # fmt: skip
    current = {m.model for m in models}
    found += [Comparison(model=m, in_baseline=True, in_current=False,
                         baseline_rate=baseline.rates.get(m))
              for m in baseline.outcomes if m not in current]
    return found


def _scored(outcome: Outcome | None) -> bool:
    return outcome in ("resolved", "unresolved")

