"""Judgment cache: the model calls of a four-pass solve (meta-plan, part plan, implement,
adjustment) with retrieval's yes/no stages on, without and with the run's judgment cache.

A scripted model answers every pass (and "yes" to every yes/no question) on a calc project
with a few real standard-library modules beside it; the same run is made twice in this process,
`orchestrator.cache_judgments = false` then `true`, and the calls are counted by stage.

Run: .venv/bin/python benchmarks/judgments.py [--modules 6]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import sysconfig
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the scripted model server and repo builders live in tests/fakes

from agent.config.files import parse_config  # noqa: E402
from agent.llm.client import HTTPChatModel  # noqa: E402
from agent.llm.router import ModelRouter  # noqa: E402
from agent.run.orchestrator import solve  # noqa: E402
from agent.run.runtime import Runtime  # noqa: E402
from agent.run.sources import IndexedFactory  # noqa: E402
from agent.runlog.store import RunLog  # noqa: E402
from agent.sandbox.bwrap import build_sandbox  # noqa: E402
from tests.fakes.model_server import RecordedRequest, ScriptedModelServer  # noqa: E402
from tests.fakes.repos import ISOLATED_GIT_ENV, MUL_FIX, git_in, make_python_project  # noqa: E402

TASK = "Add power(a, b) to calc/ops.py: it returns a ** b for integers"
MODULES = (
    "colorsys.py",
    "bisect.py",
    "fnmatch.py",
    "glob.py",
    "shlex.py",
    "textwrap.py",
    "heapq.py",
    "keyword.py",
)
ANCHOR = '    """Return a * b."""\n' + MUL_FIX
POWER = 'def power(a: int, b: int) -> int:\n    """Return a ** b."""\n    return a ** b\n'
STEP = {
    "id": "s1",
    "description": "Add power to calc/ops.py",
    "target_files": ["calc/ops.py"],
    "target_symbols": ["power"],
    "depends_on": [],
}
ANSWERS = {
    "meta_plan": json.dumps(
        {
            "task_summary": "add power",
            "rationale": "one function",
            "parts": [
                {
                    "id": "p1",
                    "description": TASK,
                    "affected_files": ["calc/ops.py"],
                    "depends_on": [],
                }
            ],
        }
    ),
    "part_plan": json.dumps(
        {"part_id": "p1", "task_summary": "add power", "rationale": "r", "steps": [STEP]}
    ),
    "implement": (
        f'<edit file="calc/ops.py">\n<search>\n{ANCHOR.rstrip()}\n</search>\n'
        f"<replacement>\n{ANCHOR.rstrip()}\n\n\n{POWER.rstrip()}\n</replacement>\n"
        "</edit>"
    ),
    "adjustment": json.dumps({"revised_steps": [], "rationale": "done", "changes_made": []}),
}


def answer(request: RecordedRequest) -> str:
    """The scripted model: each pass's answer, and yes to every yes/no question."""
    return ANSWERS.get(request.stage or "", "yes")


def project(base: Path, modules: int) -> Path:
    """The calc project with `modules` standard-library modules committed under calc/lib/."""
    repo = make_python_project(base / "repo", bug=False, config=None)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    (repo / "calc" / "lib").mkdir()
    for name in MODULES[:modules]:
        shutil.copy(stdlib / name, repo / "calc" / "lib" / name)
    git_in(repo, "add", "--all")
    git_in(repo, "commit", "--quiet", "--no-verify", "-m", "Vendor a few helpers")
    return repo


def run(cache: bool, modules: int) -> tuple[str, Counter[str]]:
    """One solve; its status and the model calls by stage."""
    os.environ.update(ISOLATED_GIT_ENV)
    with tempfile.TemporaryDirectory() as tmp, ScriptedModelServer() as server:
        server.respond_with(answer)
        repo = project(Path(tmp), modules)
        models = {
            role: {"base_url": server.url, "model": role, "max_retries": 0}
            for role in ("reasoning", "coding", "classifier")
        }
        config = parse_config(
            {
                "models": models,
                "retrieval": {"stages": ["scope", "precision"]},
                "orchestrator": {"cache_judgments": cache},
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
                    TASK,
                    repo,
                    config,
                    runtime,
                    context_factory=IndexedFactory(Path(tmp) / "data", config.retrieval),
                )
            finally:
                router.close()
        return result.status, Counter(r.stage or "" for r in server.requests)


def main(argv: list[str] | None = None) -> int:
    """Both runs, the calls by stage side by side, and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", type=int, default=6, choices=range(len(MODULES) + 1))
    args = parser.parse_args(argv)
    (before_status, before), (after_status, after) = (
        run(False, args.modules),
        run(True, args.modules),
    )
    print(
        f"four-pass solve, {args.modules} stdlib modules beside the code; "
        f"status without cache: {before_status}, with: {after_status}"
    )
    print(f"{'stage':<26}{'no cache':>10}{'cache':>8}")
    for stage in sorted(set(before) | set(after)):
        print(f"{stage:<26}{before[stage]:>10}{after[stage]:>8}")
    total_before, total_after = sum(before.values()), sum(after.values())
    yes_no = [s for s in set(before) | set(after) if s.startswith("retrieval_")]
    print(f"{'total':<26}{total_before:>10}{total_after:>8}")
    print(
        f"yes/no questions: {sum(before[s] for s in yes_no)} -> "
        f"{sum(after[s] for s in yes_no)}; calls with cache / without: "
        f"{total_after / total_before:.2f}"
    )
    return 0 if before_status == after_status == "complete" else 1


if __name__ == "__main__":
    sys.exit(main())
