"""The bench report as plain, aligned text for the terminal (no colour, pure)."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from agent.bench.report.data import BenchReport, Cell, Comparison, ModelSummary, configuration

MARKS = {"resolved": "✓", "unresolved": "✗", "error": "E"}
NOT_RUN = "·"
LIST_AT_MOST = 20  # gained/lost ids listed per model before "and N more"


def render_text(report: BenchReport) -> str:
    """Summary table, per-task grid and the baseline comparison, separated by blank lines."""
    if not report.models and not report.tasks:
        return f"no bench results in {report.results_file or 'the results file'} yet"
    parts = [_summary(report.models), _clean_room(report.models), _legend(), _grid(report)]
    if report.comparison is not None:
        parts.append(_comparison(report.comparison, report.baseline_file or "the baseline"))
    return "\n\n".join(p for p in parts if p)


def render_markdown(report: BenchReport, repository: str = "") -> str:
    """The text report as a Markdown section (a job summary): a heading naming the repository,
    the table in a fence that no backtick of a task's id or title can end early."""
    text = render_text(report).replace("`", "'")
    heading = f"## cra bench: {clean(repository)}" if repository else "## cra bench"
    return f"{heading}\n\n```text\n{text}\n```\n"


def table(header: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> str:
    """Columns padded to their widest cell; the columns in `right` aligned right."""
    header, rows = [clean(c) for c in header], [[clean(c) for c in r] for r in rows]
    widths = [max(len(x) for x in column) for column in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        padded = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(padded).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def clean(text: str) -> str:
    """`text` with control characters (escape sequences, newlines) shown as "?": ids and model
    names come from files and must not drive the terminal."""
    return "".join("?" if unicodedata.category(ch) == "Cc" else ch for ch in text)


def percent(value: float | None) -> str:
    """0.4567 as "45.7%"; "–" for none."""
    return "–" if value is None else f"{100 * value:.1f}%"


def interval(summary: ModelSummary) -> str:
    """The Wilson interval as "23.7–76.3%"."""
    if summary.ci_low is None or summary.ci_high is None:
        return "–"
    return f"{100 * summary.ci_low:.1f}–{100 * summary.ci_high:.1f}%"


def number(value: float | None, digits: int = 0) -> str:
    """A count or mean, "–" when undefined."""
    return "–" if value is None else f"{value:,.{digits}f}"


HEADER = (
    "model",
    "tests",
    "tasks",
    "resolved",
    "rate",
    "95% CI (Wilson)",
    "false successes",
    "false-success rate (of scored)",
    "errors",
    "tokens/resolved",
    "time/resolved",
    "tokens/task",
    "time/task",
    "calls",
)
NUMERIC_FROM = 2  # the summary's columns from this one on are numbers, aligned right


def summary_rows(models: Sequence[ModelSummary]) -> list[list[str]]:
    """The summary table's cells, row by row (shared with the HTML page)."""
    return [
        [
            m.model,
            m.tests,
            str(m.tasks),
            f"{m.resolved}/{m.scored}",
            percent(m.rate),
            interval(m),
            f"{m.false_successes}/{m.scored}",
            percent(m.false_success_rate),
            str(m.errors),
            number(m.tokens_per_resolved),
            seconds(m.wall_s_per_resolved),
            number(m.tokens_per_task),
            seconds(m.wall_s_per_task),
            str(m.calls),
        ]
        for m in models
    ]


def seconds(value: float | None) -> str:
    """A duration as "4.2 s" or "3 min 5 s"; "–" when undefined."""
    if value is None:
        return "–"
    if value < 60:
        return f"{value:.1f} s"
    minutes, rest = divmod(round(value), 60)
    return f"{minutes} min {rest} s"


def _summary(models: Sequence[ModelSummary]) -> str:
    if not models:
        return "no model has a result yet"
    return table(HEADER, summary_rows(models), right=set(range(NUMERIC_FROM, len(HEADER))))


CLEAN_ROOM_HEADER = (
    "model",
    "calls/task",
    "prompt tokens/task",
    "largest prompt",
    "fix files planned from",
    "fix hunks seen",
    *(f"{g} calls" for g in ("retrieval", "planning", "implementing", "adjusting", "reasks")),
)


def clean_room_rows(models: Sequence[ModelSummary]) -> list[list[str]]:
    """What each model's calls cost and saw, per task (shared with the HTML page): calls,
    prompt tokens, the largest prompt, the share of the fixes' files a planner was shown and
    of their hunks an implement call saw, and the calls of each stage group."""
    return [
        [
            m.column,
            number(m.calls_per_task, 1),
            number(m.prompt_tokens_per_task),
            f"{m.largest_prompt:,}",
            percent(m.gold_files_seen),
            percent(m.gold_hunks_seen),
            *(
                number(m.calls_by_stage.get(g, 0.0), 1)
                for g in ("retrieval", "planning", "implementing", "adjusting", "reasks")
            ),
        ]
        for m in models
    ]


def _clean_room(models: Sequence[ModelSummary]) -> str:
    if not any(m.calls_by_stage for m in models):
        return ""
    return "what the calls cost and saw, per task:\n" + table(
        CLEAN_ROOM_HEADER, clean_room_rows(models), right=set(range(1, len(CLEAN_ROOM_HEADER)))
    )


def _legend() -> str:
    return (
        "rate = resolved / (resolved + unresolved); errors are harness errors, counted "
        "apart and left out of the rate.\nfalse successes: runs that ended complete (a pull "
        "request saying the tests pass) whose scored tests say unresolved, of the scored "
        "tasks.\ntests: given, the fix's tests were in the tree during the run; hidden, "
        "they were applied only to score it.\ngrid: ✓ resolved  ✗ unresolved  "
        "E harness error  · not run; `cra runs RUN_ID` shows a run's trace."
    )


def cell_text(cell: Cell | None) -> str:
    """A grid cell: its mark and the run id that holds the trace."""
    if cell is None:
        return NOT_RUN
    text = f"{MARKS[cell.outcome]} {cell.run_id}" if cell.run_id else MARKS[cell.outcome]
    if cell.hunks:
        text += f" hunks {cell.hunks_seen}/{cell.hunks}"
    return text


def _grid(report: BenchReport) -> str:
    if not report.tasks:
        return ""
    models = [m.column for m in report.models]
    rows = [
        [row.instance_id, *(cell_text(row.cells.get(m)) for m in models)] for row in report.tasks
    ]
    return table(["task", *models], rows, right=set())


def _comparison(comparison: Sequence[Comparison], source: str) -> str:
    lines = [f"against {clean(source)}:"]
    for c in comparison:
        name = clean(configuration(c.model, c.tests))
        if not c.in_current:
            lines.append(
                f"  {name}: only in the baseline (rate {percent(c.baseline_rate)}, "
                f"false successes {percent(c.baseline_false_success_rate)})"
            )
        elif not c.in_baseline:
            lines.append(f"  {name}: not in the baseline")
        else:
            lines += _compared(name, c)
    return "\n".join(lines)


def _compared(name: str, c: Comparison) -> list[str]:
    across = (
        f" against its tests-{c.baseline_tests} row"
        if c.baseline_tests not in (None, c.tests)
        else ""
    )
    lines = [
        f"  {name}{across}: {percent(c.baseline_rate)} → {percent(c.rate)} "
        f"({points(c.rate_delta)}); {len(c.gained)} gained, {len(c.lost)} lost of "
        f"{c.compared} compared",
        f"    false successes (of scored) {c.baseline_false_successes} → "
        f"{c.false_successes}, {percent(c.baseline_false_success_rate)} → "
        f"{percent(c.false_success_rate)} ({points(c.false_success_delta)})",
    ]
    if c.calls_per_task is not None and c.baseline_calls_per_task is not None:
        lines.append(
            f"    calls per task {number(c.baseline_calls_per_task, 1)} → "
            f"{number(c.calls_per_task, 1)}; prompt tokens per task "
            f"{number(c.baseline_prompt_tokens_per_task)} → "
            f"{number(c.prompt_tokens_per_task)}"
        )
    return lines + _ids("gained", c.gained) + _ids("lost", c.lost)


def points(delta: float | None) -> str:
    """A change of rate as "+12.5 points"; "–" when either side has no rate."""
    return "–" if delta is None else f"{100 * delta:+.1f} points"


def _ids(word: str, ids: Sequence[str]) -> list[str]:
    if not ids:
        return []
    more = f" and {len(ids) - LIST_AT_MOST} more" if len(ids) > LIST_AT_MOST else ""
    return [f"    {word}: {clean(', '.join(ids[:LIST_AT_MOST]))}{more}"]
