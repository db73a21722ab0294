"""The numbers of a bench's results, per configuration (model and setting) and per task.

Rates count only the tasks the bench could score: a result whose outcome is `error` (the harness
could not set the task up or score it) is neither a success nor a failure of the model; it is
counted in its own column and left out of the rate and its interval. The interval is Wilson's
score interval at 95%, which stays inside [0, 1] and behaves at 0/n and n/n, where the normal
approximation does not. A false success (agent.bench.results.false_success) is a run that ended
complete, claiming a fix, whose scored tests say unresolved; its rate is of the scored tasks too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from agent.bench.report.baseline import Baseline, compare, from_report
from agent.bench.report.data import (
    SCHEMA_VERSION,
    BenchReport,
    Cell,
    Comparison,
    ModelSummary,
    TaskRow,
    configuration,
)
from agent.bench.results import BenchResult, TestsSetting, false_success, read_results
from agent.bench.tasks import BenchTask
from agent.errors import BaselineError

__all__ = [
    "SCHEMA_VERSION",
    "Baseline",
    "BenchReport",
    "Cell",
    "Comparison",
    "ModelSummary",
    "TaskRow",
    "build_report",
    "compare",
    "latest",
    "load_baseline",
    "wilson_interval",
]

Z_95 = 1.959963984540054  # the standard normal quantile at 0.975
TITLE_CHARS = 200


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


def latest(results: Iterable[BenchResult]) -> dict[tuple[str, str, TestsSetting], BenchResult]:
    """One result per (instance_id, model, tests): the last one written wins."""
    return {(r.instance_id, r.model, r.tests): r for r in results}


def summarise(
    model: str, results: Sequence[BenchResult], tests: TestsSetting = "given"
) -> ModelSummary:
    """A configuration's counts, rates (resolved with its interval, false successes) and costs."""
    resolved = sum(r.outcome == "resolved" for r in results)
    unresolved = sum(r.outcome == "unresolved" for r in results)
    scored = resolved + unresolved
    claimed = sum(false_success(r.outcome, r.run_status) for r in results)
    interval = wilson_interval(resolved, scored)
    tokens = sum(r.prompt_tokens + r.completion_tokens for r in results)
    wall = sum(r.wall_s for r in results)
    return ModelSummary(
        model=model,
        tests=tests,
        tasks=len(results),
        resolved=resolved,
        unresolved=unresolved,
        scored=scored,
        errors=len(results) - scored,
        rate=_per(resolved, scored),
        ci_low=interval[0] if interval else None,
        ci_high=interval[1] if interval else None,
        false_successes=claimed,
        false_success_rate=_per(claimed, scored),
        calls=sum(r.calls for r in results),
        prompt_tokens=sum(r.prompt_tokens for r in results),
        completion_tokens=sum(r.completion_tokens for r in results),
        wall_s=wall,
        tokens_per_task=_per(tokens, len(results)),
        wall_s_per_task=_per(wall, len(results)),
        tokens_per_resolved=_per(tokens, resolved),
        wall_s_per_resolved=_per(wall, resolved),
        **_clean_room(results),
    )


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
    return Cell(
        outcome=result.outcome,
        run_id=result.run_id,
        run_status=result.run_status,
        error=result.error,
        tokens=result.prompt_tokens + result.completion_tokens,
        wall_s=result.wall_s,
        calls=result.calls,
        prompt_tokens=result.prompt_tokens,
        largest_prompt=result.largest_prompt,
        files_seen=sum(files.values()),
        files=len(files),
        hunks_seen=sum(hunks.values()),
        hunks=len(hunks),
        unseen_hunks=[h for h, seen in hunks.items() if not seen],
    )


def build_report(
    results: Iterable[BenchResult],
    tasks: Iterable[BenchTask] = (),
    *,
    results_file: str = "",
    baseline: Baseline | None = None,
    now: datetime | None = None,
    across_settings: bool = False,
) -> BenchReport:
    """The report of `results`, a row per (model, setting) in order of first result; `tasks` add
    statements and the tasks no model ran yet. SettingsMismatch when the baseline's row of a
    model ran in another setting, unless `across_settings`."""
    found = latest(results)
    grouped: dict[tuple[str, TestsSetting], list[BenchResult]] = {}
    for (_, model, tests), result in found.items():
        grouped.setdefault((model, tests), []).append(result)
    titles = {t.instance_id: title_of(t.problem_statement) for t in tasks}
    ids = list(dict.fromkeys([*titles, *(instance for instance, _, _ in found)]))
    rows = [
        TaskRow(
            instance_id=i,
            title=titles.get(i, ""),
            cells={
                configuration(m, t): _cell(found[i, m, t]) if (i, m, t) in found else None
                for m, t in grouped
            },
        )
        for i in ids
    ]
    summaries = [summarise(m, runs, t) for (m, t), runs in grouped.items()]
    when = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return BenchReport(
        generated_at=when,
        results_file=results_file,
        models=summaries,
        tasks=rows,
        baseline_file=baseline.source if baseline else None,
        comparison=compare(summaries, rows, baseline, across_settings=across_settings)
        if baseline
        else None,
    )


# --- the baseline ----------------------------------------------------------------------------


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
            return from_report(str(path), BenchReport.model_validate(whole))
        except ValidationError as exc:
            raise BaselineError(
                f"{path} is not a report of this version of cra: "
                f"{exc.error_count()} fields are wrong"
            ) from exc
    found = list(read_results(path))
    if not found:
        raise BaselineError(f"{path} holds no bench results and is not a bench report")
    return from_report(str(path), build_report(found))
