"""Checkouts for the bench: a detached worktree of any commit, and the repository's tests run
in it through the same sandbox, setup step and test report as every cra run."""

from __future__ import annotations

import tempfile
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from agent.config.files import TestingConfig
from agent.errors import AgentError
from agent.gate.validation import run_validation
from agent.git import repo as git
from agent.git import worktrees
from agent.models import TestOutcome, ValidationResult
from agent.run.environment import prepare_environment
from agent.sandbox.base import Sandbox
from agent.sandbox.envcache import EnvCache

_WORKTREES = threading.Lock()  # one `git worktree` change at a time in this process


class SetupError(AgentError):
    """The repository's setup step failed: the commit cannot be tested here."""


@contextmanager
def checkout(repo: Path, commit: str, work_dir: Path) -> Iterator[Path]:
    """A detached worktree of `commit` under `work_dir`, removed afterwards."""
    work_dir = work_dir.absolute()  # git runs in `repo`: a relative path would land there
    work_dir.mkdir(parents=True, exist_ok=True)
    # a unique name: git names the worktree's admin dir after it, and tasks run in parallel
    tree = Path(tempfile.mkdtemp(prefix="bench-", dir=work_dir))
    with _WORKTREES:
        git.run_git(["worktree", "add", "--quiet", "--detach", str(tree), commit], repo)
    try:
        yield tree
    finally:
        with _WORKTREES:
            worktrees.remove_worktree(repo, tree)


def run_tests(
    tree: Path, repo: Path, testing: TestingConfig, *, sandbox: Sandbox,
    environ: Mapping[str, str], work_dir: Path, cache: EnvCache | None,
) -> ValidationResult:
    """The test command in `tree`, after the repository's setup step (restored from the cache
    when it can be), in the sandbox; no lint or type check."""
    env = prepare_environment(tree, repo, testing, sandbox=sandbox, environ=environ,
                              env_dir=work_dir / "envs" / uuid.uuid4().hex, cache=cache)
    try:
        if env.report.setup == "failed":
            output = env.setup.output[-2000:] if env.setup else ""
            raise SetupError(f"the setup step failed: {output}")
        return run_validation(tree, testing, environ=environ, sandbox=sandbox.with_env(env.path),
                              extras=False)
    finally:
        env.close()


def outcomes(result: ValidationResult) -> dict[str, TestOutcome]:
    """Each test's outcome, as far as the runner named its tests."""
    return dict(result.report.outcomes)
