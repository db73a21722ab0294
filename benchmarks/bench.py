"""The project's own yardstick: `cra bench` on a pinned public Python repository.

Mines the repository's history (its git directory given as an argument, fetched outside this
tree) at a pinned commit, then runs the oracle and each scripted small-model noise mode over the
tasks through the real CLI, and prints: tasks mined, oracle resolved N/N (anything less is a
harness bug), the time per task, and each noise mode's resolved rate and ratio to the oracle's —
the number to watch when prompts, retrieval or the edit engine change.

Default: hukkin/tomli at 920e20b (pure Python, no dependencies, a 1-second test suite).

Run: .venv/bin/python benchmarks/bench.py /work/.mirror/hukkin+tomli/repo
     [--rev 920e20b] [--max 300] [--modes oracle:edits,oracle:plans,oracle:judgments]
     [--rate 0.3] [--jobs 2] [--tasks TASKS.jsonl] [--keep DIR] [--tests hidden|given]
(`oracle:context` among the modes runs the context-honest oracle, without noise; `--tests`
is `cra bench run --tests`: the fix's tests hidden from each run, the default, or given.) For each
configuration it also prints what the calls cost and saw: calls and prompt tokens per task, the
largest prompt, the share of the fixes' files a planner was shown and of their hunks an implement
call saw, and the calls by stage.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.bench.report.command import build_report  # noqa: E402
from agent.bench.results import read_results  # noqa: E402
from agent.bench.tasks import read_tasks  # noqa: E402

PIN = "920e20b"
TEST_COMMAND = (
    f"PYTHONPATH=src {shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider tests"
)


def cra(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [str(ROOT / ".venv" / "bin" / "cra"), "--data-dir", str(data), *args]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        print(done.stderr, file=sys.stderr)
        raise SystemExit(f"cra {' '.join(args[:2])} failed ({done.returncode})")
    return done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path, help="the repository's git directory")
    parser.add_argument("--rev", default=PIN)
    parser.add_argument("--max", type=int, default=300, help="commits to examine")
    parser.add_argument("--test-command", default=TEST_COMMAND)
    parser.add_argument("--modes", default="oracle:edits,oracle:plans,oracle:judgments")
    parser.add_argument("--rate", type=float, default=0.3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--tests",
        choices=("hidden", "given"),
        default="hidden",
        help="the fix's tests hidden from each run (as SWE-bench), or given",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="work in this folder and keep it (tasks, "
        "results, the run log: `cra --data-dir KEEP/data runs RUN_ID`)",
    )
    parser.add_argument(
        "--tasks",
        type=Path,
        help="run these mined tasks instead of mining "
        "(a before/after comparison on the same tasks)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cra-bench-") as tmp_name:
        tmp = Path(tmp_name) if args.keep is None else args.keep
        tmp.mkdir(parents=True, exist_ok=True)
        config = tmp / "cra.toml"
        config.write_text(
            f"[testing]\ntest_command = {json.dumps(args.test_command)}\ntimeout = 300\n"
        )
        tasks, data = tmp / "tasks.jsonl", tmp / "data"
        started = time.monotonic()
        if args.tasks is not None:
            tasks = args.tasks
        else:
            done = cra(
                data,
                "bench",
                "mine",
                "--repo",
                str(args.repo),
                "--config",
                str(config),
                "--rev",
                args.rev,
                "--max",
                str(args.max),
                "--output",
                str(tasks),
            )
            print(f"mined from {args.repo} at {args.rev} in {time.monotonic() - started:.0f} s")
            print(
                "  "
                + "\n  ".join(line for line in done.stderr.splitlines() if line.startswith("cra:"))
            )
        mined = list(read_tasks(tasks))
        print(f"tasks: {len(mined)}")
        if not mined:
            return 1
        labels = [
            "oracle",
            *(
                m if m == "oracle:context" else f"{m}@{args.rate}"
                for m in args.modes.split(",")
                if m
            ),
        ]
        rows = {}
        for label in labels:
            results = tmp / f"results-{args.tests}-{label.replace(':', '-')}.jsonl"
            started = time.monotonic()
            done = cra(
                data,
                "bench",
                "run",
                str(tasks),
                "--repo",
                str(args.repo),
                "--config",
                str(config),
                "--model",
                label,
                "--results",
                str(results),
                "--jobs",
                str(args.jobs),
                "--tests",
                args.tests,
            )
            wall = time.monotonic() - started
            written = len(list(read_results(results)))
            if written != len(mined):
                print(done.stderr[-4000:], file=sys.stderr)
                raise SystemExit(
                    f"cra bench run --model {label} wrote {written} results for "
                    f"{len(mined)} tasks: it stopped early (its output is above)"
                )
            [row] = build_report(read_results(results)).models
            rows[label] = row
            scored = row.resolved + row.unresolved
            print(
                f"{label:<28} tests {args.tests}, resolved {row.resolved}/{scored} "
                f"({row.rate or 0:.0%}, 95% {row.ci_low or 0:.0%}–{row.ci_high or 0:.0%}), "
                f"errors {row.errors}, {wall / len(mined):.1f} s per task"
            )
            print(
                f"{'':<28} {row.calls_per_task or 0:.1f} calls and "
                f"{row.prompt_tokens_per_task or 0:,.0f} prompt tokens per task (largest "
                f"prompt {row.largest_prompt:,}); fix files planned from "
                f"{row.gold_files_seen or 0:.0%}, hunks seen {row.gold_hunks_seen or 0:.0%}; "
                "calls by stage: "
                + ", ".join(f"{g} {n:.1f}" for g, n in sorted(row.calls_by_stage.items()))
            )
        oracle = rows["oracle"]
        for label, row in rows.items():
            if label != "oracle" and oracle.rate:
                print(
                    f"  {label}: {(row.rate or 0) / oracle.rate:.2f}x the oracle's rate "
                    f"({row.resolved}/{oracle.resolved} of the tasks it resolves)"
                )
        healthy = oracle.resolved == oracle.resolved + oracle.unresolved == len(mined)
        print(
            "oracle resolved every task"
            if healthy
            else "ORACLE MISSED TASKS: a harness bug (see the results for their run ids)"
        )
        return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
