"""Mining in parallel: `cra bench mine` on a pinned public repository with one job, then N.

The repository (its git directory, fetched outside this tree) is cloned into the work folder
(`--shared`: the objects stay where they are, the worktrees the mine adds are the clone's), then
mined twice through the real CLI at the same pin and limits, `--jobs 1` and `--jobs N`, each
with its own data dir and output (no journal, no environment cache carried over). Prints both
wall times, their ratio (the speed-up), the floor — the replays' summed time, as the one-job mine
measured it, over min(N, cores): no number of jobs can go below it — and how far above it the
N-job mine ended; then whether both mines wrote the same tasks in the same order (their
statements compared without the test runs' durations). Exits 1 when they did not.

Run: .venv/bin/python benchmarks/mining.py /work/.mirror/hukkin+tomli/repo
     [--rev 920e20b] [--max 300] [--jobs N (default: the cores)] [--test-command …] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.bench.mining.journal import journal_path  # noqa: E402
from agent.bench.mining.mine import machine_cores  # noqa: E402
from agent.bench.tasks import read_tasks, without_timings  # noqa: E402

PIN = "920e20b"
TEST_COMMAND = (
    f"PYTHONPATH=src {shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider tests"
)
THROUGHPUT = re.compile(
    r"cra: (\d+) commit\(s\) examined in [\d.]+ s with \d+ job\(s\): "
    r"[\d.]+ commits/min; replays \([^)]*\) took ([\d.]+) s in all"
)


def mine(
    work: Path, repo: Path, config: Path, args: argparse.Namespace, jobs: int
) -> tuple[float, float, Path, list[str]]:
    """One mine with `jobs` jobs: its wall time, its replays' summed time, its task file and
    its summary lines."""
    tasks, data = work / f"tasks-{jobs}.jsonl", work / f"data-{jobs}"
    for stale in (tasks, journal_path(tasks)):  # a kept folder's last run: start afresh
        stale.unlink(missing_ok=True)
    shutil.rmtree(data, ignore_errors=True)
    argv = [
        str(ROOT / ".venv" / "bin" / "cra"),
        "--data-dir",
        str(data),
        "bench",
        "mine",
        "--repo",
        str(repo),
        "--config",
        str(config),
        "--rev",
        args.rev,
        "--max",
        str(args.max),
        "--output",
        str(tasks),
        "--jobs",
        str(jobs),
    ]
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    found = THROUGHPUT.search(done.stderr)
    if done.returncode != 0 or found is None:
        print(done.stderr[-4000:], file=sys.stderr)
        raise SystemExit(f"cra bench mine --jobs {jobs} failed ({done.returncode})")
    summary = [
        line
        for line in done.stderr.splitlines()
        if ("task(s) from" in line and line.startswith("cra: ")) or THROUGHPUT.search(line)
    ]
    return wall, float(found.group(2)), tasks, summary


def clone(source: Path, work: Path) -> Path:
    """A clone of `source` sharing its objects: the worktrees a mine or a bench adds are
    registered here, not in `source`."""
    target = work / "repo.git"
    if not target.exists():
        subprocess.run(
            ["git", "clone", "--quiet", "--mirror", "--shared", str(source), str(target)],
            check=True,
        )
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path, help="the repository's git directory")
    parser.add_argument("--rev", default=PIN)
    parser.add_argument("--max", type=int, default=300, help="commits to examine")
    parser.add_argument(
        "--jobs",
        type=int,
        default=machine_cores(),
        help="the parallel mine's jobs (default: the cores)",
    )
    parser.add_argument("--test-command", default=TEST_COMMAND)
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cra-mining-") as tmp_name:
        work = Path(tmp_name) if args.keep is None else args.keep.absolute()
        work.mkdir(parents=True, exist_ok=True)
        config = work / "cra.toml"
        config.write_text(
            f"[testing]\ntest_command = {json.dumps(args.test_command)}\ntimeout = 300\n"
        )
        repo = clone(args.repo, work)
        print(
            f"mining {args.repo} at {args.rev}, {args.max} commits at most, {machine_cores()} cores"
        )
        runs = {}
        for jobs in (1, args.jobs):
            runs[jobs] = mine(work, repo, config, args, jobs)
            wall, replays, _, summary = runs[jobs]
            print(f"--jobs {jobs}: {wall:.1f} s wall, replays {replays:.1f} s in all")
            print("  " + "\n  ".join(summary))
        return report(runs, args.jobs)


def report(runs: dict[int, tuple[float, float, Path, list[str]]], jobs: int) -> int:
    """The speed-up, the floor, and whether both mines wrote the same tasks."""
    one, many = runs[1], runs[jobs]
    floor = one[1] / max(1, min(jobs, machine_cores()))
    print(
        f"speed-up: {one[0] / max(many[0], 1e-9):.2f}x (--jobs 1 {one[0]:.1f} s, --jobs "
        f"{jobs} {many[0]:.1f} s); floor {floor:.1f} s (replays {one[1]:.1f} s / "
        f"{min(jobs, machine_cores())}), --jobs {jobs} at {many[0] / max(floor, 1e-9):.2f}x "
        "the floor"
    )
    first = [without_timings(t) for t in read_tasks(one[2])]
    second = [without_timings(t) for t in read_tasks(many[2])]
    if first == second:
        print(f"same tasks in the same order: yes ({len(first)} tasks)")
        return 0
    differ = [a.instance_id for a, b in zip(first, second, strict=False) if a != b]
    print(
        f"SAME TASKS: NO — --jobs 1 wrote {len(first)}, --jobs {jobs} wrote {len(second)}; "
        f"first differences: {', '.join(differ[:5]) or '(the order or the count)'}"
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
