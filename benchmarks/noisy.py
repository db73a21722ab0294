"""Noisy model: the solve rate of small real bug fixes when the model makes the typical
small-model mistakes at a set rate, against the same fixes with a noise-free model.

The bug fixes: a function of a real standard-library module (colorsys, calendar, textwrap,
shlex, string, statistics) copied into a fresh repository with one operator or constant
mutated so that its test fails; the test compares the function with the original's outputs on
fixed inputs. The fix is the original line. A scripted model knows it and answers every pass
(meta-plan, part plan, implement, adjustment, and "yes" to every retrieval question); the
noisy one spoils each answer with probability RATE with a mistake drawn from:
  plans    fenced JSON, prose around JSON, trailing commas, a think block, prose only;
  edits    drifted indentation, tabs, trailing spaces, a missing line, `...` elisions,
           a wrong path, a think block, a fenced answer;
  yes/no   "Yes.", "yes, because …", a think block, a sentence without yes or no.
Every answer is drawn again on a re-ask or a retry. A run counts as solved when cra reports it
complete (the named test passes and the gate holds).

Run: .venv/bin/python benchmarks/noisy.py [--rate 0.3] [--seeds 2] [--tasks 14]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import signal
import sys
import sysconfig
import tempfile
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the scripted model server and repo builders live in tests/fakes

from agent.bench.oracle import noise  # noqa: E402
from agent.config.files import parse_config  # noqa: E402
from agent.llm.client import HTTPChatModel  # noqa: E402
from agent.llm.router import ModelRouter  # noqa: E402
from agent.run.orchestrator import solve  # noqa: E402
from agent.run.runtime import Runtime  # noqa: E402
from agent.run.sources import IndexedFactory  # noqa: E402
from agent.runlog.store import RunLog  # noqa: E402
from agent.sandbox.bwrap import build_sandbox  # noqa: E402
from tests.fakes.model_server import RecordedRequest, ScriptedModelServer  # noqa: E402
from tests.fakes.repos import ISOLATED_GIT_ENV, git_in, init_repo, write_files  # noqa: E402

GRID = [(r, g, b) for r in (0.0, 0.25, 0.9) for g in (0.1, 0.5) for b in (0.0, 0.7, 1.0)]
TEXTS = [
    "  hello\n    world\n",
    "\tone\n\ttwo",
    "a  b   c",
    "The quick brown fox jumps",
    "x = 'it''s'",
    'say "hi" now',
    "",
    "  lead and trail  ",
]
INPUTS: dict[str, dict[str, list[tuple[Any, ...]]]] = {
    "colorsys": {
        name: GRID
        for name in (
            "rgb_to_hsv",
            "hsv_to_rgb",
            "rgb_to_hls",
            "hls_to_rgb",
            "rgb_to_yiq",
            "yiq_to_rgb",
        )
    },
    "calendar": {
        "isleap": [(y,) for y in range(1890, 2110, 5)],
        "leapdays": [(a, b) for a in (1800, 1899, 1900, 1996) for b in (2000, 2024)],
    },
    "textwrap": {
        "dedent": [(t,) for t in TEXTS],
        "shorten": [(t, w) for t in TEXTS[3:] for w in (10, 15, 30)],
    },
    "shlex": {"quote": [(t,) for t in TEXTS], "split": [(t,) for t in TEXTS[2:6]]},
    "string": {"capwords": [(t,) for t in TEXTS]},
    "statistics": {
        name: [([3, 1, 2],), ([4, 1, 3, 2],), ([5.5, 2.5],), ([7],)]
        for name in ("median", "median_low", "median_high")
    },
}
MUTATIONS = [
    (" <= ", " < "),
    (" < ", " <= "),
    (" >= ", " > "),
    (" > ", " >= "),
    (" == ", " != "),
    (" != ", " == "),
    (" + ", " - "),
    (" - ", " + "),
    (" * ", " + "),
    (" // ", " / "),
    (" % ", " // "),
    ("1.0", "2.0"),
    (" 2", " 3"),
    (" and ", " or "),
    (" or ", " and "),
    ("[0]", "[1]"),
    ("[-1]", "[0]"),
]


@dataclass(frozen=True)
class Task:
    """One bug: the module's path in the repository, the function, the broken and fixed line."""

    module: str
    function: str
    source: str  # the original module text
    line: int  # 0-based index of the mutated line
    broken: str

    @property
    def path(self) -> str:
        return f"lib/{self.module}.py"

    @property
    def text(self) -> str:
        return (
            f"test_{self.function} fails: {self.function}() in {self.path} returns wrong "
            "results for some inputs. Fix the bug."
        )

    def lines(self, fixed: bool) -> list[str]:
        lines = self.source.split("\n")
        return lines if fixed else [*lines[: self.line], self.broken, *lines[self.line + 1 :]]


# --- the bug fixes -------------------------------------------------------------------------------


def outputs(namespace: dict[str, Any], function: str, cases: list[tuple[Any, ...]]) -> str:
    """The function's results on the cases as JSON (an exception is a result too)."""
    found = []
    for args in cases:
        try:
            found.append(json.loads(json.dumps(namespace[function](*args))))
        except Exception as exc:
            found.append(f"raised {type(exc).__name__}")
    return json.dumps(found)


def load(source: str, name: str) -> dict[str, Any]:
    """A module namespace executed from `source` (2 s at most)."""
    module = types.ModuleType(name)
    signal.alarm(2)
    try:
        exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    finally:
        signal.alarm(0)
    return module.__dict__


def make_tasks(rng: random.Random) -> Iterator[Task]:
    """One task per target function: the first mutation (in seeded order) its cases catch."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for module, functions in INPUTS.items():
        source = (stdlib / f"{module}.py").read_text("utf-8")
        tree = ast.parse(source)
        for function, cases in functions.items():
            node = next(
                n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function
            )
            task = _mutate(rng, module, function, source, node, cases)
            if task is not None:
                yield task


def _mutate(
    rng: random.Random,
    module: str,
    function: str,
    source: str,
    node: ast.FunctionDef,
    cases: list[tuple[Any, ...]],
) -> Task | None:
    """The first mutation of the function's body that changes its outputs."""
    lines = source.split("\n")
    expected = outputs(load(source, module), function, cases)
    body = [
        i
        for i in range(node.body[0].lineno - 1, node.end_lineno or 0)
        if lines[i].strip() and not lines[i].lstrip().startswith(("while", "for", "#", '"'))
    ]
    sites = [(i, a, b) for i in body for a, b in MUTATIONS if a in lines[i]]
    rng.shuffle(sites)
    for i, old, new in sites:
        broken = lines[i].replace(old, new, 1)
        mutated = "\n".join([*lines[:i], broken, *lines[i + 1 :]])
        try:
            if outputs(load(mutated, module), function, cases) != expected:
                return Task(module, function, source, i, broken)
        except Exception:
            continue
    return None


def make_repo(base: Path, task: Task) -> Path:
    """The repository: the broken module and its test, committed."""
    fixed_ns = load(task.source, task.module)
    cases = INPUTS[task.module][task.function]
    expected = [
        [list(args), out]
        for args, out in zip(
            cases, json.loads(outputs(fixed_ns, task.function, cases)), strict=True
        )
    ]
    test = (
        f"import json\n\nfrom lib.{task.module} import {task.function}\n\n"
        f"CASES = json.loads({json.dumps(json.dumps(expected))})\n\n\n"
        f"def test_{task.function}():\n    for args, expected in CASES:\n"
        f"        try:\n            got = json.loads(json.dumps({task.function}(*args)))\n"
        "        except Exception as exc:\n"
        "            got = f'raised {type(exc).__name__}'\n"
        "        assert got == expected, args\n"
    )
    repo = init_repo(base / "repo")
    write_files(
        repo,
        {
            "lib/__init__.py": "",
            task.path: "\n".join(task.lines(fixed=False)),
            "tests/__init__.py": "",
            f"tests/test_{task.module}.py": test,
            ".gitignore": "__pycache__/\n",
        },
    )
    git_in(repo, "add", "--all")
    git_in(repo, "commit", "--quiet", "--no-verify", "-m", f"Add {task.module}")
    return repo


# --- the scripted model, with or without noise ---------------------------------------------


class Model:
    """Answers every pass of one task; spoils each answer with probability `rate`."""

    def __init__(self, task: Task, rate: float, rng: random.Random) -> None:
        self.task, self.rate, self.rng = task, rate, rng
        self.spoiled = 0

    def __call__(self, request: RecordedRequest) -> str:
        stage = (request.stage or "").removesuffix("_reask")
        if stage.startswith("implement"):
            return self._maybe(self.edit(), EDIT_NOISE)
        plan = self.plan(stage)
        if plan is not None:
            return self._maybe(plan, JSON_NOISE)
        return self._maybe("yes", YES_NO_NOISE)

    def _maybe(self, answer: str, noise: list[Callable[[str, random.Random], str]]) -> str:
        if self.rng.random() >= self.rate:
            return answer
        self.spoiled += 1
        return self.rng.choice(noise)(answer, self.rng)

    def plan(self, stage: str) -> str | None:
        """The JSON answer of a planning stage, or None for a yes/no question."""
        step = {
            "id": "s1",
            "description": f"Fix {self.task.function} in {self.task.path}",
            "target_files": [self.task.path],
            "target_symbols": [self.task.function],
            "depends_on": [],
        }
        answers = {
            "meta_plan": {
                "task_summary": self.task.text,
                "rationale": "one bug",
                "parts": [
                    {
                        "id": "p1",
                        "description": self.task.text,
                        "affected_files": [self.task.path],
                        "depends_on": [],
                    }
                ],
            },
            "part_plan": {
                "part_id": "p1",
                "task_summary": "fix",
                "rationale": "r",
                "steps": [step],
            },
            "adjustment": {"revised_steps": [], "rationale": "done", "changes_made": []},
        }
        found = answers.get(stage)
        return None if found is None else json.dumps(found, indent=2)

    def edit(self) -> str:
        """The fix as an edit block: the broken line with three lines around it."""
        start, end = max(self.task.line - 3, 0), self.task.line + 4
        search = "\n".join(self.task.lines(fixed=False)[start:end])
        replacement = "\n".join(self.task.lines(fixed=True)[start:end])
        return (
            f'<edit file="{self.task.path}">\n<search>\n{search}\n</search>\n'
            f"<replacement>\n{replacement}\n</replacement>\n</edit>"
        )


EDIT_NOISE: list[Callable[[str, random.Random], str]] = list(noise.EDIT_NOISE.values())
JSON_NOISE: list[Callable[[str, random.Random], str]] = list(noise.JSON_NOISE.values())
YES_NO_NOISE: list[Callable[[str, random.Random], str]] = list(noise.YES_NO_NOISE.values())


# --- runs ----------------------------------------------------------------------------------------


def run(task: Task, rate: float, seed: int) -> tuple[bool, int, int]:
    """One solve: solved, the answers spoiled, the model calls made."""
    os.environ.update(ISOLATED_GIT_ENV)
    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer() as server:
        model = Model(task, rate, random.Random(f"{seed}:{task.module}:{task.function}"))
        server.respond_with(model)
        repo = make_repo(Path(tmp), task)
        models = {
            role: {"base_url": server.url, "model": role, "max_retries": 0}
            for role in ("reasoning", "coding", "classifier")
        }
        config = parse_config(
            {
                "models": models,
                "retrieval": {"stages": ["scope"], "max_classifier_calls": 6},
                "testing": {"test_command": f"{sys.executable} -m pytest -q -p no:cacheprovider"},
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
                result = solve(
                    task.text,
                    repo,
                    config,
                    runtime,
                    context_factory=IndexedFactory(Path(tmp) / "data", config.retrieval),
                )
            finally:
                router.close()
        return result.status == "complete", model.spoiled, len(server.requests)


def main(argv: list[str] | None = None) -> int:
    """Both models over every task and seed; the solve rates and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=0.3, help="share of answers spoiled")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=14)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    tasks = list(make_tasks(random.Random(12)))[: args.tasks]
    tally: dict[float, list[bool]] = {0.0: [], args.rate: []}
    spoiled = calls = 0
    for task in tasks:
        for seed in range(args.seeds):
            for rate in tally:
                solved, bad, made = run(task, rate, seed)
                tally[rate].append(solved)
                spoiled, calls = spoiled + bad * (rate > 0), calls + made * (rate > 0)
                if args.verbose:
                    print(
                        f"{task.module}.{task.function} seed {seed} rate {rate}: "
                        f"{'solved' if solved else 'NOT solved'} ({bad} spoiled)"
                    )
    clean, noisy = (sum(v) / len(v) for v in tally.values())
    print(
        f"{len(tasks)} bug fixes x {args.seeds} seeds; noisy model spoiled {spoiled} of "
        f"{calls} answers ({spoiled / max(calls, 1):.0%})"
    )
    print(f"solve rate, noise-free model: {clean:.1%}")
    print(f"solve rate, noisy model (rate {args.rate}): {noisy:.1%}")
    print(f"ratio noisy / noise-free: {noisy / clean if clean else 0:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
