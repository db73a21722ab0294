"""Start-up: the imports `cra --help` pays, and those `cra solve` pays before its first model call.

Each command runs in a fresh interpreter with `python -X importtime`; the import time of a
command is the sum of the cumulative times of its top-level imports. For `cra solve` (a real
repository, a scripted model server on loopback) the count stops at the first model call, the
meta-plan's chat request: the server kills the process there, which is waiting for the answer, so
every import line it wrote came before the call (the preflight's GET of the model list is answered
outside the script and does not stop it). Peers measured in the same run: the bare interpreter
(`python -c pass`: what every Python program pays) and the libraries a solve cannot do without
before its first call (pydantic, SQLAlchemy, httpx). Each figure is the median of --repeat runs;
the goal of issue 14 is ≤ 0.3 s of imports for both.

The interpreters read bytecode caches, as an installed cra does (pip compiles the wheel's modules
at install): PYTHONDONTWRITEBYTECODE is dropped for them, the caches go to a temporary
PYTHONPYCACHEPREFIX, and an unmeasured first round fills it. --no-bytecode-cache measures instead
what a checkout pays when nothing is cached: every module compiled from source on every start.

Run: .venv/bin/python benchmarks/startup.py [--repeat 5] [-v] [--no-bytecode-cache]
                                            [--against OTHER_CHECKOUT]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the scripted model server and repo builders live in tests/fakes

from agent.runlog.store import RunLog  # noqa: E402
from tests.fakes.model_server import (  # noqa: E402
    RecordedRequest,
    Reply,
    ScriptedModelServer,
    scripted_config,
)
from tests.fakes.repos import ISOLATED_GIT_ENV, make_python_project  # noqa: E402

GOAL_S = 0.3
LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)")
FLOOR = "import pydantic, sqlalchemy, httpx"


@dataclass
class Imports:
    """The import lines of one run, in order: (self µs, cumulative µs, depth, module)."""

    lines: list[tuple[int, int, int, str]] = field(default_factory=list)
    wall_s: float = 0.0

    def add(self, text: str) -> None:
        match = LINE.match(text)
        if match:
            self.lines.append((int(match[1]), int(match[2]), len(match[3]) // 2, match[4]))

    def seconds(self, upto: int | None = None) -> float:
        """The time of the top-level imports (of the first `upto` lines), in seconds."""
        chosen = self.lines if upto is None else self.lines[:upto]
        return sum(cumulative for _, cumulative, depth, _ in chosen if depth == 0) / 1e6

    def by_package(self, upto: int | None = None) -> dict[str, float]:
        """Seconds of self time by top-level package (of the first `upto` lines)."""
        totals: dict[str, float] = {}
        chosen = self.lines if upto is None else self.lines[:upto]
        for self_us, _, _, module in chosen:
            root = module.split(".")[0]
            totals[root] = totals.get(root, 0.0) + self_us / 1e6
        return totals

    def heaviest(self, count: int, upto: int | None = None) -> list[tuple[float, str]]:
        """The `count` slowest top-level imports: (seconds, module)."""
        chosen = self.lines if upto is None else self.lines[:upto]
        top = sorted(((c / 1e6, m) for _, c, d, m in chosen if d == 0), reverse=True)
        return top[:count]


def child_env(cache: Path | None) -> dict[str, str]:
    """The environment of the measured interpreters: bytecode cached under `cache` (None: this
    environment as it is, no cache written if PYTHONDONTWRITEBYTECODE says so)."""
    if cache is None:
        return dict(os.environ)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(cache)}


def run_python(args: list[str], env: dict[str, str], root: Path = ROOT) -> Imports:
    """`python -X importtime ARGS` in `root` (whose agent/ it imports); its import lines and
    wall time."""
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        check=False,
    )
    found = Imports(wall_s=time.perf_counter() - began)
    for text in done.stderr.splitlines():
        found.add(text)
    return found


# --- cra solve, up to its first model call ---------------------------------------------------


def solve_imports(work: Path, child: dict[str, str], root: Path = ROOT) -> tuple[Imports, int]:
    """Run `cra solve` on a fresh repository; its imports and how many came before the first
    model call."""
    repo = make_python_project(work / "repo", config=None)
    env = {**child, **ISOLATED_GIT_ENV}
    RunLog.open(f"sqlite:///{work / 'data' / 'cra.db'}").close()  # a data dir in use: migrated
    seen = Imports()
    calls: list[RecordedRequest] = []
    with ScriptedModelServer() as server:

        def first_call(request: RecordedRequest) -> Reply:
            calls.append(request)
            process.kill()  # it waits for this answer: every line it wrote came before the call
            return Reply(status=400, error_body="the benchmark stops here")

        server.respond_with(first_call)
        config = work / "cra.toml"
        config.write_text(scripted_config(server.url))
        began = time.perf_counter()
        process = subprocess.Popen(
            [
                sys.executable,
                "-X",
                "importtime",
                "-m",
                "agent.cli.main",
                "--data-dir",
                str(work / "data"),
                "solve",
                "Add a function",
                "--repo",
                str(repo),
                "--config",
                str(config),
                "--sandbox",
                "none",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=root,
        )
        reader = threading.Thread(target=lambda: [seen.add(t) for t in process.stderr or []])
        reader.start()
        process.wait(timeout=300)
        reader.join()
        seen.wall_s = time.perf_counter() - began
    if not calls:
        raise SystemExit("cra solve made no model call")
    return seen, len(seen.lines)


# --- report ----------------------------------------------------------------------------------


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> int:
    """Measure, print medians and ratios; 1 when a goal is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("-v", action="store_true", help="list the heaviest imports")
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="as this environment is, without warming a bytecode cache",
    )
    parser.add_argument(
        "--against",
        type=Path,
        metavar="CHECKOUT",
        help="also measure the cra "
        "of another checkout (an earlier commit), interleaved with this one's",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cra-startup-pyc-") as cache:
        child = child_env(None if args.no_bytecode_cache else Path(cache))
        if not args.no_bytecode_cache:
            measure(child)  # fills the cache: not counted
            if args.against:
                measure_cra(child, args.against)
        bare, floor, helps, solves, other = [], [], [], [], Rows()
        for _ in range(args.repeat):  # interleaved, so that the machine's load falls on all alike
            last_bare, last_floor, last_help, last_solve = measure(child)
            bare.append(last_bare.seconds())
            floor.append(last_floor.seconds())
            helps.append(last_help.seconds())
            solves.append(last_solve[0].seconds(last_solve[1]))
            if args.against:
                other.add(*measure_cra(child, args.against))
    report(args, median(bare), median(floor), median(helps), median(solves))
    if args.against:
        other.report(args.against, median(floor), this=median(solves), modules=last_solve[1])
    if args.v:
        print("heaviest top-level imports of `cra --help`:", heaviest(last_help, None))
        print("heaviest before the first model call:", heaviest(*last_solve))
    return 0 if median(helps) <= GOAL_S and median(solves) <= GOAL_S else 1


def measure(child: dict[str, str]) -> tuple[Imports, Imports, Imports, tuple[Imports, int]]:
    """One round: the bare interpreter, the libraries, `cra --help`, `cra solve` (with how many
    of its import lines came before its first model call)."""
    bare = run_python(["-c", "pass"], child)
    floor = run_python(["-c", FLOOR], child)
    return bare, floor, *measure_cra(child, ROOT)


def measure_cra(child: dict[str, str], root: Path) -> tuple[Imports, tuple[Imports, int]]:
    """`cra --help` and `cra solve` of the checkout at `root`."""
    helps = run_python(["-m", "agent.cli.main", "--help"], child, root)
    with tempfile.TemporaryDirectory(prefix="cra-startup-") as folder:
        solve = solve_imports(Path(folder), child, root)
    return helps, solve


@dataclass
class Rows:
    """The figures of another checkout, round by round."""

    helps: list[float] = field(default_factory=list)
    solves: list[float] = field(default_factory=list)
    modules: int = 0

    def add(self, helps: Imports, solve: tuple[Imports, int]) -> None:
        self.helps.append(helps.seconds())
        self.solves.append(solve[0].seconds(solve[1]))
        self.modules = solve[1]

    def report(self, root: Path, floor: float, *, this: float, modules: int) -> None:
        helps, solves = median(self.helps), median(self.solves)
        print(f"the cra of {root}, in the same rounds:")
        print(
            f"  cra --help                                   {helps:7.3f} s  "
            f"= {helps / floor:.2f}x the libraries"
        )
        print(
            f"  cra solve, up to its first model call        {solves:7.3f} s  "
            f"= {solves / floor:.2f}x the libraries; this checkout's is "
            f"{this / solves:.2f}x that"
        )
        print(f"  modules imported before that call: {self.modules} (this checkout: {modules})")


def heaviest(imports: Imports, upto: int | None) -> str:
    """The slowest top-level imports, and the self time by package."""
    top = ", ".join(f"{module} {seconds:.3f} s" for seconds, module in imports.heaviest(6, upto))
    packages = sorted(imports.by_package(upto).items(), key=lambda item: -item[1])[:12]
    return top + "\n    by package: " + ", ".join(f"{p} {s:.3f} s" for p, s in packages)


def report(
    args: argparse.Namespace, bare: float, floor: float, helps: float, solves: float
) -> None:
    """The medians, each as a ratio of its peers, and the goals."""
    cached = "no bytecode cache" if args.no_bytecode_cache else "bytecode cached"
    print(f"imports (median of {args.repeat}, python -X importtime, {cached})")
    print(f"  python -c pass (the interpreter's own)       {bare:7.3f} s")
    print(f"  {FLOOR:<44} {floor:7.3f} s")
    print(
        f"  cra --help                                   {helps:7.3f} s  "
        f"= {helps / floor:.2f}x the libraries, {helps / bare:.1f}x the interpreter"
    )
    print(
        f"  cra solve, up to its first model call        {solves:7.3f} s  "
        f"= {solves / floor:.2f}x the libraries, {solves / bare:.1f}x the interpreter"
    )
    for name, value in (("cra --help", helps), ("cra solve to the first call", solves)):
        print(f"  goal: {name} <= {GOAL_S} s of imports: {'met' if value <= GOAL_S else 'NOT met'}")


if __name__ == "__main__":
    sys.exit(main())
