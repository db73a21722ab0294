"""`cra-bot doctor` as a process against the fake GitHub, a real database and a scripted model
server: a good set-up passes; each broken part (bad key, unmigrated database, server down, model
missing, Redis down) is one ✗ line with the fix."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

from agent.runlog.database import build_engine
from agent.runlog.migrate import migrations_location
from tests.e2e.first_hour import Done, clean_env, closed_port, rsa_pem, run
from tests.e2e.test_cra_doctor import assert_documented, lines_of
from tests.fakes.github_server import FakeGitHub
from tests.fakes.model_server import ScriptedModelServer

ROLES = ("reasoning", "coding", "classifier")


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as gh:
        yield gh


@pytest.fixture
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(models=("scripted-model",)) as srv:
        yield srv


@pytest.fixture
def env(tmp_path: Path, github: FakeGitHub, model: ScriptedModelServer) -> dict[str, str]:
    """A server's settings that are all right."""
    key = tmp_path / "app.pem"
    key.write_text(github.private_key_pem)
    settings = {
        "CRA_WEBHOOK_SECRET": "s3cret",
        "CRA_APP_ID": str(github.app_id),
        "CRA_PRIVATE_KEY_PATH": str(key),
        "CRA_DATA_DIR": str(tmp_path / "data"),
        "CRA_GITHUB_API_URL": github.api_url,
        "CRA_GITHUB_URL": github.git_url,
    }
    for role in ROLES:
        settings[f"CRA_{role.upper()}_BASE_URL"] = model.url
        settings[f"CRA_{role.upper()}_MODEL"] = "scripted-model"
    return clean_env(tmp_path, settings)


def doctor(env: dict[str, str], *args: str) -> Done:
    return run("cra-bot", "doctor", *args, env=env)


def failed(done: Done) -> list[str]:
    assert done.code == 1 and "Traceback" not in done.text, done.text
    return lines_of(done, "✗")


def test_a_good_server_set_up_passes_every_check(
    env: dict[str, str], model: ScriptedModelServer
) -> None:
    assert run("cra-bot", "migrate", env=env).code == 0
    done = doctor(env)
    assert done.code == 0, done.text
    assert "✓ GitHub App: cra (id 12345) accepted the JWT" in done.out
    assert "✓ installations: 1: Codertocat" in done.out
    assert "✓ database: sqlite:///" in done.out and "at the newest migration" in done.out
    assert "✓ queue: 2 worker thread(s)" in done.out
    assert "✓ sandbox: repository commands run in the bwrap sandbox" in done.out
    assert done.out.count("✓ ") == 12 and "✗" not in done.out
    assert model.chat_requests == []


def test_a_fresh_database_is_a_note_not_a_failure(env: dict[str, str]) -> None:
    done = doctor(env)
    assert done.code == 0, done.text
    assert "! database: sqlite:///" in done.out and "does not exist yet" in done.out


def test_a_key_github_does_not_know_fails_the_jwt(env: dict[str, str]) -> None:
    Path(env["CRA_PRIVATE_KEY_PATH"]).write_text(rsa_pem())
    [line] = failed(doctor(env))
    assert line.startswith(
        "✗ GitHub App: GitHub refused the App's JWT: GET /app: GitHub answered 401"
    )
    assert "CRA_APP_ID" in line
    assert_documented(line)


def test_a_file_that_is_not_a_key_fails_naming_the_setting(env: dict[str, str]) -> None:
    Path(env["CRA_PRIVATE_KEY_PATH"]).write_text("not a key\n")
    [line] = failed(doctor(env))
    assert line.startswith(
        f"✗ GitHub App: CRA_PRIVATE_KEY_PATH={env['CRA_PRIVATE_KEY_PATH']}: not a PEM private key"
    )


def test_an_unmigrated_database_fails_with_the_command_that_migrates(
    env: dict[str, str],
    tmp_path: Path,
) -> None:
    config = Config()
    config.set_main_option("script_location", migrations_location())
    first = list(ScriptDirectory.from_config(config).walk_revisions())[-1].revision
    engine = build_engine(f"sqlite:///{tmp_path / 'data' / 'cra.db'}")
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, first)
    engine.dispose()

    [line] = failed(doctor(env))
    assert f"is not migrated: at {first}, newest is" in line
    assert line.endswith("→ run `cra-bot migrate` (serve and worker also migrate when they start)")
    assert_documented(line)
    assert run("cra-bot", "migrate", env=env).code == 0
    assert doctor(env).code == 0


def test_a_model_server_that_is_down_fails_each_role(env: dict[str, str]) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    lines = failed(doctor({**env, **{f"CRA_{r.upper()}_BASE_URL": url for r in ROLES}}))
    assert [line.split(":")[0] for line in lines] == [
        "✗ reasoning model",
        "✗ coding model",
        "✗ classifier model",
    ]
    assert lines[1].endswith("or fix CRA_CODING_BASE_URL")


def test_a_missing_model_is_named_with_its_setting(env: dict[str, str]) -> None:
    [line] = failed(doctor({**env, "CRA_CODING_MODEL": "qwen2.5-coder:3b"}))
    assert line == (
        f"✗ coding model: qwen2.5-coder:3b is not on {env['CRA_CODING_BASE_URL']} "
        "(it has: scripted-model) → ollama pull qwen2.5-coder:3b"
    )


def test_a_misspelt_variable_and_an_unreadable_setting(env: dict[str, str]) -> None:
    [line] = failed(doctor({**env, "CRA_WEBHOOK_SECERT": "x"}))
    assert line.startswith("✗ variables: cra-bot reads no setting CRA_WEBHOOK_SECERT")
    assert_documented(line)
    lines = failed(doctor({**env, "CRA_WORKERS": "many"}))
    assert lines == [
        "✗ settings: CRA_WORKERS: expected a whole number, got the text 'many' → "
        "fix the variable named, then run again"
    ]


def test_redis_down_fails_the_queue(env: dict[str, str]) -> None:
    url = f"redis://127.0.0.1:{closed_port()}/0"
    [line] = failed(doctor({**env, "CRA_QUEUE": "rq", "CRA_REDIS_URL": url}))
    assert line == (
        f"✗ queue: Redis at {url} (CRA_REDIS_URL) does not answer: start it, or fix CRA_REDIS_URL"
    )
    assert_documented(line)


def test_redis_that_answers_passes_the_queue(env: dict[str, str], redis_url: str) -> None:
    done = doctor({**env, "CRA_QUEUE": "rq", "CRA_REDIS_URL": redis_url})
    assert "✓ queue: RQ on redis://" in done.out, done.out


def test_a_postgres_database_is_checked_too(env: dict[str, str], postgres_url: str) -> None:
    done = doctor({**env, "CRA_DATABASE_URL": postgres_url})
    assert "database: postgresql+psycopg://" in done.out, done.out
