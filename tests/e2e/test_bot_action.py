"""`cra-bot action` inside a (simulated) GitHub Actions job: the event file, GITHUB_TOKEN, a PR."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.bot_world import CRA_TOML, OWNER, REPO
from tests.fakes.github_server import FakeGitHub
from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.fakes.repos import ISOLATED_GIT_ENV, MUL_BUG, MUL_FIX, commit_file, make_python_project
from tests.fixtures import webhook_bytes

TOKEN = "ghs_" + "a" * 36 + "actions"


def dispatch_event(tmp: Path) -> Path:
    payload = json.loads(webhook_bytes("workflow_dispatch"))
    payload["inputs"] = {"issue_number": "1", "instructions": "keep it small"}
    payload["repository"]["full_name"] = REPO
    path = tmp / "event.json"
    path.write_text(json.dumps(payload))
    return path


def script(models: ScriptedModelServer) -> None:
    step = {"id": "s1", "description": "Fix mul", "target_files": ["calc/ops.py"], "depends_on": []}
    models.script(
        "meta_plan",
        json.dumps(
            {
                "task_summary": "Fix mul",
                "parts": [
                    {"id": "p1", "description": "Fix mul", "affected_files": ["calc/ops.py"]}
                ],
            }
        ),
    )
    models.script("part_plan", json.dumps({"part_id": "p1", "task_summary": "t", "steps": [step]}))
    models.script(
        "implement",
        f'<edit file="calc/ops.py"><search>\n{MUL_BUG}</search>'
        f"<replacement>\n{MUL_FIX}</replacement></edit>",
    )
    models.script("adjustment", '{"revised_steps": [], "rationale": "done"}')


def action_env(tmp: Path, fake: FakeGitHub, models: ScriptedModelServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRA_", "GITHUB_"))}
    env.update(ISOLATED_GIT_ENV)
    env.update(
        {
            "GITHUB_EVENT_NAME": "workflow_dispatch",
            "GITHUB_EVENT_PATH": str(dispatch_event(tmp)),
            "GITHUB_TOKEN": TOKEN,
            "GITHUB_API_URL": fake.api_url,
            "GITHUB_SERVER_URL": fake.git_url,
            "GITHUB_REPOSITORY": REPO,
            "GITHUB_RUN_ID": "77",
            "RUNNER_TEMP": str(tmp / "runner"),
        }
    )
    for role in ("REASONING", "CODING", "CLASSIFIER"):
        env[f"CRA_{role}_BASE_URL"] = models.url
        env[f"CRA_{role}_MODEL"] = role.lower()
    return env


def set_up(tmp: Path, fake: FakeGitHub) -> None:
    source = make_python_project(tmp / "source", bug=True, config=None)
    commit_file(source, ".github/cra.toml", CRA_TOML, "cra config")
    fake.add_repo(REPO, source)
    fake.add_static_token(TOKEN)
    fake.set_permission(REPO, OWNER, "write")
    fake.add_issue(REPO, number=1, title="mul is off by one", user=OWNER)


def test_action_mode_opens_a_pull_request_with_the_job_token(tmp_path: Path) -> None:
    with FakeGitHub() as fake, ScriptedModelServer() as models:
        set_up(tmp_path, fake)
        script(models)

        proc = subprocess.run(
            [sys.executable, "-m", "bot.cli.main", "action"],
            env=action_env(tmp_path, fake, models),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

        assert proc.returncode == 0, proc.stdout + proc.stderr
        [pull] = fake.pulls(REPO)
        assert pull.head_ref == "cra/issue-1" and "Fixes #1" in (pull.body or "")
        assert pull.user.login == "github-actions[bot]"
        assert {r.token for r in fake.requests if r.token} == {TOKEN}
        assert TOKEN not in proc.stdout + proc.stderr
        meta = next(r for r in models.requests if r.stage == "meta_plan")
        assert "keep it small" in meta.user_prompt


def start_action(tmp: Path, fake: FakeGitHub, models: ScriptedModelServer) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "bot.cli.main", "action"],
        env=action_env(tmp, fake, models),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until(what: str, check: Callable[[], object], proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not check():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def bot_comments(fake: FakeGitHub) -> list[str]:
    return [c.body or "" for c in fake.comments(REPO, 1) if c.user.login == "github-actions[bot]"]


def test_a_cancelled_workflow_ends_the_run_cancelled_and_says_so_on_the_issue(
    tmp_path: Path,
) -> None:
    """Actions cancels a job with SIGINT (then SIGTERM, then SIGKILL): the run mid-call ends
    cancelled, the issue's progress comment says so (it said "working on this" for good)."""
    with FakeGitHub() as fake, ScriptedModelServer() as models:
        set_up(tmp_path, fake)
        models.script("meta_plan", Reply(text="{}", delay_s=60))
        proc = start_action(tmp_path, fake, models)
        wait_until(
            "the meta-plan's call",
            lambda: [r for r in models.requests if r.stage == "meta_plan"],
            proc,
        )

        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)

        assert proc.returncode == 130, out + err
        assert "run 1: cancelled (interrupted by SIGINT)" in out
        assert "Traceback" not in err
        [comment] = bot_comments(fake)
        assert "cancelled" in comment and "interrupted by SIGINT" in comment, comment
        assert "working on this" not in comment
        assert fake.pulls(REPO) == []


def test_a_run_cancelled_by_a_signal_after_a_step_committed_pushes_nothing(
    tmp_path: Path,
) -> None:
    """Told to stop, a run that already holds a commit does not push it as a draft (as a
    partial run would): the process may be killed any moment."""
    with FakeGitHub() as fake, ScriptedModelServer() as models:
        set_up(tmp_path, fake)
        steps = [
            {"id": f"s{n}", "description": what, "target_files": ["calc/ops.py"], "depends_on": []}
            for n, what in ((1, "Fix mul"), (2, "Tidy mul"))
        ]
        models.script(
            "meta_plan",
            json.dumps(
                {
                    "task_summary": "Fix mul",
                    "parts": [
                        {"id": "p1", "description": "Fix mul", "affected_files": ["calc/ops.py"]}
                    ],
                }
            ),
        )
        models.script(
            "part_plan", json.dumps({"part_id": "p1", "task_summary": "t", "steps": steps})
        )
        models.script(
            "implement",
            f'<edit file="calc/ops.py"><search>\n{MUL_BUG}</search>'
            f"<replacement>\n{MUL_FIX}</replacement></edit>",
            Reply(text="no edits", delay_s=60),
        )
        models.script(
            "adjustment",
            *[
                '{"revised_steps": [{"id": "s2", "description": '
                '"Tidy mul", "target_files": ["calc/ops.py"], '
                '"depends_on": []}], "rationale": "go on"}'
            ]
            * 3,
        )
        proc = start_action(tmp_path, fake, models)
        wait_until(
            "the second step's call",
            lambda: len([r for r in models.requests if r.stage == "implement"]) == 2,
            proc,
        )

        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)

        assert proc.returncode == 130, out + err
        assert "run 1: cancelled (interrupted by SIGINT)" in out, out + err
        assert fake.pulls(REPO) == [] and fake.branch_sha(REPO, "cra/issue-1") is None
        assert "cancelled" in bot_comments(fake)[-1]


def test_a_signal_while_github_is_waited_for_still_ends_the_run_and_tells_the_issue(
    tmp_path: Path,
) -> None:
    """A signal outside the agent (here while GitHub asks to retry the pull request later):
    the run ends cancelled all the same, and the issue is told why."""
    with FakeGitHub() as fake, ScriptedModelServer() as models:
        set_up(tmp_path, fake)
        script(models)
        fake.fail_next("POST", r"/pulls$", 500, retry_after=60)
        proc = start_action(tmp_path, fake, models)
        wait_until(
            "the pull request",
            lambda: any(r.method == "POST" and r.path.endswith("/pulls") for r in fake.requests),
            proc,
        )
        time.sleep(0.2)  # in the client's wait before its retry

        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)

        assert proc.returncode == 143, out + err
        assert "Traceback" not in err
        assert "cra-bot: interrupted by SIGTERM" in err
        told = bot_comments(fake)[-1]
        assert "its process was told to stop (SIGTERM" in told, told


def test_action_mode_outside_actions_is_a_clear_usage_error() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    proc = subprocess.run(
        [sys.executable, "-m", "bot.cli.main", "action"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert "GITHUB_EVENT_NAME" in proc.stderr


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["register", "--help"]])
def test_cra_bot_commands_show_help(argv: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bot.cli.main", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "usage" in proc.stdout.lower()
