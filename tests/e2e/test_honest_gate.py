"""The honest gate end to end through `cra solve`: a model whose first answer weakens the tests
instead of fixing the code is rejected with a message it can act on, its retry fixes the code, and
the branch holds only the real fix. A task that asks to change tested behaviour still succeeds,
with its test change listed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.cli_runs import Solve, solve, write_config
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.repos import (
    DEFAULT_CRA_TOML,
    MUL_BUG,
    TEST_COMMAND,
    git_in,
    make_python_project,
    write_files,
)
from tests.hostile.answers import FIX, TEST_FILE, WEAKENINGS, edit

pytestmark = pytest.mark.usefixtures("isolated_git")

SUB_TEST = "    assert sub(5, 3) == 2"


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


def cra_solve(
    tmp: Path,
    server: ScriptedModelServer,
    task: str,
    *extra: str,
    bug: bool = True,
    testing: str = "",
    config: Path | None = None,
    capsys: pytest.CaptureFixture[str],
) -> Solve:
    repo = make_python_project(tmp / "repo", bug=bug, config=DEFAULT_CRA_TOML)
    return solve(tmp, server, task, repo, capsys, *extra, testing=testing, config=config)


def plan_step(description: str, files: list[str], *, changes_tests: bool = False) -> str:
    step = {
        "id": "s1",
        "description": description,
        "target_files": files,
        "target_symbols": [],
        "depends_on": [],
        "changes_existing_tests": changes_tests,
    }
    return json.dumps({"part_id": "p1", "task_summary": "t", "rationale": "r", "steps": [step]})


def script_plan(
    server: ScriptedModelServer, description: str, files: list[str], *, changes_tests: bool = False
) -> None:
    server.script(
        "meta_plan",
        json.dumps(
            {
                "task_summary": "t",
                "rationale": "r",
                "parts": [
                    {
                        "id": "p1",
                        "description": description,
                        "affected_files": files,
                        "depends_on": [],
                    }
                ],
            }
        ),
    )
    server.script("part_plan", plan_step(description, files, changes_tests=changes_tests))
    server.script(
        "adjustment", json.dumps({"revised_steps": [], "rationale": "done", "changes_made": []})
    )


def test_the_rejected_attempt_is_recorded_with_the_gate_verdict(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    script_plan(server, "Fix mul", ["calc/ops.py", TEST_FILE])
    server.script("implement", WEAKENINGS["conftest rewrites outcomes"][0])
    server.script("implement_retry", FIX)

    run = cra_solve(tmp_path, server, "Fix mul", capsys=capsys)

    first, second = run.implement_run().attempts
    assert first.error_info is not None and "original test files" in first.error_info
    assert [v.kind for v in first.validations] == ["attempt", "original"]
    assert first.validations[1].result.failing_tests == ["tests/test_ops.py::test_mul"]
    assert [v.kind for v in second.validations] == ["attempt"]


def test_a_task_that_asks_to_change_tested_behaviour_succeeds_with_its_test_change_listed(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    script_plan(
        server,
        "Make sub return b - a, and update its test",
        ["calc/ops.py", TEST_FILE],
        changes_tests=True,
    )
    server.script(
        "implement",
        edit("calc/ops.py", "    return a - b", "    return b - a")
        + "\n"
        + edit(TEST_FILE, SUB_TEST, "    assert sub(5, 3) == -2"),
    )
    server.script("gate_test_change", "yes")

    run = cra_solve(
        tmp_path,
        server,
        "sub(a, b) must return b - a from now on; update test_sub to expect that",
        bug=False,
        capsys=capsys,
    )

    assert run.code == 0, run.out
    assert "status: complete" in run.out
    assert "Tests changed" in run.out and "tests/test_ops.py::test_sub" in run.out
    assert run.changed_files() == ["calc/ops.py", TEST_FILE]
    [question] = [r for r in server.requests if r.stage == "gate_test_change"]
    assert "sub(a, b) must return b - a" in question.user_prompt


def test_a_declared_test_change_the_task_does_not_ask_for_is_rejected(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    script_plan(server, "Fix mul and its test", ["calc/ops.py", TEST_FILE], changes_tests=True)
    server.script(
        "implement", edit(TEST_FILE, "    assert mul(2, 3) == 6", "    assert mul(2, 3) == 7")
    )
    server.script("gate_test_change", "no")
    server.script("implement_retry", FIX)

    run = cra_solve(tmp_path, server, "mul(2, 3) returns 7; it must return 6", capsys=capsys)

    assert run.code == 0, run.out
    assert "status: complete" in run.out and "Tests changed" not in run.out
    assert run.changed_files() == ["calc/ops.py"]


SNAPSHOT = "tests/__snapshots__/test_banner.ambr"
SNAPSHOT_FILES = {
    "calc/banner.py": 'def banner():\n    return "calc 1"\n',
    "tests/test_banner.py": (
        "from pathlib import Path\n\n"
        "from calc.banner import banner\n\n\n"
        "def test_banner():\n"
        '    snapshot = Path(__file__).parent / "__snapshots__" / "test_banner.ambr"\n'
        "    assert banner() == snapshot.read_text().strip()\n"
    ),
    SNAPSHOT: "calc 1\n",
}


def test_a_declared_snapshot_change_the_task_asks_for_lets_its_test_files_tests_change(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The original test files, run over the new code, hold the old snapshot: the snapshot's
    test file's tests fail there, and are the declared change, not a weakened gate."""
    script_plan(
        server, "Make the banner say calc 2", ["calc/banner.py", SNAPSHOT], changes_tests=True
    )
    server.script(
        "implement",
        edit("calc/banner.py", '    return "calc 1"', '    return "calc 2"')
        + "\n"
        + edit(SNAPSHOT, "calc 1", "calc 2"),
    )
    server.script("gate_test_change", "yes")
    repo = make_python_project(tmp_path / "repo", bug=False, config=DEFAULT_CRA_TOML)
    write_files(repo, SNAPSHOT_FILES)
    git_in(repo, "add", "--all")
    git_in(repo, "commit", "--quiet", "-m", "banner")

    run = solve(tmp_path, server, "The banner must say calc 2; update its snapshot", repo, capsys)

    assert run.code == 0, run.out
    assert "status: complete" in run.out
    assert "Tests changed" in run.out and "tests/test_banner.py::test_banner" in run.out
    assert run.changed_files() == ["calc/banner.py", SNAPSHOT]
    [question] = [r for r in server.requests if r.stage == "gate_test_change"]
    assert "calc 2" in question.user_prompt


CLI_FILES = {
    "calc/cli.py": "def run(args):\n    return list(args)\n",
    "tests/test_cli.py": (
        "from calc.cli import run\n\n\n"
        "def test_one():\n    assert run(['a']) == ['a']\n\n\n"
        "def test_two():\n    assert run(['a', 'b']) == ['a', 'b']\n"
    ),
}
EXITS = "    if len(args) > 1:\n        import os\n\n        os._exit(2)\n    return list(args)"


@pytest.mark.parametrize("asks", [True, False])
def test_old_tests_that_stop_the_run_over_the_new_code_are_the_declared_change_s_failures(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str], asks: bool
) -> None:
    """The old test drives the new code into ending the process: the original run stops
    before pytest reports. Without the changed test file the rest runs to its end, so the stop
    is that file's: its tests are the declared change when the task asks for it, and a refusal
    that names the file when it does not."""
    script_plan(
        server, "Exit on extra arguments", ["calc/cli.py", "tests/test_cli.py"], changes_tests=True
    )
    server.script(
        "implement",
        edit("calc/cli.py", "    return list(args)", EXITS)
        + "\n"
        + edit("tests/test_cli.py", "run(['a', 'b']) == ['a', 'b']", "run(['b']) == ['b']"),
    )
    server.script("gate_test_change", "yes" if asks else "no")
    repo = make_python_project(tmp_path / "repo", bug=False, config=DEFAULT_CRA_TOML)
    write_files(repo, CLI_FILES)
    git_in(repo, "add", "--all")
    git_in(repo, "commit", "--quiet", "-m", "cli")

    run = solve(tmp_path, server, "run() must exit with status 2 on two arguments", repo, capsys)

    first = run.implement_run().attempts[0]
    assert [v.kind for v in first.validations][:3] == ["attempt", "original", "original"]
    if asks:
        assert run.code == 0, run.out
        assert "status: complete" in run.out
        assert "tests/test_cli.py::test_two" in run.out
        assert run.changed_files() == ["calc/cli.py", "tests/test_cli.py"]
    else:
        assert run.code != 0 and first.error_info is not None
        assert "old versions of tests/test_cli.py stopped the test run" in first.error_info
        assert "tests/test_cli.py::test_two" in first.error_info


def test_a_hanging_attempt_is_stopped_after_a_timeout_derived_from_the_baseline(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    script_plan(server, "Fix mul", ["calc/ops.py"])
    hang = edit("calc/ops.py", MUL_BUG.rstrip("\n"), "    while True:\n        pass")
    server.script("implement", hang)
    server.script("implement_retry", FIX)

    # the derived limit (the baseline's duration and 3 s) is outgrown, the run again under the
    # configured 8 s too: the code's own timeout, told to the model
    config = write_config(
        tmp_path, server, "timeout_factor = 1.0\ntimeout_margin = 3.0\n", timeout=8
    )
    run = cra_solve(tmp_path, server, "Fix mul", config=config, capsys=capsys)

    assert run.code == 0, run.out
    retry = next(r for r in server.requests if r.stage == "implement_retry")
    assert "timed out after 8 s" in retry.user_prompt


SLOW_TEST = "import time\n\n\ndef test_the_whole_suite_takes_a_while():\n    time.sleep(4)\n"


def test_a_fix_whose_suite_outgrows_a_limit_derived_from_a_fast_failing_baseline_passes(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    script_plan(server, "Fix mul", ["calc/ops.py"])
    server.script("implement", FIX)
    repo = make_python_project(tmp_path / "repo", config=None)
    (repo / "tests" / "test_slow.py").write_text(SLOW_TEST)  # after test_ops.py, which fails
    git_in(repo, "add", "--all")
    git_in(repo, "commit", "--quiet", "-m", "A slow test")
    config = write_config(
        tmp_path,
        server,
        "timeout_factor = 1.0\ntimeout_margin = 1.0\n",
        command=f"{TEST_COMMAND} -x",
    )  # the baseline stops at test_mul

    run = solve(tmp_path, server, "Fix mul", repo, capsys, config=config)

    assert run.code == 0, run.out
    assert "status: complete" in run.out and "re-run for time: 1 test run(s)" in run.out
    assert [r.stage for r in server.requests].count("implement_retry") == 0
    [attempt] = run.implement_run().attempts
    [validation] = attempt.validations
    assert validation.result.success and validation.result.rerun_for_time_s is not None


# --- `cra solve --plan` (the single pass) ----------------------------------------------------


def solve_with_plan(
    tmp: Path,
    server: ScriptedModelServer,
    task: str,
    test_role: str,
    *,
    bug: bool = True,
    capsys: pytest.CaptureFixture[str],
) -> Solve:
    plan = tmp / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "task_summary": task,
                "rationale": "r",
                "execution_order": ["calc/ops.py"],
                "affected_files": [
                    {"path": "calc/ops.py", "role": "modify", "changes": "the code"},
                    {"path": TEST_FILE, "role": test_role, "changes": "its tests"},
                ],
            }
        )
    )
    return cra_solve(tmp, server, task, "--plan", str(plan), bug=bug, capsys=capsys)


@pytest.mark.parametrize(
    "name",
    ["failing test deleted", "conftest skips", "new test patches the code", "cra.toml edited"],
)
def test_the_single_pass_rejects_weakened_tests_of_a_plan_that_reads_them(
    name: str, tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    weakening, reason, _ = WEAKENINGS[name]
    server.script("implement", weakening)
    server.script("implement_retry", FIX)

    run = solve_with_plan(tmp_path, server, "Fix the failing test_mul", "read", capsys=capsys)

    assert run.code == 0, run.out
    assert "status: complete" in run.out
    retry = next(r for r in server.requests if r.stage == "implement_retry")
    assert reason in retry.user_prompt
    assert run.changed_files() == ["calc/ops.py"]
    assert not [r for r in server.requests if r.stage == "gate_test_change"]


def test_the_single_pass_allows_a_test_change_its_plan_declares_and_the_task_asks_for(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.script(
        "implement",
        edit("calc/ops.py", "    return a - b", "    return b - a")
        + "\n"
        + edit(TEST_FILE, SUB_TEST, "    assert sub(5, 3) == -2"),
    )
    server.script("gate_test_change", "yes")

    run = solve_with_plan(
        tmp_path,
        server,
        "sub must return b - a; update test_sub",
        "modify",
        bug=False,
        capsys=capsys,
    )

    assert run.code == 0, run.out
    assert "Tests changed" in run.out and "tests/test_ops.py::test_sub" in run.out
