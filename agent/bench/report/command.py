"""`cra bench report`: a bench's results as a terminal table, a self-contained HTML page or
JSON (whose schema ships beside this file as report.schema.json).

The numbers are agent.bench.report.scores'; rates leave harness errors out and carry Wilson's
95% score interval (see there).
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from agent.bench.report.html import render_html
from agent.bench.report.scores import BenchReport, build_report, load_baseline, wilson_interval
from agent.bench.report.text import render_markdown, render_text
from agent.bench.results import read_results
from agent.bench.tasks import read_tasks
from agent.errors import BaselineError, ReportFileError, TaskFileError

__all__ = [
    "SCHEMA",
    "BenchReport",
    "build_report",
    "generated_schema",
    "load_baseline",
    "report_command",
    "report_from_files",
    "schema",
    "wilson_interval",
]

SCHEMA_FILE = "report.schema.json"
SCHEMA = Path(__file__).with_name(SCHEMA_FILE)  # the file; schema() reads it as package data


# --- the command -----------------------------------------------------------------------------


def report_command(args: argparse.Namespace) -> int:
    """`cra bench report RESULTS [--tasks] [--baseline [--across-settings]] [--html PATH]
    [--summary PATH] [--json]`; 0, or 2 with one line when a file is wrong or the baseline ran
    in another setting."""
    try:
        report = report_from_files(
            args.results,
            tasks=args.tasks,
            baseline=args.baseline,
            across_settings=args.across_settings,
        )
    except (BaselineError, TaskFileError, ReportFileError) as exc:
        print(f"cra: {exc}", file=sys.stderr)
        return 2
    if args.html is not None:
        try:
            args.html.parent.mkdir(parents=True, exist_ok=True)
            args.html.write_text(render_html(report), encoding="utf-8")
        except OSError as exc:
            print(f"cra: cannot write the HTML report {args.html}: {exc.strerror}", file=sys.stderr)
            return 2
    if args.summary is not None:
        try:
            with args.summary.open("a", encoding="utf-8") as handle:
                handle.write(render_markdown(report, _repository(args.tasks)))
        except OSError as exc:
            print(f"cra: cannot append to {args.summary}: {exc.strerror}", file=sys.stderr)
            return 2
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        print(render_text(report))
        if args.html is not None:
            print(f"\nHTML report: {args.html}")
    return 0


def _repository(tasks: Path | None) -> str:
    """The repository the task file names (its first task's), for the summary's heading."""
    return next((task.repo for task in read_tasks(tasks)), "") if tasks is not None else ""


def report_from_files(
    results: Path,
    *,
    tasks: Path | None = None,
    baseline: Path | None = None,
    across_settings: bool = False,
) -> BenchReport:
    """The report of a results file, with a task file's statements and a baseline (compared
    across settings only when `across_settings`)."""
    if results.is_dir() or (not results.exists() and tasks is None):
        raise ReportFileError(f"no results file {results} (`cra bench run` writes it)")
    try:
        found = list(read_results(results))
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportFileError(f"cannot read the results file {results}: {exc}") from exc
    given = list(read_tasks(tasks)) if tasks is not None else []
    earlier = load_baseline(baseline) if baseline is not None else None
    return build_report(
        found, given, results_file=str(results), baseline=earlier, across_settings=across_settings
    )


def schema() -> dict[str, Any]:
    """The JSON Schema of `cra bench report --json`, as shipped in the package."""
    text = resources.files("agent.bench.report").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def generated_schema() -> dict[str, Any]:
    """The schema as the models define it (the shipped file must equal it)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:cra:bench-report:2",
        **BenchReport.model_json_schema(mode="serialization"),
    }
