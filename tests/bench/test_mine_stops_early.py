"""Mining a history whose test command stops at the first failure (`pytest -x`), and whose
new tests cannot even be collected before the fix: FAIL_TO_PASS holds exactly the tests that
failed, PASS_TO_PASS every test that passed; a fix that breaks a passing test is excluded by
name, with the reason."""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.bench.mining.mine import Mined, MineOptions, mine
from agent.bench.trees import TestBed
from agent.config.files import load_config
from agent.sandbox.bwrap import build_sandbox
from tests.bench.history import commit, replace
from tests.fakes.repos import ISOLATED_GIT_ENV, init_repo
from tests.fakes.sandboxes import test_sandbox_kind

STOPS_EARLY = f"{shlex.quote(sys.executable)} -m pytest -x -q -p no:cacheprovider"
SOURCE = """def double(x):
    return x * 3


def neg(x):
    return -x
"""
EARLY = "from pkg.m import neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n"
LATE = "from pkg.m import neg\n\n\ndef test_neg_zero():\n    assert neg(0) == 0\n"


@dataclass
class StoppingHistory:
    repo: Path
    fix_double: str  # its failing test stops the run before the others
    add_triple: str  # its new test file cannot be collected before the fix
    breaks_neg: str  # its fix breaks a test that passed


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> StoppingHistory:
    os.environ.update(ISOLATED_GIT_ENV)
    repo = init_repo(tmp_path_factory.mktemp("stops") / "repo")
    config = f"[testing]\ntest_command = {json.dumps(STOPS_EARLY)}\ntimeout = 120\n"
    commit(
        repo,
        {
            "cra.toml": config,
            "pkg/__init__.py": "",
            "pkg/m.py": SOURCE,
            "tests/__init__.py": "",
            "tests/test_early.py": EARLY,
            "tests/test_zlate.py": LATE,
        },
        "Initial",
    )
    fix_double = commit(
        repo,
        {
            "pkg/m.py": replace(repo, "pkg/m.py", "return x * 3", "return x * 2"),
            "tests/test_double.py": "from pkg.m import double\n\n\ndef test_double():\n"
            "    assert double(2) == 4\n\n\ndef test_double_zero():\n"
            "    assert double(0) == 0\n",
        },
        "Fix double",
    )
    add_triple = commit(
        repo,
        {
            "pkg/m.py": replace(
                repo, "pkg/m.py", "def neg(x):", "def triple(x):\n    return x * 3\n\n\ndef neg(x):"
            ),
            "tests/test_triple.py": "from pkg.m import triple\n\n\ndef test_triple():\n"
            "    assert triple(2) == 6\n",
        },
        "Add triple",
    )
    breaks_neg = commit(
        repo,
        {
            "pkg/m.py": replace(repo, "pkg/m.py", "return -x", "return abs(x) * -1 + 1"),
            "tests/test_neg_one.py": "from pkg.m import neg\n\n\ndef test_neg_one():\n"
            "    assert neg(1) == 0\n",
        },
        "Make neg(1) zero",
    )
    return StoppingHistory(repo, fix_double, add_triple, breaks_neg)


@pytest.fixture(scope="module")
def mined(history: StoppingHistory, tmp_path_factory: pytest.TempPathFactory) -> Mined:
    tmp = tmp_path_factory.mktemp("mine")
    config = load_config(history.repo)
    bed = TestBed(
        testing=config.testing,
        sandbox=build_sandbox(test_sandbox_kind()),
        environ=dict(os.environ),
        work_dir=tmp / "work",
    )
    return mine(history.repo, bed, MineOptions())


def task_of(mined: Mined, commit: str) -> tuple[list[str], list[str]]:
    [task] = [t for t in mined.tasks if t.instance_id.endswith(commit[:12])]
    return task.FAIL_TO_PASS, task.PASS_TO_PASS


def test_a_run_stopped_at_the_first_failure_gives_exactly_the_failing_tests(
    history: StoppingHistory, mined: Mined
) -> None:
    fail_to_pass, pass_to_pass = task_of(mined, history.fix_double)
    assert fail_to_pass == ["tests/test_double.py::test_double"]
    assert pass_to_pass == [
        "tests/test_double.py::test_double_zero",
        "tests/test_early.py::test_neg",
        "tests/test_zlate.py::test_neg_zero",
    ]


def test_tests_that_could_not_be_collected_are_failing_and_the_others_still_run(
    history: StoppingHistory, mined: Mined
) -> None:
    fail_to_pass, pass_to_pass = task_of(mined, history.add_triple)
    assert fail_to_pass == ["tests/test_triple.py::test_triple"]
    assert "tests/test_early.py::test_neg" in pass_to_pass
    assert "tests/test_double.py::test_double" in pass_to_pass


def test_a_fix_that_breaks_a_passing_test_is_excluded_with_the_reason(
    history: StoppingHistory, mined: Mined
) -> None:
    assert not [t for t in mined.tasks if t.instance_id.endswith(history.breaks_neg[:12])]
    [(commit, why, tests)] = mined.excluded
    assert commit == history.breaks_neg
    assert "the gate refuses a regression" in why
    assert "tests/test_early.py::test_neg" in tests


def test_mining_says_how_it_ran_the_tests(mined: Mined) -> None:
    assert any("--maxfail=0" in note and "-x " not in note for note in mined.notes)
