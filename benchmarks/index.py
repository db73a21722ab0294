"""Index benchmark: this machine's Python standard library as a git repository.

Measures, in one process and interleaved `--repeat` times:
  floor  read + decode + `ast.parse` of every tracked file (what any Python indexer must do);
  cold   RepoIndex.update into a new index file;
  warm   RepoIndex.update again with nothing changed;
  one    RepoIndex.update after one committed change (parses one file).
Prints medians and the ratios to the floor. Targets: cold ≤ 2× floor, warm ≤ 0.5 s.

Run: .venv/bin/python benchmarks/index.py [--repeat 3] [--lib PATH] [--keep DIR]
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import os
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
import warnings
from pathlib import Path

from agent.git.repo import run_git
from agent.retrieval.indexing.index import RepoIndex
from agent.retrieval.indexing.index_records import IndexStats

GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}
COLD_TARGET, WARM_TARGET_S = 2.0, 0.5
SKIP_PARTS = {"site-packages", "__pycache__"}


def build_repository(lib: Path, root: Path) -> list[str]:
    """Copy the `.py` files of `lib` (site-packages left out) into a new repository at `root`."""
    copied: list[str] = []
    for source in sorted(lib.rglob("*.py")):
        rel = source.relative_to(lib)
        if SKIP_PARTS.intersection(rel.parts) or not source.is_file():
            continue
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        copied.append(rel.as_posix())
    git(root, "init", "--quiet")
    git(root, "add", "--all")
    git(root, "commit", "--quiet", "--no-verify", "-m", "stdlib")
    return copied


def git(root: Path, *args: str) -> str:
    """Run git in `root` with an isolated configuration."""
    return run_git(list(args), root, env=GIT_ENV)


def floor(root: Path, paths: list[str]) -> float:
    """Seconds to read, decode and `ast.parse` every file (the work no indexer can skip)."""
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for rel in paths:
            text = (root / rel).read_bytes().decode("utf-8", errors="replace")
            with contextlib.suppress(SyntaxError, ValueError, RecursionError):
                ast.parse(text)
    return time.perf_counter() - started


def cold_and_warm(root: Path, db: Path) -> tuple[IndexStats, IndexStats]:
    """A cold update into a new index file, then a warm one with nothing changed."""
    for stale in db.parent.glob(db.name + "*"):
        stale.unlink()
    with RepoIndex.open(db) as index:
        return index.update(root), index.update(root)


def one_change(root: Path, db: Path, round_number: int) -> IndexStats:
    """An update after one committed edit of one file."""
    target = root / "json" / "__init__.py"
    target.write_text(
        target.read_text(encoding="utf-8") + f"\n# round {round_number}\n", encoding="utf-8"
    )
    git(root, "commit", "--quiet", "--no-verify", "-am", f"round {round_number}")
    with RepoIndex.open(db) as index:
        return index.update(root)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table; exit 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lib", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--keep", type=Path, help="build the repository here and keep it")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cra-index-bench-") as tmp:
        work = args.keep or Path(tmp)
        root = work / "stdlib"
        paths = build_repository(args.lib, root)
        db = work / "index.sqlite"
        floors, colds, warms, ones = [], [], [], []
        for n in range(args.repeat):
            floors.append(floor(root, paths))
            cold, warm = cold_and_warm(root, db)
            colds.append(cold.seconds)
            warms.append(warm.seconds)
            ones.append(one_change(root, db, n).seconds)
        return report(args.lib, paths, cold, floors, colds, warms, ones)


def report(
    lib: Path,
    paths: list[str],
    stats: IndexStats,
    floors: list[float],
    colds: list[float],
    warms: list[float],
    ones: list[float],
) -> int:
    """Print medians, ratios and the verdict on each target."""
    f, c, w, o = (statistics.median(x) for x in (floors, colds, warms, ones))
    print(f"repository: {len(paths)} .py files from {lib}")
    print(
        f"index: {stats.files} files, {stats.symbols} symbols, {stats.syntax_errors} syntax "
        f"errors (indexed as text), {stats.capped} capped, skipped {stats.skipped}"
    )
    print(f"runs: {len(floors)} (median; min in brackets)")
    print(f"floor (read + ast.parse) {f:7.2f} s [{min(floors):.2f}]")
    print(f"cold index               {c:7.2f} s [{min(colds):.2f}]  {c / f:.2f}x floor")
    print(f"warm, nothing changed    {w:7.3f} s [{min(warms):.3f}]  {w / f:.3f}x floor")
    print(f"one file changed         {o:7.3f} s [{min(ones):.3f}]  {o / f:.3f}x floor")
    cold_ok, warm_ok = c / f <= COLD_TARGET, w <= WARM_TARGET_S
    print(
        f"target cold <= {COLD_TARGET:g}x floor: {'met' if cold_ok else 'MISSED'}; "
        f"target warm <= {WARM_TARGET_S:g} s: {'met' if warm_ok else 'MISSED'}"
    )
    return 0 if cold_ok and warm_ok else 1


if __name__ == "__main__":
    sys.exit(main())
