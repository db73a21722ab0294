"""Harness overhead: a scripted 3 parts × 3 steps run on a real repository.

The scripted model waits 200 ms per call and the test command takes about 0.5 s. How it counts:
the harness is the run's wall time (solve(), as the result reports it) less the time inside model
calls (each call's latency, as the client records it) and less the time inside the repository's
own commands (each recorded test run — baseline, attempts, the base commit's tests when gate
files change — from launching it in the sandbox to its exit: bwrap's start is the command's).
What is left is cra's own work: git, the run log, prompts, context, parsing, reading the test
report. Printed as a share of the wall time; the target of issue 14 is ≤ 3 %.

`--profile` also prints where the harness's own time goes (in the solve alone, what the wall time
counts): the subprocesses cra started, by program
(count and wall time; the repository's commands run through bwrap), and the functions with the
most own time in cProfile, leaving out the primitives that only wait (sockets, locks, poll,
waitpid, sleep), which are the model's and the commands' time.

Run: .venv/bin/python benchmarks/orchestrate.py [--model-delay 0.2] [--test-seconds 0.5] [--profile]
     [--no-bytecode-cache]
"""

from __future__ import annotations

import argparse
import compileall
import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the scripted model server and repo builders live in tests/fakes

from agent.config.files import parse_config  # noqa: E402
from agent.llm.client import HTTPChatModel  # noqa: E402
from agent.llm.router import ModelRouter  # noqa: E402
from agent.models import OrchestratorResult  # noqa: E402
from agent.run.orchestrator import solve  # noqa: E402
from agent.run.runtime import Runtime  # noqa: E402
from agent.runlog.store import RunLog  # noqa: E402
from agent.sandbox.bwrap import build_sandbox  # noqa: E402
from tests.fakes.model_server import Reply, ScriptedModelServer  # noqa: E402
from tests.fakes.repos import ISOLATED_GIT_ENV, MUL_FIX, make_python_project  # noqa: E402

PARTS, STEPS = 3, 3
ANCHOR = '    """Return a * b."""\n' + MUL_FIX


def function(n: int) -> str:
    """The code step n adds."""
    return f'def f{n}(a: int) -> int:\n    """Return a + {n}."""\n    return a + {n}\n'


def edit(before: str, added: str) -> str:
    """An edit appending `added` after `before` in calc/ops.py."""
    return (
        f'<edit file="calc/ops.py">\n<search>\n{before.rstrip()}\n</search>\n'
        f"<replacement>\n{before.rstrip()}\n\n\n{added.rstrip()}\n</replacement>\n</edit>"
    )


def script(server: ScriptedModelServer, delay: float) -> None:
    """Meta-plan, part plans, implements and adjustments for PARTS × STEPS steps."""

    def r(text: str) -> Reply:
        return Reply(text=text, delay_s=delay, usage=(500, 100))

    parts = [
        {
            "id": f"p{p}",
            "description": f"Part {p}",
            "affected_files": ["calc/ops.py"],
            "depends_on": [f"p{p - 1}"] if p > 1 else [],
        }
        for p in range(1, PARTS + 1)
    ]
    server.script("meta_plan", r(json.dumps({"task_summary": "t", "parts": parts})))
    n, previous = 0, ANCHOR
    for p in range(1, PARTS + 1):
        steps = [
            {
                "id": f"s{s}",
                "description": f"Add f{(p - 1) * STEPS + s} to calc/ops.py",
                "target_files": ["calc/ops.py"],
                "depends_on": [f"s{s - 1}"] if s > 1 else [],
            }
            for s in range(1, STEPS + 1)
        ]
        server.script(
            "part_plan", r(json.dumps({"part_id": f"p{p}", "task_summary": "t", "steps": steps}))
        )
        for s in range(1, STEPS + 1):
            n += 1
            server.script("implement", r(edit(previous, function(n))))
            previous = function(n)
            server.script(
                "adjustment", r(json.dumps({"revised_steps": steps[s:], "rationale": "on track"}))
            )


def run(
    delay: float,
    test_seconds: float,
    around: Callable[[Callable[[], OrchestratorResult]], OrchestratorResult] = lambda c: c(),
) -> OrchestratorResult:
    """One scripted orchestrator run in a temporary directory; `around` calls the solve (and
    only it: the repository, the model server and the run log are set up before)."""
    os.environ.update(ISOLATED_GIT_ENV)
    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer() as server:
        repo = make_python_project(Path(tmp) / "repo", bug=False, config=None)
        script(server, delay)
        models = {
            role: {"base_url": server.url, "model": role, "max_retries": 0}
            for role in ("reasoning", "coding", "classifier")
        }
        config = parse_config(
            {
                "models": models,
                "retrieval": {"stages": []},
                "testing": {"test_command": f"sleep {test_seconds}"},
                "budget": {"max_tokens_per_run": 10_000_000},
            }
        )
        router = ModelRouter(config.models, factory=HTTPChatModel)
        with RunLog.open(f"sqlite:///{Path(tmp) / 'cra.db'}") as log:
            runtime = Runtime(
                log=log,
                models=router,
                environ=dict(os.environ),
                work_dir=Path(tmp) / "data",
                sandbox=build_sandbox("auto"),
            )
            try:
                return around(lambda: solve("Add nine functions", repo, config, runtime))
            finally:
                router.close()


# Primitives that only wait for the model server or a child: their time is not the harness's.
WAITS = ("recv", "poll", "select", "acquire", "waitpid", "sleep", "_wait", "wait", "communicate")


def profiled(call: Callable[[], OrchestratorResult]) -> OrchestratorResult:
    """Run `call` counting subprocesses by program and under cProfile; print both."""
    spawned: Counter[str] = Counter()
    spent: Counter[str] = Counter()
    original = subprocess.Popen.__init__

    def counting(self: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any) -> None:
        program = Path(str(args[0] if isinstance(args, (list, tuple)) else args).split()[0]).name
        started = time.perf_counter()
        original(self, args, *rest, **kw)
        self._cra_program = program  # type: ignore[attr-defined]
        self._cra_started = started  # type: ignore[attr-defined]
        spawned[program] += 1

    original_wait = subprocess.Popen.wait

    def waiting(self: subprocess.Popen[Any], timeout: float | None = None) -> int:
        code = original_wait(self, timeout)
        program = getattr(self, "_cra_program", None)
        if program is not None and not getattr(self, "_cra_counted", False):
            spent[program] += time.perf_counter() - self._cra_started  # type: ignore[attr-defined]
            self._cra_counted = True  # type: ignore[attr-defined]
        return code

    subprocess.Popen.__init__ = counting  # type: ignore[method-assign]
    subprocess.Popen.wait = waiting  # type: ignore[method-assign]
    profile = cProfile.Profile()
    try:
        result = profile.runcall(call)
    finally:
        subprocess.Popen.__init__ = original  # type: ignore[method-assign]
        subprocess.Popen.wait = original_wait  # type: ignore[method-assign]
    print("subprocesses started by the run (program: count, wall from start to exit):")
    for program, count in spawned.most_common():
        print(f"  {program:<12} {count:>4}  {spent[program] * 1000:>8.0f} ms")
    stats = pstats.Stats(profile)
    rows = [
        (tt, nc, f"{Path(file).name}:{line} {name}")
        for (file, line, name), (_, nc, tt, _, _) in stats.stats.items()  # type: ignore[attr-defined]
        if not any(word in name for word in WAITS)
    ]
    rows.sort(reverse=True)
    print("heaviest functions by own time, waits left out (ms, calls, function):")
    for own, calls, where in rows[:15]:
        print(f"  {own * 1000:>8.1f} {calls:>7}  {where}")
    return result


def bytecode_cache() -> tempfile.TemporaryDirectory[str]:
    """Compiled bytecode for cra's modules, as an installed cra has it (pip compiles at install):
    the modules a run imports on first use (the edit engine, the adjustment …) are then read,
    not compiled from source inside the measured run when PYTHONDONTWRITEBYTECODE is set, as
    it is in this development environment."""
    cache = tempfile.TemporaryDirectory(prefix="cra-pycache-")
    sys.pycache_prefix = cache.name
    sys.dont_write_bytecode = False
    compileall.compile_dir(str(ROOT / "agent"), quiet=1)
    return cache


def main() -> int:
    """Run and print the overhead share."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-delay", type=float, default=0.2)
    parser.add_argument("--test-seconds", type=float, default=0.5)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="print the subprocesses by program and the heaviest functions",
    )
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="compile the modules a run imports on first use from source, as "
        "with PYTHONDONTWRITEBYTECODE=1 and no cache (a checkout, not an install)",
    )
    args = parser.parse_args()
    cache = None if args.no_bytecode_cache else bytecode_cache()
    if args.profile:
        result = run(args.model_delay, args.test_seconds, profiled)
    else:
        result = run(args.model_delay, args.test_seconds)
    if result.status != "complete":
        print(f"run did not complete: {result.status} {result.error}", file=sys.stderr)
        return 1
    attempts = [a for outcome in result.steps for a in outcome.attempts]
    validations = [
        result.baseline,
        *(a.validation for a in attempts),
        *(a.original for a in attempts),
    ]
    test_ms = sum(v.duration_ms for v in validations if v is not None)
    model_ms = result.usage.latency_ms
    overhead = result.wall_ms - model_ms - test_ms
    share = overhead / result.wall_ms
    print(
        f"steps: {result.steps_completed} passed of {PARTS * STEPS}; "
        f"model calls: {result.usage.calls}; "
        f"test runs: {sum(v is not None for v in validations)}"
    )
    print(
        f"wall {result.wall_ms} ms = model calls {model_ms} ms + repository commands "
        f"{test_ms} ms + harness {overhead} ms"
    )
    print(
        f"harness / wall: {share:.1%}; harness / model calls: {overhead / model_ms:.2f}x; "
        f"harness / repository commands: {overhead / test_ms:.2f}x"
    )
    print(f"goal: harness <= 3% of wall — {'met' if share <= 0.03 else 'NOT met'}")
    if cache is not None:
        cache.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
