"""The honest gate end to end through `cra solve` on doctests, which live in the source files:
a fix that adds an example passes, and a task that asks for a doctested change has it listed.
(The bypasses themselves, a rewritten expected value and package code patching pytest, are in
tests/hostile/test_tampered_tests.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.cli_runs import Solve, solve
from tests.e2e.test_honest_gate import script_plan
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.repos import (
    DEFAULT_CRA_TOML,
    MUL_BUG,
    MUL_FIX,
    OPS_PY,
    TEST_OPS_PY,
    git_in,
    make_python_project,
    write_files,
)
from tests.hostile.answers import FIX, edit

pytestmark = pytest.mark.usefixtures("isolated_git")

EXAMPLE = '    """Return a * b.\n\n    >>> mul(2, 3)\n    6\n    """'
OPS_WITH_DOCTEST = OPS_PY.format(body=MUL_BUG).replace('    """Return a * b."""', EXAMPLE)
DOCTEST = "calc/ops.py::calc.ops.mul"


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


def doctested_project(root: Path) -> Path:
    """The calc project whose mul is tested only by its doctest, which pytest runs."""
    repo = make_python_project(root, config=DEFAULT_CRA_TOML)
    write_files(
        repo,
        {
            "calc/ops.py": OPS_WITH_DOCTEST,
            "tests/test_ops.py": TEST_OPS_PY[: TEST_OPS_PY.index("\n\ndef test_mul")] + "\n",
            "pytest.ini": "[pytest]\naddopts = --doctest-modules\n",
        },
    )
    git_in(repo, "add", "--all")
    git_in(repo, "commit", "--quiet", "--no-verify", "-m", "mul's doctest")
    return repo


def first_attempt_error(run: Solve) -> tuple[str, list[str]]:
    """The refused first attempt of the run's implement pass: its error and its test runs."""
    first = run.implement_run().attempts[0]
    assert first.error_info is not None
    return first.error_info, [v.kind for v in first.validations]


def test_a_fix_that_adds_a_doctest_example_passes_without_refusal(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = doctested_project(tmp_path / "repo")
    script_plan(server, "Fix mul in calc/ops.py", ["calc/ops.py"])
    server.script(
        "implement",
        FIX
        + "\n"
        + edit(
            "calc/ops.py",
            "    >>> mul(2, 3)\n    6",
            "    >>> mul(2, 3)\n    6\n    >>> mul(4, 5)\n    20",
        ),
    )

    run = solve(tmp_path, server, f"{DOCTEST} fails: fix mul", repo, capsys)

    assert run.code == 0, run.out
    assert "status: complete" in run.out
    assert not any(r.stage == "implement_retry" for r in server.requests)
    assert "    >>> mul(4, 5)\n    20\n" in run.show("calc/ops.py")


def test_a_task_that_asks_to_change_doctested_behaviour_lists_its_doctest_change(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = doctested_project(tmp_path / "repo")
    script_plan(
        server,
        "Make add return a + b + 1, and update its doctest",
        ["calc/ops.py"],
        changes_tests=True,
    )
    server.script(
        "implement",
        edit("calc/ops.py", "    return a + b", "    return a + b + 1")
        + "\n"
        + edit("calc/ops.py", "    >>> add(2, 3)\n    5", "    >>> add(2, 3)\n    6"),
    )
    server.script("gate_test_change", "yes")
    repo_ops = OPS_WITH_DOCTEST.replace(
        '"""Return a + b."""', '"""Return a + b.\n\n    >>> add(2, 3)\n    5\n    """'
    )
    write_files(
        repo,
        {
            "calc/ops.py": repo_ops.replace(MUL_BUG, MUL_FIX),
            "tests/test_ops.py": "from calc import sub\n\n\ndef test_sub():\n"
            "    assert sub(5, 3) == 2\n",
        },
    )
    git_in(repo, "commit", "--quiet", "--no-verify", "-am", "add's doctest")

    run = solve(
        tmp_path,
        server,
        "add(a, b) must return a + b + 1 from now on; update its doctest to expect that",
        repo,
        capsys,
    )

    assert run.code == 0, run.out
    assert "status: complete" in run.out
    assert "Tests changed" in run.out and "calc/ops.py::calc.ops.add" in run.out
    assert [r.stage for r in server.requests].count("gate_test_change") == 1
    assert "    >>> add(2, 3)\n    6\n" in run.show("calc/ops.py")
