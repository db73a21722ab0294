"""`cra solve --plan` end to end: the CLI, the scripted model server over real HTTP, a real repo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from agent.cli.main import main
from agent.runlog.store import RunLog
from tests.fakes.model_server import ScriptedModelServer, garbage
from tests.fakes.repos import (
    FAILING_TEST,
    ISOLATED_GIT_ENV,
    MUL_BUG,
    MUL_FIX,
    TEST_COMMAND,
    git_in,
    make_python_project,
)
from tests.fakes.sandboxes import test_sandbox_kind

WRONG = MUL_BUG.replace("+ 1", "+ 2")


def edit(search: str, replacement: str, path: str = "calc/ops.py") -> str:
    return (
        f'<edit file="{path}">\n<search>\n{search.rstrip()}\n</search>\n'
        f"<replacement>\n{replacement.rstrip()}\n</replacement>\n</edit>"
    )


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    for key, value in ISOLATED_GIT_ENV.items():
        monkeypatch.setenv(key, value)
    repo = make_python_project(tmp_path / "repo", config=None)
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "task_summary": "Fix mul",
                "affected_files": [{"path": "calc/ops.py", "role": "modify", "changes": "fix mul"}],
                "execution_order": ["calc/ops.py"],
                "rationale": "mul adds one too many",
            }
        )
    )
    return {"repo": repo, "plan": plan, "data": tmp_path / "data", "config": tmp_path / "cra.toml"}


def write_config(
    ws: dict[str, Path], url: str, *, stages: Sequence[str] = (), **testing: object
) -> None:
    extra = "".join(f"{k} = {json.dumps(v)}\n" for k, v in testing.items())
    ws["config"].write_text(
        f'[models.coding]\nbase_url = "{url}"\nmodel = "scripted-model"\nmax_retries = 0\n'
        f'[models.classifier]\nbase_url = "{url}"\nmodel = "scripted-model"\n'
        f"max_retries = 0\n[retrieval]\nstages = {json.dumps(stages)}\n"
        f"[testing]\ntest_command = {json.dumps(TEST_COMMAND)}\n{extra}"
    )


def cra(ws: dict[str, Path], *args: str) -> int:
    env = {**os.environ, **ISOLATED_GIT_ENV}
    return main(
        [
            "--data-dir",
            str(ws["data"]),
            *args,
            "--repo",
            str(ws["repo"]),
            "--plan",
            str(ws["plan"]),
            "--config",
            str(ws["config"]),
        ],
        environ=env,
    )


def solve(ws: dict[str, Path], *extra: str) -> int:
    return cra(ws, "solve", "Fix the failing test_mul", *extra)


def open_log(ws: dict[str, Path]) -> RunLog:
    return RunLog.open(f"sqlite:///{ws['data'] / 'cra.db'}")


def test_second_attempt_fixes_the_failing_test(
    workspace: dict[str, Path], server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(workspace, server.url)
    server.script("implement", edit(MUL_BUG, WRONG))
    server.script("implement_retry", edit(MUL_BUG, MUL_FIX))
    head_before = git_in(workspace["repo"], "rev-parse", "HEAD")

    assert solve(workspace, "--json") == 0

    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "complete"
    branch = result["branch"]
    assert branch.startswith("cra/fix-mul")
    diff = git_in(workspace["repo"], "diff", f"main..{branch}")
    assert "-    return a * b + 1\n+    return a * b\n" in diff
    assert diff == result["diff"]
    assert [a["attempt"] for a in result["attempts"]] == [1, 2]
    assert result["attempts"][0]["validation"]["failing_tests"] == [FAILING_TEST]
    assert result["attempts"][1]["validation"]["success"] is True
    # The user's checkout is untouched: same HEAD, clean tree, still on main.
    assert git_in(workspace["repo"], "rev-parse", "HEAD") == head_before
    assert git_in(workspace["repo"], "status", "--porcelain") == ""
    assert git_in(workspace["repo"], "branch", "--show-current").strip() == "main"
    # The retry prompt carried the failure.
    retry = next(r for r in server.requests if r.stage == "implement_retry")
    assert FAILING_TEST in retry.user_prompt
    assert retry.body["options"]["num_ctx"] == 16384


def test_every_attempt_validation_and_call_is_recorded(
    workspace: dict[str, Path], server: ScriptedModelServer
) -> None:
    write_config(workspace, server.url)
    server.script("implement", edit(MUL_BUG, WRONG))
    server.script("implement_retry", edit(MUL_BUG, MUL_FIX))
    assert solve(workspace) == 0

    with open_log(workspace) as log:
        [summary] = log.list_task_runs()
        run = log.get_task_run(summary.id)
    assert run is not None
    assert run.status == "complete"
    assert [a.attempt for a in run.attempts] == [1, 2]
    assert [v.result.success for a in run.attempts for v in a.validations] == [False, True]
    assert [v.kind for v in run.baseline] == ["baseline"]
    assert run.baseline[0].result.failing_tests == [FAILING_TEST]
    assert [c.record.stage for c in run.llm_calls] == ["implement", "implement_retry"]
    assert [c.record.user_prompt for c in run.llm_calls] == [
        r.user_prompt for r in server.chat_requests
    ]
    assert all(c.record.response for c in run.llm_calls)


def test_no_passing_attempt_fails_and_leaves_no_branch(
    workspace: dict[str, Path], server: ScriptedModelServer
) -> None:
    write_config(workspace, server.url)
    server.script("implement", edit(MUL_BUG, WRONG))
    server.script("implement_retry", garbage())
    branches_before = git_in(workspace["repo"], "branch", "--list")

    assert solve(workspace) == 1

    assert git_in(workspace["repo"], "branch", "--list") == branches_before
    with open_log(workspace) as log:
        [summary] = log.list_task_runs()
        run = log.get_task_run(summary.id)
    assert run is not None and run.status == "failed"
    assert len(run.attempts) == 2
    assert run.llm_calls[-1].record.error is not None


def test_unparseable_answer_is_retried_with_the_parse_error(
    workspace: dict[str, Path], server: ScriptedModelServer
) -> None:
    write_config(workspace, server.url)
    server.script("implement", "I would change mul to multiply correctly.")
    server.script("implement_retry", edit(MUL_BUG, MUL_FIX))

    assert solve(workspace) == 0

    retry = next(r for r in server.requests if r.stage == "implement_retry")
    assert "could not be used" in retry.user_prompt


def test_edit_into_workflows_is_rejected_and_nothing_is_written(
    workspace: dict[str, Path], server: ScriptedModelServer
) -> None:
    write_config(workspace, server.url)
    evil = edit("", "on: push\n", path=".github/workflows/x.yml")
    server.script("implement", evil)
    server.script("implement_retry", evil)

    assert solve(workspace) == 1

    with open_log(workspace) as log:
        [summary] = log.list_task_runs()
        run = log.get_task_run(summary.id)
    assert run is not None
    assert all(not a.patch_applied for a in run.attempts)
    assert all("workflows" in (a.error_info or "") for a in run.attempts)


def test_in_place_applies_the_diff_to_the_working_tree(
    workspace: dict[str, Path], server: ScriptedModelServer
) -> None:
    write_config(workspace, server.url)
    server.script("implement", edit(MUL_BUG, MUL_FIX))

    assert solve(workspace, "--in-place") == 0

    ops = (workspace["repo"] / "calc/ops.py").read_text()
    assert MUL_FIX in ops and MUL_BUG not in ops
    assert "cra/" not in git_in(workspace["repo"], "branch", "--list")


def test_hanging_tests_are_killed_and_reported(
    workspace: dict[str, Path], server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(workspace, server.url, timeout=1)
    workspace["config"].write_text(
        workspace["config"].read_text().replace(json.dumps(TEST_COMMAND), '"sleep 30"')
    )
    server.script("implement", edit(MUL_BUG, MUL_FIX))
    server.script("implement_retry", edit(MUL_BUG, MUL_FIX))

    assert solve(workspace, "--json") == 1

    result = json.loads(capsys.readouterr().out)
    assert result["baseline"]["timed_out"] is True
    assert all(a["validation"]["timed_out"] for a in result["attempts"])


def test_model_server_down_is_a_clear_failure(
    workspace: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(workspace, "http://127.0.0.1:9")

    assert solve(workspace) == 2  # found before the run began: nothing is spent or recorded

    err = capsys.readouterr().err
    assert "http://127.0.0.1:9/api/tags refused the connection" in err
    assert "models.coding.base_url" in err
    with open_log(workspace) as log:
        assert log.list_task_runs() == []


def test_missing_test_command_is_a_usage_error(
    workspace: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    workspace["config"].write_text('[models.coding]\nmodel = "x"\n')
    assert solve(workspace) == 2
    assert "tests are the gate" in capsys.readouterr().err


def test_config_with_unknown_key_is_a_usage_error(
    workspace: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    workspace["config"].write_text('[testing]\ntest_command = "true"\nretries = 3\n')
    assert solve(workspace) == 2
    assert "testing.retries" in capsys.readouterr().err


def test_runs_lists_and_shows_recorded_runs(
    workspace: dict[str, Path], server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(workspace, server.url)
    server.script("implement", edit(MUL_BUG, MUL_FIX))
    assert solve(workspace) == 0
    capsys.readouterr()
    data = ["--data-dir", str(workspace["data"])]

    assert main([*data, "runs"]) == 0
    listing = capsys.readouterr().out
    assert "complete" in listing and "Fix the failing test_mul" in listing
    run_id = listing.split()[0]
    assert main([*data, "runs", run_id]) == 0
    shown = capsys.readouterr().out
    assert "attempt 1" in shown and "implement" in shown and "passed" in shown
    assert main([*data, "runs", "9999"]) == 2


def test_cra_entry_point_runs_as_a_subprocess(
    workspace: dict[str, Path], server: ScriptedModelServer
) -> None:
    write_config(workspace, server.url)
    server.script("implement", edit(MUL_BUG, MUL_FIX))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent.cli.main",
            "--data-dir",
            str(workspace["data"]),
            "solve",
            "Fix mul",
            "--repo",
            str(workspace["repo"]),
            "--plan",
            str(workspace["plan"]),
            "--config",
            str(workspace["config"]),
        ],
        env={**os.environ, **ISOLATED_GIT_ENV},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "status: complete" in proc.stdout
    assert "branch: cra/fix-mul" in proc.stdout


def test_files_the_tests_leave_behind_are_not_committed(
    workspace: dict[str, Path], server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(workspace, server.url)
    command = json.dumps(TEST_COMMAND)
    leaves_junk = json.dumps(f"{TEST_COMMAND} && echo '<xml/>' > junk-report.xml")
    workspace["config"].write_text(workspace["config"].read_text().replace(command, leaves_junk))
    server.script("implement", edit(MUL_BUG, MUL_FIX))

    assert solve(workspace, "--json") == 0

    branch = json.loads(capsys.readouterr().out)["branch"]
    files = git_in(workspace["repo"], "show", "--name-only", "--format=", branch).split()
    assert files == ["calc/ops.py"]


def test_retrieval_stages_ask_the_classifier_and_record_its_calls(
    workspace: dict[str, Path], server: ScriptedModelServer
) -> None:
    write_config(workspace, server.url, stages=["scope"])
    for _ in range(12):
        server.script("retrieval_scope", "yes")
    server.script("implement", edit(MUL_BUG, MUL_FIX))

    assert solve(workspace) == 0

    implement = next(r for r in server.requests if r.stage == "implement")
    assert '<file path="calc/ops.py"' in implement.user_prompt
    with open_log(workspace) as log:
        [summary] = log.list_task_runs(modes=["single_pass"])
        run = log.get_task_run(summary.id)
    assert run is not None
    stages = [c.record.stage for c in run.llm_calls]
    assert stages[-1] == "implement"
    assert stages[:-1] and set(stages[:-1]) == {"retrieval_scope"}


def test_solve_says_which_sandbox_it_used(
    workspace: dict[str, Path], server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(workspace, server.url)
    server.script("implement", edit(MUL_BUG, MUL_FIX))
    assert solve(workspace) == 0  # auto: bwrap where bubblewrap is installed (always in CI)
    out = capsys.readouterr()
    if test_sandbox_kind() == "bwrap":
        assert "cra: repository commands run in the bwrap sandbox;" in out.err
        assert "sandbox: bwrap" in out.out
    else:
        assert "(sandbox none: bubblewrap is not installed)" in out.err

    server.script("implement", edit(MUL_BUG, MUL_FIX))
    assert solve(workspace, "--sandbox", "none") == 0
    out = capsys.readouterr()
    assert "cra: repository commands run UNSANDBOXED (sandbox none: chosen explicitly)" in out.err
    assert "sandbox: none (the commands ran UNSANDBOXED)" in out.out
