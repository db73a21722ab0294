"""`cra bench report`: per model, how many tasks it resolved (with a 95 % Wilson interval), what
a resolved task cost, which model solved which task, and what changed since an earlier report.

Harness errors (`error`: the setup failed, a run could not start) are shown apart and left out
of the rate: they say nothing about the model. Output: a table, JSON (its schema ships beside
this file as report.schema.json) or a self-contained HTML page.
"""

from __future__ import annotations

import argparse
import html
import json
import math
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from agent.bench.results import BenchResult, read_results
from agent.bench.tasks import read_tasks

Z95 = 1.959963984540054
SCHEMA = Path(__file__).with_name("report.schema.json")


def wilson(resolved: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a rate resolved/n (0, 0 when n is 0)."""
    if n == 0:
        return 0.0, 0.0
    p = resolved / n
    centre = p + z * z / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    denominator = 1 + z * z / n
    return max(0.0, (centre - margin) / denominator), min(1.0, (centre + margin) / denominator)


def latest(results: Iterable[BenchResult]) -> dict[tuple[str, str], BenchResult]:
    """The last result of each (task, model): a re-run after an error replaces it."""
    return {(r.instance_id, r.model): r for r in results}


def build(results: Sequence[BenchResult], task_ids: Sequence[str] = (),
          baseline: Sequence[BenchResult] | None = None) -> dict[str, Any]:
    """The report as data (what --json prints)."""
    by_key = latest(results)
    models = sorted({model for _, model in by_key})
    tasks = sorted({task for task, _ in by_key} | set(task_ids))
    before = latest(baseline) if baseline is not None else None
    rows = []
    for model in models:
        mine = [r for (t, m), r in by_key.items() if m == model]
        scored = [r for r in mine if r.outcome != "error"]
        won = [r for r in scored if r.resolved]
        low, high = wilson(len(won), len(scored))
        row: dict[str, Any] = {
            "model": model, "tasks": len(mine), "scored": len(scored), "resolved": len(won),
            "errors": len(mine) - len(scored),
            "rate": round(len(won) / len(scored), 4) if scored else 0.0,
            "interval": [round(low, 4), round(high, 4)],
            "calls": sum(r.calls for r in mine),
            "tokens": sum(r.prompt_tokens + r.completion_tokens for r in mine),
            "wall_s": round(sum(r.wall_s for r in mine), 1),
            "tokens_per_resolved": _per(sum(r.prompt_tokens + r.completion_tokens for r in mine),
                                        len(won)),
            "seconds_per_resolved": _per(sum(r.wall_s for r in mine), len(won)),
        }
        if before is not None:
            then = {t for (t, m), r in before.items() if m == model and r.resolved}
            now = {r.instance_id for r in won}
            earlier = [r for (t, m), r in before.items() if m == model and r.outcome != "error"]
            row["gained"] = sorted(now - then)
            row["lost"] = sorted(then - now)
            row["rate_delta"] = round(row["rate"] - (len(then) / len(earlier) if earlier
                                                     else 0.0), 4)
        rows.append(row)
    grid = {task: {model: _cell(by_key.get((task, model))) for model in models}
            for task in tasks}
    return {"models": rows, "tasks": tasks, "grid": grid, "interval": "wilson-95"}


def _per(total: float, count: int) -> float | None:
    return round(total / count, 1) if count else None


def _cell(result: BenchResult | None) -> dict[str, Any] | None:
    if result is None:
        return None
    return {"outcome": result.outcome, "run_id": result.run_id, "wall_s": result.wall_s}


def render_table(report: dict[str, Any]) -> str:
    """The report as aligned plain text."""
    lines = [f"{'model':<28} {'resolved':>9} {'rate':>6} {'95% interval':>14} {'errors':>6} "
             f"{'tokens/res':>10} {'s/res':>7}"]
    for row in report["models"]:
        low, high = row["interval"]
        lines.append(
            f"{row['model'][:28]:<28} {row['resolved']:>4}/{row['scored']:<4} "
            f"{row['rate']:>6.0%} {f'{low:.0%}–{high:.0%}':>14} {row['errors']:>6} "
            f"{_show(row['tokens_per_resolved']):>10} {_show(row['seconds_per_resolved']):>7}")
        if "gained" in row:
            lines.append(f"  vs baseline: {row['rate_delta']:+.0%}; gained "
                         f"{', '.join(row['gained']) or 'none'}; lost "
                         f"{', '.join(row['lost']) or 'none'}")
    lines.append("")
    models = [row["model"] for row in report["models"]]
    marks = {"resolved": "✓", "unresolved": "✗", "error": "!"}
    for task in report["tasks"]:
        cells = [marks[c["outcome"]] if (c := report["grid"][task][m]) else "·"
                 for m in models]
        lines.append(f"{task[:60]:<60} {' '.join(cells)}")
    return "\n".join(lines)


def _show(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def render_html(report: dict[str, Any]) -> str:
    """A self-contained page (inline style, no script, nothing fetched), everything escaped."""
    e = html.escape
    models = [row["model"] for row in report["models"]]
    head = "".join(f"<th>{e(m)}</th>" for m in models)
    summary = "".join(
        f"<tr><td>{e(r['model'])}</td><td>{r['resolved']}/{r['scored']}</td>"
        f"<td>{r['rate']:.0%}</td><td>{r['interval'][0]:.0%}–{r['interval'][1]:.0%}</td>"
        f"<td>{r['errors']}</td><td>{e(_show(r['tokens_per_resolved']))}</td>"
        f"<td>{e(_show(r['seconds_per_resolved']))}</td>"
        + (f"<td>{r['rate_delta']:+.0%}</td><td>{e(', '.join(r['gained']) or '—')}</td>"
           f"<td>{e(', '.join(r['lost']) or '—')}</td>" if "gained" in r else "")
        + "</tr>" for r in report["models"])
    compared = any("gained" in r for r in report["models"])
    extra = "<th>vs baseline</th><th>gained</th><th>lost</th>" if compared else ""
    grid = "".join(
        f"<tr><td class=task>{e(task)}</td>" + "".join(
            _grid_cell(report["grid"][task][m]) for m in models) + "</tr>"
        for task in report["tasks"])
    return f"""<!doctype html>
<html lang=en><head><meta charset=utf-8><title>cra bench report</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<style>
body{{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#1f2328}}
table{{border-collapse:collapse;margin:1rem 0}}td,th{{border:1px solid #d0d7de;padding:4px 8px}}
th{{background:#f6f8fa}}.resolved{{background:#dafbe1}}.unresolved{{background:#ffebe9}}
.error{{background:#fff8c5}}.task{{font-family:ui-monospace,monospace}}
</style></head><body>
<h1>cra bench report</h1>
<p>Resolved: every FAIL_TO_PASS test passes and every PASS_TO_PASS test still passes, with the
task's tests put back. Interval: Wilson score, 95 %. Harness errors are not counted in the rate.</p>
<table id=summary><tr><th>model</th><th>resolved</th><th>rate</th><th>95% interval</th>
<th>errors</th><th>tokens / resolved</th><th>s / resolved</th>{extra}</tr>{summary}</table>
<h2>Tasks</h2>
<table id=grid><tr><th>task</th>{head}</tr>{grid}</table>
</body></html>
"""


def _grid_cell(cell: dict[str, Any] | None) -> str:
    if cell is None:
        return "<td>·</td>"
    run = f" title=\"run {html.escape(str(cell['run_id']))}\"" if cell.get("run_id") else ""
    return (f"<td class={cell['outcome']}{run} data-outcome={cell['outcome']}>"
            f"{html.escape(cell['outcome'])}</td>")


def load_baseline(path: Path) -> list[BenchResult]:
    """An earlier results file (JSON Lines) or an earlier --json report's grid."""
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return list(read_results(path))
    if not isinstance(data, dict) or "grid" not in data:
        return list(read_results(path))
    return [BenchResult(instance_id=task, model=model, outcome=cell["outcome"],
                        run_id=cell.get("run_id"), wall_s=cell.get("wall_s", 0.0))
            for task, cells in data["grid"].items() for model, cell in cells.items() if cell]


def report_command(args: argparse.Namespace) -> int:
    """`cra bench report RESULTS [--tasks] [--baseline] [--html] [--json]`."""
    results = list(read_results(args.results))
    task_ids = [t.instance_id for t in read_tasks(args.tasks)] if args.tasks else []
    baseline = load_baseline(args.baseline) if args.baseline else None
    report = build(results, task_ids, baseline)
    if args.html:
        Path(args.html).write_text(render_html(report), encoding="utf-8")
        print(f"cra: report written to {args.html}", file=sys.stderr)
    print(json.dumps(report, indent=2) if args.json else render_table(report))
    return 0
