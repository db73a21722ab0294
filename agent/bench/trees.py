"""Checkouts for the bench: a detached worktree of any commit, set up (`prepared`: the setup
step on the commit as it is, before any change) and its tests run through the same sandbox,
setup step and test report as every cra run.

Each checkout is a folder `bench-*` of the work dir with an owner record beside it
(`bench-*.owner`: the process, its start, the host, the repository), and its environments are
named after it (`envs/bench-*-*`). A process killed mid-checkout leaves all three;
`remove_left` removes them once that process is gone. The work dir is shared by every mine and
bench of a data dir, which may run at once: a live process's checkouts, another host's, and any
folder without an owner record are never touched.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ValidationError

from agent.config.files import TestingConfig
from agent.errors import GitError, SetupError
from agent.gate.validation import run_validation
from agent.git import repo as git
from agent.git import worktrees
from agent.git.workspace import process_alive, process_start
from agent.models import TestOutcome, ValidationResult
from agent.run.environment import prepare_environment
from agent.sandbox.base import Sandbox
from agent.sandbox.envcache import EnvCache

_WORKTREES = threading.Lock()  # one `git worktree` change at a time in this process


class Owner(BaseModel):
    """Who made a checkout: a process of a host (its start, so that a later process given the
    same id does not pass for it), and the repository the checkout is a worktree of."""

    pid: int
    started: str | None
    host: str
    repo: str


@contextmanager
def checkout(repo: Path, commit: str, work_dir: Path) -> Iterator[Path]:
    """A detached worktree of `commit` under `work_dir`, with its owner record; both removed
    afterwards."""
    work_dir = work_dir.absolute()  # git runs in `repo`: a relative path would land there
    work_dir.mkdir(parents=True, exist_ok=True)
    # a unique name: git names the worktree's admin dir after it, and tasks run in parallel
    tree = Path(tempfile.mkdtemp(prefix="bench-", dir=work_dir))
    owner = Owner(
        pid=os.getpid(),
        started=process_start(os.getpid()),
        host=socket.gethostname(),
        repo=str(repo.absolute()),
    )
    _owner_file(tree).write_text(owner.model_dump_json(), encoding="utf-8")
    try:
        with _WORKTREES:
            git.run_git(["worktree", "add", "--quiet", "--detach", str(tree), commit], repo)
    except GitError:
        _remove(tree, owner, work_dir)
        raise
    try:
        yield tree
    finally:
        with _WORKTREES:
            worktrees.remove_worktree(repo, tree)
        _owner_file(tree).unlink(missing_ok=True)


def env_dir(work_dir: Path, tree: Path) -> Path:
    """A new environment folder for a test run in the checkout `tree`, named after it."""
    return work_dir / "envs" / f"{tree.name}-{uuid.uuid4().hex}"


def remove_left(work_dir: Path) -> list[Path]:
    """Remove the checkouts under `work_dir` whose process died on this host, with their
    environments and owner records; the checkouts removed."""
    work_dir = work_dir.absolute()  # git runs in the repository: a relative path would land there
    removed = []
    host = socket.gethostname()
    for record in sorted(work_dir.glob("bench-*.owner")):
        try:
            owner = Owner.model_validate_json(record.read_text(encoding="utf-8"))
        except (OSError, ValidationError):
            continue
        if not abandoned(owner, host, process_alive):
            continue
        tree = record.with_name(record.name.removesuffix(".owner"))
        _remove(tree, owner, work_dir)
        record.unlink(missing_ok=True)  # last: a removal cut short is done again next time
        removed.append(tree)
    return removed


def abandoned(owner: Owner, host: str, alive: Callable[[int, object], bool]) -> bool:
    """Whether a checkout's process is gone: it ran on this `host` and is not `alive`."""
    return owner.host == host and not alive(owner.pid, owner.started)


def _remove(tree: Path, owner: Owner, work_dir: Path) -> None:
    """The checkout `tree` and its environments, gone; git told (its worktree forgotten)."""
    for env in (work_dir / "envs").glob(f"{tree.name}-*"):
        shutil.rmtree(env, ignore_errors=True)
    try:
        with _WORKTREES:
            worktrees.remove_worktree(Path(owner.repo), tree)
    except GitError:  # not (or no longer) a worktree of its repository, or the repository gone
        shutil.rmtree(tree, ignore_errors=True)


def _owner_file(tree: Path) -> Path:
    return tree.with_name(tree.name + ".owner")


@dataclass(frozen=True)
class TestBed:
    """Where and how the repository's tests run."""

    __test__ = False

    testing: TestingConfig
    sandbox: Sandbox
    environ: Mapping[str, str]
    work_dir: Path
    cache: EnvCache | None = None


@dataclass(frozen=True)
class Prepared:
    """A checkout whose setup step has run (or was restored): its tests may run, any number of
    times, after any change to its files."""

    tree: Path
    bed: TestBed
    env: Path

    def run_tests(self) -> ValidationResult:
        """The test command in the checkout, in the bed's sandbox; no lint or type check."""
        bed = self.bed
        return run_validation(
            self.tree,
            bed.testing,
            environ=bed.environ,
            sandbox=bed.sandbox.with_env(self.env),
            extras=False,
        )


@contextmanager
def prepared(
    tree: Path, repo: Path, bed: TestBed, announce: Callable[[str], None] | None = None
) -> Iterator[Prepared]:
    """The repository's setup step in `tree` as it is — before any change is applied, so that
    the environment cache's key and its check of the worktree see the commit itself and its
    neighbours with the same dependency files share one entry — restored from the cache when
    it can be; `announce(command)` when the command itself runs. SetupError when it failed."""
    env = prepare_environment(
        tree,
        repo,
        bed.testing,
        sandbox=bed.sandbox,
        environ=bed.environ,
        env_dir=env_dir(bed.work_dir, tree),
        cache=bed.cache,
        announce=announce,
    )
    try:
        if env.report.failure is not None:
            raise SetupError(env.report.failure)
        yield Prepared(tree, bed, env.path)
    finally:
        env.close()


def outcomes(result: ValidationResult) -> dict[str, TestOutcome]:
    """Each test's outcome, as far as the runner named its tests."""
    return dict(result.report.outcomes)
