"""A bench fanned out over files: `cra bench split` deals a task file into parts for parallel
runners, `cra bench merge` puts their results files back together.

Split deals the tasks round-robin (task 1 to part 1, task 2 to part 2, …), so that each part gets
tasks from the whole history, and always writes every part, empty or not, so that each runner of
a fixed matrix finds its file. Merge takes files, or folders holding results.jsonl files (a
workflow's downloaded artifacts, however many parts left one), and keeps one result per
(instance_id, model, tests setting) — the last one written wins, as in `cra bench report` — in the
order each first appears; a torn line (a runner killed mid-write) is left out, as when the report
reads it. Neither touches a repository, a model or the run log.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.bench.report.scores import latest
from agent.bench.results import BenchResult, read_results
from agent.bench.tasks import read_tasks, write_tasks
from agent.console import EXIT_OK, EXIT_USAGE
from agent.errors import PartsError, TaskFileError

__all__ = ["Merged", "merge_results", "part_path", "parts_command", "split_tasks"]

RESULTS_NAME = "results.jsonl"  # what a folder given to merge is searched for


@dataclass(frozen=True)
class Merged:
    """What a merge wrote: the results kept, and how many duplicates it left out."""

    results: list[BenchResult]
    files: int  # the results files read
    duplicates: int


def part_path(out_dir: Path, part: int) -> Path:
    """The task file of part `part` (numbered from 1, as a workflow's matrix counts)."""
    return out_dir / f"tasks-{part}.jsonl"


def split_tasks(tasks: Path, parts: int, out_dir: Path) -> list[Path]:
    """Deal the tasks of `tasks` round-robin into `parts` files under `out_dir`; their paths."""
    if parts < 1:
        raise PartsError(f"--parts must be 1 or more, not {parts}")
    found = list(read_tasks(tasks))
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [part_path(out_dir, part) for part in range(1, parts + 1)]
    for index, path in enumerate(paths):
        write_tasks(path, found[index::parts])
    return paths


def merge_results(inputs: Sequence[Path], out: Path) -> Merged:
    """One results file from several — a folder stands for every results.jsonl under it (a
    workflow's downloaded artifacts) —: one result per (instance_id, model), the last written
    winning, in first-appearance order; written whole or not at all (`out` may be an input)."""
    missing = [str(path) for path in inputs if not path.exists()]
    if missing:
        raise PartsError(f"no results file {', '.join(missing)}")
    files = [
        found
        for path in inputs
        for found in (sorted(path.rglob(RESULTS_NAME)) if path.is_dir() else [path])
    ]
    every: list[BenchResult] = []
    for path in files:
        every.extend(read_results(path))
    kept = list(latest(every).values())
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    with partial.open("w", encoding="utf-8") as handle:
        handle.writelines(result.model_dump_json() + "\n" for result in kept)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, out)
    return Merged(results=kept, files=len(files), duplicates=len(every) - len(kept))


def parts_command(args: argparse.Namespace) -> int:
    """`cra bench split TASKS --parts N --out DIR` and `cra bench merge RESULTS… --out FILE`;
    0, or 2 with one line when a file or a count is wrong."""
    try:
        if args.bench_command == "split":
            paths = split_tasks(args.tasks, args.parts, args.out)
            sizes = ", ".join(str(sum(1 for _ in read_tasks(path))) for path in paths)
            print(
                f"cra: {len(paths)} part(s) written to {args.out} ({sizes} task(s))",
                file=sys.stderr,
            )
        else:
            merged = merge_results(args.results, args.out)
            print(
                f"cra: {len(merged.results)} result(s) from {merged.files} file(s) "
                f"written to {args.out}"
                + (f"; {merged.duplicates} duplicate(s) left out" if merged.duplicates else ""),
                file=sys.stderr,
            )
    except (PartsError, TaskFileError) as exc:
        print(f"cra: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"cra: cannot write {exc.filename or args.out}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK
