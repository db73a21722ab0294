"""The sequencer in-process: `solve` on a tiny real repository, its models scripted in-process
(tests/fakes/scripted_model.py), its commands run without a sandbox, its run log on SQLite."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent.config.files import SolveConfig, parse_config
from agent.llm.router import ModelRouter
from agent.models import ContextPackage, OrchestratorResult, RunEvent
from agent.run.orchestrator import solve
from agent.run.runtime import Runtime
from agent.run.sources import ContextSource, SeededFiles
from agent.runlog.details import OrchestratorRunDetail
from agent.runlog.store import RunLog
from agent.sandbox.bwrap import build_sandbox
from tests.fakes.repos import ISOLATED_GIT_ENV, git_in, init_repo, write_files
from tests.fakes.scripted_model import ScriptedModels

# unittest, not pytest: it starts in a fraction of the time and names each test it ran; -S: no
# site-packages to import, -B: no bytecode that could hide an edit of the same size
TEST_COMMAND = f"{shlex.quote(sys.executable)} -S -B -m unittest -v"
CALC = "def add(a, b):\n    return a + b\n"
TEST_CALC = """import unittest

from calc import add


class AddTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)
"""
TEST_ADD = "test_add (test_calc.AddTest.test_add)"


def tiny_repo(root: Path, files: dict[str, str] | None = None) -> Path:
    """A committed repository on main: `calc.py` and its unittest tests, all passing."""
    init_repo(root)
    write_files(
        root,
        {
            ".gitignore": "__pycache__/\n",
            "calc.py": CALC,
            "test_calc.py": TEST_CALC,
            **(files or {}),
        },
    )
    git_in(root, "add", "--all")
    git_in(root, "commit", "--quiet", "-m", "Initial")
    return root


class RecordedFiles(SeededFiles):
    """The plain context source (cra's own), keeping the task of every gather in `tasks`."""

    def __init__(self, root: Path, tasks: list[str]) -> None:
        super().__init__(root)
        self.tasks = tasks

    def gather(self, task: str, **asked: Any) -> ContextPackage:
        """SeededFiles.gather, the task kept first."""
        self.tasks.append(task)
        return super().gather(task, **asked)


class Sequencer:
    """One `solve` on a tiny repository: the scripted models, the run log, what the observer saw."""

    def __init__(self, tmp: Path, log_template: Path) -> None:
        self.repo = tiny_repo(tmp / "repo")
        self.models = ScriptedModels()
        shutil.copy(log_template, tmp / "cra.db")
        self.log = RunLog.open(f"sqlite:///{tmp / 'cra.db'}")
        self.work_dir = tmp / "data"
        self.events: list[RunEvent] = []
        self.cancel_when: Callable[[list[RunEvent]], bool] = lambda events: False
        self.gathered: list[str] = []  # the task each pass's context was gathered for

    def config(self, **sections: dict[str, Any]) -> SolveConfig:
        """The run's config: every role scripted, the unittest command, no retrieval stages
        (no classifier calls), no reproduction pass (the tests of other passes script none;
        tests/run/test_sequencer_reproduction.py turns it on), `sections` over it."""
        data: dict[str, Any] = {
            "models": {
                role: {"base_url": "http://scripted.invalid", "model": f"{role}-model"}
                for role in ("reasoning", "coding", "classifier")
            },
            "testing": {"test_command": TEST_COMMAND, "timeout": 60},
            "retrieval": {"stages": []},
            "orchestrator": {"reproduce": False},
        }
        for name, values in sections.items():
            data[name] = {**data.get(name, {}), **values}
        return parse_config(data)

    def on_event(self, event: RunEvent) -> None:
        """The run's observer."""
        self.events.append(event)

    def solve(self, task: str, **sections: dict[str, Any]) -> OrchestratorResult:
        """`solve(task)` on the repository, as the CLI and the bot call it."""
        config = self.config(**sections)
        router = ModelRouter(config.models, factory=self.models.chat_model)
        runtime = Runtime(
            log=self.log,
            models=router,
            environ=dict(os.environ),
            work_dir=self.work_dir,
            sandbox=build_sandbox("none"),
            observer=self,
            should_cancel=lambda: self.cancel_when(self.events),
            clock=lambda: 0.0,
        )
        try:
            return solve(task, self.repo, config, runtime, context_factory=self.context)
        finally:
            router.close()

    def context(self, worktree: Path) -> ContextSource:
        """The plain context source, each gather's task kept in `gathered`."""
        return RecordedFiles(worktree, self.gathered)

    def commit_files(self, files: dict[str, str], message: str = "More files") -> None:
        """`files` written and committed on main, before the run."""
        write_files(self.repo, files)
        git_in(self.repo, "add", "--all")
        git_in(self.repo, "commit", "--quiet", "-m", message)

    def commits(self, branch: str) -> list[str]:
        """The subjects of the commits `branch` holds beyond main, newest first."""
        return git_in(self.repo, "log", "--format=%s", f"main..{branch}").splitlines()

    def show(self, branch: str, path: str) -> str:
        """A file as `branch` holds it."""
        return git_in(self.repo, "show", f"{branch}:{path}")

    def recorded(self, result: OrchestratorResult) -> OrchestratorRunDetail:
        """The run as the run log holds it."""
        run = self.log.get_orchestrator_run(result.task_id)
        assert run is not None
        return run

    def state(self, result: OrchestratorResult, key: str) -> Any:
        """A piece of the run's session state, as the run log holds it (None if absent)."""
        return self.log.get_state(result.task_id, key)

    def state_keys(self, result: OrchestratorResult) -> set[str]:
        """The keys of the run's session state."""
        return set(self.log.state_keys(result.task_id))


@dataclass(frozen=True)
class Solved:
    """A run done once for the tests of a module that read it: the harness and the result."""

    run: Sequencer
    result: OrchestratorResult


@pytest.fixture(scope="session")
def log_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run log migrated once, copied by each test (migrating takes longer than a run)."""
    path = tmp_path_factory.mktemp("runlog") / "cra.db"
    RunLog.open(f"sqlite:///{path}").close()
    return path


@contextmanager
def sequencer_in(tmp: Path, log_template: Path) -> Iterator[Sequencer]:
    """A Sequencer in `tmp`, git isolated from the user's config while it lives."""
    with pytest.MonkeyPatch.context() as patch:
        for key, value in ISOLATED_GIT_ENV.items():
            patch.setenv(key, value)
        harness = Sequencer(tmp, log_template)
        try:
            yield harness
        finally:
            harness.log.close()


@pytest.fixture
def sequencer(tmp_path: Path, log_template: Path) -> Iterator[Sequencer]:
    """A tiny repository and everything a `solve` on it is given."""
    with sequencer_in(tmp_path, log_template) as harness:
        yield harness


@pytest.fixture(scope="module")
def module_sequencer(
    tmp_path_factory: pytest.TempPathFactory, log_template: Path
) -> Iterator[Sequencer]:
    """One Sequencer for a module whose tests read one run (a run takes a second or two)."""
    with sequencer_in(tmp_path_factory.mktemp("run"), log_template) as harness:
        yield harness
