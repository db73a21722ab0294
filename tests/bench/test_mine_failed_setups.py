"""A setup step that failed while mining is remembered for the rest of the mine: the later
commits with the same dependency files are left out without running it again (however many
jobs), with its explanation and the commit that met it; a commit whose dependency files differ
runs its own; a resumed mine tries it again (a failure never outlives its mine)."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from agent.bench.keep_going import full_run
from agent.bench.mining.journal import Journal, Outcome, journal_path
from agent.bench.mining.mine import (
    SETUP_FAILED,
    MineOptions,
    failed_setups,
    mine,
    repo_name,
    settings,
)
from agent.bench.mining.setups import FailedSetup, SetupMemo, remembered
from agent.bench.trees import TestBed
from agent.config.files import TestingConfig
from agent.models import SetupFailure
from agent.sandbox.bwrap import build_sandbox
from tests.bench.history import commit
from tests.fakes.repos import TEST_COMMAND, init_repo
from tests.fakes.sandboxes import test_sandbox_kind

pytestmark = pytest.mark.usefixtures("isolated_git")

FAILING = "echo 'npm ERR! network: no route to registry.example' >&2; exit 1"
SOURCE = "def f():\n    return 0\n\n\ndef g():\n    return 0\n\n\ndef h():\n    return 0\n"


def fix(repo: Path, name: str, files: dict[str, str] | None = None) -> str:
    """A commit that makes `name`() return 1, with its test."""
    source = (repo / "pkg" / "m.py").read_text()
    fixed = source.replace(f"def {name}():\n    return 0", f"def {name}():\n    return 1")
    test = f"from pkg.m import {name}\n\n\ndef test_{name}():\n    assert {name}() == 1\n"
    return commit(
        repo,
        {"pkg/m.py": fixed, f"tests/test_{name}.py": test, **(files or {})},
        f"Fix {name}",
    )


@dataclass
class Fixes:
    repo: Path
    first: str  # its parent's dependency files are the initial ones
    second: str  # the same as the first's; it changes them
    third: str  # its parent's dependency files are the second's


@pytest.fixture(scope="module")
def fixes(tmp_path_factory: pytest.TempPathFactory) -> Fixes:
    repo = init_repo(tmp_path_factory.mktemp("failed-setups") / "repo")
    commit(
        repo,
        {
            "requirements.txt": "helper==1\n",
            "pkg/__init__.py": "",
            "pkg/m.py": SOURCE,
            "tests/__init__.py": "",
        },
        "Initial",
    )
    first = fix(repo, "f")
    second = fix(repo, "g", {"requirements.txt": "helper==2\n"})
    third = fix(repo, "h")
    return Fixes(repo, first, second, third)


def failing_bed(tmp: Path, command: str = FAILING) -> TestBed:
    testing = TestingConfig(
        test_command=TEST_COMMAND, timeout=120, setup_command=command, setup_network=False
    )
    sandbox = build_sandbox(test_sandbox_kind())
    return TestBed(testing, sandbox, dict(os.environ), tmp / "work")


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_failed_setup_is_not_run_again_for_the_same_dependency_files(
    fixes: Fixes, tmp_path: Path, jobs: int
) -> None:
    heard: list[str] = []
    journal = journal_path(tmp_path / "tasks.jsonl")

    mined = mine(
        fixes.repo,
        failing_bed(tmp_path),
        MineOptions(),
        jobs=jobs,
        journal=journal,
        notice=heard.append,
    )

    # the third's parent has the second's dependency files; the first and the second share theirs
    ran = sorted(said[:12] for said in heard)
    assert len(ran) == 2 and fixes.third[:12] in ran
    assert mined.skipped == {SETUP_FAILED: 3, "no parent": 1}
    lines = journal.read_text(encoding="utf-8").splitlines()[1:]
    outcomes = {o.commit: o for o in map(Outcome.model_validate_json, lines)}
    [repeated] = [o for o in outcomes.values() if o.same_setup_as]
    assert {repeated.commit, repeated.same_setup_as} == {fixes.first, fixes.second}
    assert repeated.detail == outcomes[repeated.same_setup_as].detail  # the same explanation
    assert repeated.detail.startswith(f"the setup step ({FAILING}) exited with status 1")
    [said] = failed_setups(mined)
    assert said.startswith("the setup step failed at 3 commit(s) (")
    assert "; it ran at 2 of them (" in said
    assert "the other 1 have the same dependency files and were left out without running" in said
    assert said.endswith("npm ERR! network: no route to registry.example")


def test_a_resumed_mine_runs_a_setup_its_journal_says_failed(fixes: Fixes, tmp_path: Path) -> None:
    test_bed = failing_bed(tmp_path, "true")
    newest = MineOptions(max_commits=1)  # the third alone
    journal = journal_path(tmp_path / "tasks.jsonl")
    told = replace(test_bed, testing=full_run(test_bed.testing).testing)  # as the mine records it
    book = Journal.open(journal, settings(fixes.repo, told, newest, repo_name(fixes.repo)))
    failure = SetupFailure(command="true", exit_code=1, tail="npm ERR! network")
    book.record(
        Outcome(commit=fixes.third, kind="skipped", reason=SETUP_FAILED, detail=failure.explained())
    )
    heard: list[str] = []

    mined = mine(fixes.repo, test_bed, newest, journal=journal, notice=heard.append)

    assert mined.resumed == 0 and len(heard) == 1
    assert mined.skipped == {} and [t.base_commit for t in mined.tasks] == [fixes.second]


def test_a_key_that_worked_is_not_taken_for_failing() -> None:
    failed = {"k": FailedSetup("c1", SetupFailure(command="npm install", exit_code=1))}
    assert remembered(failed, set(), "k") == failed["k"]
    assert remembered(failed, {"k"}, "k") is None
    assert remembered(failed, set(), "other") is None


def test_a_commit_waits_for_the_setup_of_its_key_in_progress_and_learns_how_it_went() -> None:
    memo = SetupMemo()
    failure = FailedSetup("c1", SetupFailure(command="npm install", exit_code=1))
    started, learned = threading.Event(), []

    def second() -> None:
        started.wait()
        with memo.turn("k") as earlier:
            learned.append(earlier)

    waiter = threading.Thread(target=second)
    waiter.start()
    with memo.turn("k") as earlier:
        assert earlier is None
        started.set()
        waiter.join(timeout=0.2)
        assert waiter.is_alive()  # it waits while the first sets the key up
        memo.failed("k", failure)
    waiter.join(timeout=5)
    assert learned == [failure]
    memo.worked("other")
    with memo.turn("other") as earlier:
        assert earlier is None
