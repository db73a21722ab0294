"""`cra-bot bench` on an installed repository, through the real CLI: the fake GitHub serves a
repository whose history holds three fixes among commits that make no task; the bench mirrors
it with the App's token, mines the fixes, the oracle resolves each, and the report is a page
that readers of the repository see and nobody else does."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from flask.testing import FlaskClient

from agent.bench.mining.mine import machine_cores
from bot.services import build_services
from bot.settings import BotSettings
from bot.web.app import create_app
from tests.bench.history import build_history
from tests.fakes.github_server import FakeGitHub
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.repos import ISOLATED_GIT_ENV
from tests.fakes.sandboxes import test_sandbox_kind

REPO = "octo/mathx"
OWNER, STRANGER = "octocat", "mallory"
# A whole bench through the real CLI: mining replays each commit's tests in the sandbox, then
# three solves and three scorings; about a minute alone, more on a busy machine.
pytestmark = pytest.mark.timeout(900)


def settings_env(tmp: Path, fake: FakeGitHub, models: ScriptedModelServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRA_", "GITHUB_"))}
    env.update(ISOLATED_GIT_ENV)
    env.update(
        {
            "CRA_APP_ID": str(fake.app_id),
            "CRA_PRIVATE_KEY": fake.private_key_pem,
            "CRA_GITHUB_API_URL": fake.api_url,
            "CRA_GITHUB_URL": fake.git_url,
            "CRA_DATA_DIR": str(tmp / "bot"),
            "CRA_DATABASE_URL": f"sqlite:///{tmp / 'bot.db'}",
            "CRA_PUBLIC_URL": "http://cra.test",
            "CRA_SANDBOX": test_sandbox_kind(),
            "CRA_CLIENT_ID": fake.client_id,
            "CRA_CLIENT_SECRET": fake.client_secret,
            "CRA_WEBHOOK_SECRET": "s",
        }
    )
    for role in ("REASONING", "CODING", "CLASSIFIER"):
        env[f"CRA_{role}_BASE_URL"] = models.url
        env[f"CRA_{role}_MODEL"] = role.lower()
    return env


def sign_in(fake: FakeGitHub, client: FlaskClient, login: str) -> None:
    start = client.get("/auth/login")
    authorize = urlsplit(start.headers["Location"])
    query = {k: v[0] for k, v in parse_qs(authorize.query).items()}
    approved = httpx.post(f"{fake.git_url}{authorize.path}", data={**query, "login": login})
    back = urlsplit(approved.headers["Location"])
    assert client.get(back.path, query_string=back.query).status_code == 302


def test_cra_bot_bench_mines_runs_and_publishes_a_page_only_readers_see(tmp_path: Path) -> None:
    history = build_history(tmp_path / "source")
    with FakeGitHub() as fake, ScriptedModelServer() as models:
        fake.add_repo(REPO, history.repo)
        fake.set_private(REPO)
        fake.set_permission(REPO, OWNER, "read")
        env = settings_env(tmp_path, fake, models)

        proc = subprocess.run(
            [sys.executable, "-m", "bot.cli.main", "bench", "--repo", REPO, "--model", "oracle"],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )

        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert re.search(r"oracle\s+hidden\s+3\s+3/3\s+100\.0%", proc.stdout), proc.stdout
        found = re.search(r"report: http://cra\.test/bench/(\S+)", proc.stdout)
        assert found is not None, proc.stdout
        assert models.requests == []  # the oracle answered; no model was asked
        settings = BotSettings(**{k[4:].lower(): v for k, v in env.items() if k.startswith("CRA_")})
        services = build_services(settings)
        try:
            app = create_app(settings, services)
            page = f"/bench/{found.group(1)}"
            reader, stranger = app.test_client(), app.test_client()
            assert reader.get(page).status_code == 401
            sign_in(fake, reader, OWNER)
            shown = reader.get(page).get_data(as_text=True)
            assert shown.count('data-outcome="resolved"') == 3
            assert shown.count('<span class="mono task-id">octo__mathx-') == 3
            assert f"Bench report · {REPO}" in shown
            sign_in(fake, stranger, STRANGER)
            assert stranger.get(page).status_code == 404
        finally:
            services.close()


def test_cra_bot_bench_mines_with_as_many_jobs_as_cra_bench_mine(tmp_path: Path) -> None:
    history = build_history(tmp_path / "source")
    with FakeGitHub() as fake, ScriptedModelServer() as models:
        fake.add_repo(REPO, history.repo)
        env = settings_env(tmp_path, fake, models)

        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "bot.cli.main",
                "bench",
                "--repo",
                REPO,
                "--model",
                "oracle",
                "--max",
                "2",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )

    assert proc.returncode == 0, proc.stdout + proc.stderr
    # `cra bench mine`'s default: every CPU cra may use (this test's process may use the same)
    assert "2 commit(s) examined in" in proc.stderr, proc.stderr
    assert f"with {machine_cores()} job(s)" in proc.stderr, proc.stderr


def test_cra_bot_bench_in_actions_writes_the_report_files_and_the_job_summary(
    tmp_path: Path,
) -> None:
    token = "ghs_" + "b" * 36 + "bench"
    history = build_history(tmp_path / "source")
    with FakeGitHub() as fake, ScriptedModelServer() as models:
        fake.add_repo(REPO, history.repo)
        fake.add_static_token(token)
        event = tmp_path / "event.json"
        event.write_text('{"inputs": {"bench": true}}', encoding="utf-8")
        env = {
            k: v
            for k, v in settings_env(tmp_path, fake, models).items()
            if not k.startswith("CRA_") or k.endswith(("_BASE_URL", "_MODEL", "SANDBOX"))
        }
        env.update(
            {
                "GITHUB_EVENT_NAME": "workflow_dispatch",
                "GITHUB_EVENT_PATH": str(event),
                "GITHUB_TOKEN": token,
                "GITHUB_API_URL": fake.api_url,
                "GITHUB_SERVER_URL": fake.git_url,
                "GITHUB_REPOSITORY": REPO,
                "RUNNER_TEMP": str(tmp_path / "runner"),
            }
        )
        summary, out = tmp_path / "summary.md", tmp_path / "runner" / "cra-bench"

        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "bot.cli.main",
                "bench",
                "--actions",
                "--model",
                "oracle",
                "--out",
                str(out),
                "--summary",
                str(summary),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )

        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert token not in proc.stdout + proc.stderr
        assert {r.token for r in fake.requests if r.token} == {token}
        written = summary.read_text(encoding="utf-8")
        assert written.startswith(f"## cra bench: {REPO}\n\n```text\n")
        assert re.search(r"oracle\s+hidden\s+3\s+3/3\s+100\.0%", written)
        assert sorted(p.name for p in out.iterdir()) == [
            "report.html",
            "report.json",
            "results.jsonl",
        ]
        assert (out / "report.html").read_text(encoding="utf-8").count(
            'data-outcome="resolved"'
        ) == 3
