"""A fix that changes the setup's inputs (here requirements.txt) is tested after the fix in an
environment set up from its own dependency files, while mining — as the bench's score already
sets up on the run's last commit — so that mining and scoring agree on what the fix does.

The setup step copies requirements.txt into $CRA_ENV; the fix's test reads it there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.bench.mining.mine import MineOptions, mine
from agent.bench.run import Bench, prepare_clone, score, start_commit
from agent.bench.tasks import BenchTask
from agent.bench.trees import TestBed
from agent.config.files import SolveConfig, TestingConfig
from agent.runlog.store import RunLog
from agent.sandbox.bwrap import build_sandbox
from tests.bench.history import commit
from tests.fakes.repos import ISOLATED_GIT_ENV, TEST_COMMAND, init_repo
from tests.fakes.sandboxes import test_sandbox_kind

pytestmark = pytest.mark.usefixtures("isolated_git")

INSTALL = 'cp requirements.txt "$CRA_ENV/installed"'
TEST = """import os

from pkg.m import HELPER


def test_the_fix_uses_the_helper_it_installs():
    with open(os.path.join(os.environ["CRA_ENV"], "installed")) as installed:
        assert (installed.read(), HELPER) == ("helper==2\\n", "helper==2")
"""
FAILING_TO_PASSING = "tests/test_helper.py::test_the_fix_uses_the_helper_it_installs"


def bed_testing() -> TestingConfig:
    return TestingConfig(
        test_command=TEST_COMMAND, timeout=120, setup_command=INSTALL, setup_network=False
    )


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list[BenchTask], list[str]]:
    """A repository whose fix bumps its requirement; what mining it made and heard."""
    os.environ.update(ISOLATED_GIT_ENV)
    tmp = tmp_path_factory.mktemp("setup-inputs")
    repo = init_repo(tmp / "repo")
    commit(
        repo,
        {
            "requirements.txt": "helper==1\n",
            "pkg/__init__.py": "",
            "pkg/m.py": 'HELPER = "helper==1"\n',
            "tests/__init__.py": "",
            "tests/test_old.py": "def test_old():\n    assert True\n",
        },
        "Initial",
    )
    fix = commit(
        repo,
        {
            "requirements.txt": "helper==2\n",
            "pkg/m.py": 'HELPER = "helper==2"\n',
            "tests/test_helper.py": TEST,
        },
        "Use helper 2",
    )
    heard: list[str] = []
    bed = TestBed(bed_testing(), build_sandbox(test_sandbox_kind()), dict(os.environ), tmp / "work")
    found = mine(repo, bed, MineOptions(), notice=heard.append)
    return repo, fix, found.tasks, heard


def test_a_fix_that_changes_the_dependency_files_is_tested_in_its_own_environment(
    mined: tuple[Path, str, list[BenchTask], list[str]],
) -> None:
    _, fix, tasks, heard = mined
    [task] = tasks  # the parent's environment has helper 1: the fix's test would fail there
    assert task.instance_id.endswith(fix[:12])
    assert task.FAIL_TO_PASS == [FAILING_TO_PASSING]
    assert task.PASS_TO_PASS == ["tests/test_old.py::test_old"]
    assert [line.split(": ", 1)[1].split(" (")[0] for line in heard] == [
        "running the setup step",  # the parent's
        "running the setup step on the fix's dependency files",  # requirements.txt
    ]
    assert "(requirements.txt)" in heard[1]


def test_the_score_sets_up_the_run_s_last_commit_from_its_own_dependency_files(
    mined: tuple[Path, str, list[BenchTask], list[str]], tmp_path: Path
) -> None:
    repo, fix, tasks, _ = mined
    [task] = tasks
    with RunLog.open(f"sqlite:///{tmp_path / 'cra.db'}") as log:
        bench = Bench(
            repo=repo,
            config=SolveConfig(testing=bed_testing()),
            sandbox=build_sandbox(test_sandbox_kind()),
            environ=dict(os.environ),
            data_dir=tmp_path / "data",
            log=log,
        )
        prepare_clone(bench)
        start = start_commit(bench, task)

        fixed = score(bench, task, fix, start.commit, start.tests)  # the gold fix's tree
        untouched = score(bench, task, start.commit, start.commit, start.tests)

    assert fixed[FAILING_TO_PASSING] == "passed"
    assert untouched[FAILING_TO_PASSING] == "failed"
