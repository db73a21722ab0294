"""The setup step while mining: a failed one is explained (its command, how it ended, its
output's last lines) in the journal and the summary; the commits of a history with the same
dependency files share one cached environment, and a setup that runs is announced."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from agent.bench.mining.journal import Outcome, journal_path
from agent.bench.mining.mine import SETUP_FAILED, MineOptions, failed_setups, mine
from agent.bench.trees import TestBed
from agent.sandbox.bwrap import BwrapSandbox
from agent.sandbox.envcache import EnvCache
from tests.bench.history import History, bed
from tests.fakes.package_index import PackageIndex, build_wheel

pytestmark = pytest.mark.usefixtures("isolated_git")

FAILING = "echo 'added 3 packages'; echo 'npm ERR! git dep: no route to git.example' >&2; exit 128"


def with_setup(test_bed: TestBed, command: str, **testing: object) -> TestBed:
    update = {"setup_command": command, **testing}
    return replace(test_bed, testing=test_bed.testing.model_copy(update=update))


def test_a_failed_setup_is_explained_in_the_journal(history: History, tmp_path: Path) -> None:
    journal = journal_path(tmp_path / "tasks.jsonl")
    test_bed = with_setup(bed(history.repo, tmp_path), FAILING)
    mine(history.repo, test_bed, MineOptions(), journal=journal)

    lines = journal.read_text(encoding="utf-8").splitlines()[1:]  # after the settings
    failed = [o for o in map(Outcome.model_validate_json, lines) if o.reason == SETUP_FAILED]
    assert failed and all(o.kind == "skipped" for o in failed)
    detail = failed[0].detail
    assert detail.startswith(f"the setup step ({FAILING}) exited with status 128")
    assert "    added 3 packages\n    npm ERR! git dep: no route to git.example" in detail


def test_the_summary_says_once_what_the_failed_setups_said(
    history: History, tmp_path: Path
) -> None:
    mined = mine(history.repo, with_setup(bed(history.repo, tmp_path), FAILING), MineOptions())
    [said] = failed_setups(mined)
    count = mined.skipped[SETUP_FAILED]
    assert said.startswith(f"the setup step failed at {count} commit(s) (")
    assert "exited with status 128; its output ended:\n    added 3 packages\n" in said


@pytest.fixture
def index(tmp_path: Path) -> Iterator[PackageIndex]:
    """A package index counting its downloads: each is one run of the setup command."""
    (tmp_path / "wheels").mkdir()
    build_wheel(tmp_path / "wheels", "helperpkg", "1.0", {"helperpkg/__init__.py": "VALUE = 1\n"})
    with PackageIndex(tmp_path / "wheels") as served:
        yield served


def cached_bed(
    history: History, tmp_path: Path, index: PackageIndex, bwrap: Callable[..., BwrapSandbox]
) -> TestBed:
    """The history's bed with a setup that installs from `index`, in bwrap, with a cache."""
    install = (
        f"{shlex.quote(sys.executable)} -m pip install --quiet --disable-pip-version-check "
        f'--no-input {index.pip_args} --target "$CRA_ENV/site" helperpkg'
    )
    test_bed = replace(
        bed(history.repo, tmp_path),
        sandbox=bwrap(allow_addresses=index.allowed),
        environ=dict(os.environ),
        cache=EnvCache(tmp_path / "envcache", max_bytes=1 << 30),
    )
    return with_setup(test_bed, install)


def test_commits_with_the_same_dependency_files_share_one_setup(
    history: History, tmp_path: Path, index: PackageIndex, bwrap: Callable[..., BwrapSandbox]
) -> None:
    mined = mine(history.repo, cached_bed(history, tmp_path, index, bwrap), MineOptions())
    assert len(mined.tasks) == 3  # the same tasks as without a setup step
    assert index.downloads == ["helperpkg-1.0-py3-none-any.whl"]  # the setup ran once


def test_a_setup_that_runs_while_mining_is_announced_and_a_restored_one_is_not(
    history: History, tmp_path: Path, index: PackageIndex, bwrap: Callable[..., BwrapSandbox]
) -> None:
    heard: list[str] = []
    test_bed = cached_bed(history, tmp_path, index, bwrap)
    mine(history.repo, test_bed, MineOptions(), notice=heard.append)
    [said] = heard
    commit, _, rest = said.partition(": ")
    assert len(commit) == 12 and rest.startswith("running the setup step (")
    assert "pip install" in rest
