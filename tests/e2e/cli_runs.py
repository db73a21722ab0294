"""`cra solve` run in-process by the end-to-end tests: its config on the scripted model server,
and what it left — exit code, output, the branch and the run log."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.cli.main import main
from agent.runlog.details import TaskRunDetail
from agent.runlog.store import RunLog
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.repos import TEST_COMMAND, git_in


@dataclass
class Solve:
    """One `cra solve` in-process: exit code, output, the repository and the run log."""

    code: int
    out: str
    repo: Path
    data: Path

    def branch(self) -> str:
        [name] = git_in(self.repo, "branch", "--list", "cra/*", "--format=%(refname:short)").split()
        return name

    def changed_files(self) -> list[str]:
        return git_in(self.repo, "diff", "--name-only", f"main...{self.branch()}").split()

    def commits(self) -> list[str]:
        return git_in(self.repo, "log", "--format=%s", f"main..{self.branch()}").splitlines()

    def show(self, path: str) -> str:
        return git_in(self.repo, "show", f"{self.branch()}:{path}")

    def log(self) -> RunLog:
        return RunLog.open(f"sqlite:///{self.data / 'cra.db'}")

    def implement_run(self) -> TaskRunDetail:
        """The task run of the (one) orchestrated run's first implement pass."""
        with self.log() as log:
            [orchestrated] = log.list_orchestrator_runs()
            detail = log.get_orchestrator_run(orchestrated.task_id)
            assert detail is not None
            implement = next(p for p in detail.passes if p.pass_type == "implement")
            task_run = log.get_task_run(implement.task_run_id)
        assert task_run is not None
        return task_run


def write_config(
    tmp: Path,
    server: ScriptedModelServer,
    testing: str = "",
    *,
    command: str = TEST_COMMAND,
    timeout: float = 120,
) -> Path:
    """A cra config with every role on `server` and no retrieval stages; `testing` is more of
    the [testing] section (or sections after it)."""
    config = tmp / "cra-config.toml"
    config.write_text(
        "".join(
            f'[models.{role}]\nbase_url = "{server.url}"\nmodel = "{role}-m"\nmax_retries = 0\n'
            for role in ("reasoning", "coding", "classifier")
        )
        + f"[testing]\ntest_command = {json.dumps(command)}\ntimeout = {timeout:g}\n{testing}"
        "[retrieval]\nstages = []\n"
    )
    return config


def solve(
    tmp: Path,
    server: ScriptedModelServer,
    task: str,
    repo: Path,
    capsys: pytest.CaptureFixture[str],
    *extra: str,
    testing: str = "",
    config: Path | None = None,
) -> Solve:
    """`cra solve TASK` on `repo` in-process, its run log under `tmp`, every model on `server`
    (or `config`)."""
    data = tmp / "data"
    config = config or write_config(tmp, server, testing)
    code = main(
        [
            "--data-dir",
            str(data),
            "solve",
            task,
            "--repo",
            str(repo),
            "--config",
            str(config),
            *extra,
        ]
    )
    return Solve(code, capsys.readouterr().out, repo, data)
