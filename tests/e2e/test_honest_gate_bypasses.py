"""The honest gate end to end through `cra solve`, against the bypasses that edit no test file: a
doctest's expected output rewritten in the source file it lives in, and code of the package under
test that patches pytest. The scripted model tries the bypass first: the gate refuses it and
says why, and its retry's real fix lands alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.cli import main
from tests.e2e.cli_runs import Solve, write_config
from tests.e2e.test_honest_gate import create, edit, script_plan
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.repos import (
    DEFAULT_CRA_TOML,
    INIT_PY,
    MUL_BUG,
    MUL_FIX,
    OPS_PY,
    TEST_OPS_PY,
    git_in,
    make_python_project,
    write_files,
)

pytestmark = pytest.mark.usefixtures("isolated_git")

FIX = edit("calc/ops.py", MUL_BUG.rstrip("\n"), MUL_FIX.rstrip("\n"))
EXAMPLE = '    """Return a * b.\n\n    >>> mul(2, 3)\n    6\n    """'
OPS_WITH_DOCTEST = OPS_PY.format(body=MUL_BUG).replace('    """Return a * b."""', EXAMPLE)
DOCTEST = "calc/ops.py::calc.ops.mul"
PATCH_PYTEST = '''import _pytest.reports

_made = _pytest.reports.TestReport.from_item_and_call.__func__


@classmethod
def _passed(cls, item, call):
    report = _made(cls, item, call)
    report.outcome, report.longrepr = "passed", None
    return report


_pytest.reports.TestReport.from_item_and_call = _passed'''
ALL = '__all__ = ["add", "mul", "sub"]'

# name → the bypass answer (no test file changes), and what its refusal names
PYTEST_PATCHES: dict[str, tuple[str, str]] = {
    "the package's __init__.py patches pytest's reports": (
        edit("calc/__init__.py", ALL, f"{ALL}\n\n{PATCH_PYTEST}"),
        "calc/__init__.py now reaches into the test runner (`_pytest`, "),
    "a new module of the package patches them, imported by __init__.py": (
        create("calc/_speedups.py", PATCH_PYTEST) + "\n"
        + edit("calc/__init__.py", ALL, f"{ALL}\n\nfrom calc import _speedups  # noqa: F401"),
        "calc/_speedups.py now reaches into the test runner (`_pytest`, "),
}


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


def solve(tmp: Path, server: ScriptedModelServer, task: str, repo: Path,
          capsys: pytest.CaptureFixture[str]) -> Solve:
    data = tmp / "data"
    code = main(["--data-dir", str(data), "solve", task, "--repo", str(repo),
                 "--config", str(write_config(tmp, server))])
    return Solve(code, capsys.readouterr().out, repo, data)


def doctested_project(root: Path) -> Path:
    """The calc project whose mul is tested only by its doctest, which pytest runs."""
    repo = make_python_project(root, config=DEFAULT_CRA_TOML)
    write_files(repo, {
        "calc/ops.py": OPS_WITH_DOCTEST,
        "tests/test_ops.py": TEST_OPS_PY[:TEST_OPS_PY.index("\n\ndef test_mul")] + "\n",
        "pytest.ini": "[pytest]\naddopts = --doctest-modules\n",
    })
    git_in(repo, "add", "--all")
    git_in(repo, "commit", "--quiet", "--no-verify", "-m", "mul's doctest")
    return repo


def first_attempt_error(run: Solve) -> tuple[str, list[str]]:
    """The refused first attempt of the run's implement pass: its error and its test runs."""
    with run.log() as log:
        [orchestrated] = log.list_orchestrator_runs()
        detail = log.get_orchestrator_run(orchestrated.task_id)
        assert detail is not None
        implement = next(p for p in detail.passes if p.pass_type == "implement")
        task_run = log.get_task_run(implement.task_run_id)
    assert task_run is not None
    first = task_run.attempts[0]
    assert first.error_info is not None
    return first.error_info, [v.kind for v in first.validations]


def test_a_doctest_expected_value_rewritten_in_its_source_is_refused_and_the_fix_lands(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = doctested_project(tmp_path / "repo")
    script_plan(server, "Fix mul in calc/ops.py", ["calc/ops.py"])
    server.script("implement", edit("calc/ops.py", "    >>> mul(2, 3)\n    6",
                                    "    >>> mul(2, 3)\n    7"))
    server.script("implement_retry", FIX)

    run = solve(tmp_path, server, f"{DOCTEST} fails: fix mul", repo, capsys)

    assert run.code == 0, run.out
    assert "status: complete" in run.out
    error, runs = first_attempt_error(run)
    assert "calc/ops.py: doctest examples changed or removed (mul)" in error
    assert f"the step must make pass still fail: {DOCTEST}" in error
    assert runs == ["attempt", "original"]
    retry = next(r for r in server.requests if r.stage == "implement_retry")
    assert "doctest examples changed or removed" in retry.user_prompt
    assert run.changed_files() == ["calc/ops.py"]
    assert run.show("calc/ops.py") == OPS_WITH_DOCTEST.replace(MUL_BUG, MUL_FIX)
    assert "Tests changed" not in run.out


def test_a_fix_that_adds_a_doctest_example_passes_without_refusal(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = doctested_project(tmp_path / "repo")
    script_plan(server, "Fix mul in calc/ops.py", ["calc/ops.py"])
    server.script("implement", FIX + "\n" + edit("calc/ops.py", "    >>> mul(2, 3)\n    6",
                                                 "    >>> mul(2, 3)\n    6\n"
                                                 "    >>> mul(4, 5)\n    20"))

    run = solve(tmp_path, server, f"{DOCTEST} fails: fix mul", repo, capsys)

    assert run.code == 0, run.out
    assert "status: complete" in run.out
    assert not any(r.stage == "implement_retry" for r in server.requests)
    assert "    >>> mul(4, 5)\n    20\n" in run.show("calc/ops.py")


def test_a_task_that_asks_to_change_doctested_behaviour_lists_its_doctest_change(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = doctested_project(tmp_path / "repo")
    script_plan(server, "Make add return a + b + 1, and update its doctest", ["calc/ops.py"],
                changes_tests=True)
    server.script("implement", edit("calc/ops.py", "    return a + b", "    return a + b + 1")
                  + "\n" + edit("calc/ops.py", "    >>> add(2, 3)\n    5",
                                 "    >>> add(2, 3)\n    6"))
    server.script("gate_test_change", "yes")
    repo_ops = OPS_WITH_DOCTEST.replace('"""Return a + b."""', '"""Return a + b.\n\n'
                                        '    >>> add(2, 3)\n    5\n    """')
    write_files(repo, {"calc/ops.py": repo_ops.replace(MUL_BUG, MUL_FIX),
                       "tests/test_ops.py": "from calc import sub\n\n\ndef test_sub():\n"
                                            "    assert sub(5, 3) == 2\n"})
    git_in(repo, "commit", "--quiet", "--no-verify", "-am", "add's doctest")

    run = solve(tmp_path, server, "add(a, b) must return a + b + 1 from now on; update its "
                "doctest to expect that", repo, capsys)

    assert run.code == 0, run.out
    assert "status: complete" in run.out
    assert "Tests changed" in run.out and "calc/ops.py::calc.ops.add" in run.out
    assert [r.stage for r in server.requests].count("gate_test_change") == 1
    assert "    >>> add(2, 3)\n    6\n" in run.show("calc/ops.py")


@pytest.mark.parametrize("name", list(PYTEST_PATCHES))
def test_package_code_that_patches_pytest_is_refused_and_the_fix_lands(
    name: str, tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    bypass, reason = PYTEST_PATCHES[name]
    repo = make_python_project(tmp_path / "repo", config=DEFAULT_CRA_TOML)
    script_plan(server, "Fix mul in calc/ops.py", ["calc/ops.py"])
    server.script("implement", bypass)
    server.script("implement_retry", FIX)

    run = solve(tmp_path, server, "tests/test_ops.py::test_mul fails: fix mul", repo, capsys)

    assert run.code == 0, run.out
    assert "status: complete" in run.out
    error, runs = first_attempt_error(run)
    assert reason in error and "like a conftest.py" in error
    assert runs == ["attempt", "original"]
    retry = next(r for r in server.requests if r.stage == "implement_retry")
    assert reason in retry.user_prompt
    assert run.changed_files() == ["calc/ops.py"]
    assert run.show("calc/__init__.py") == INIT_PY
