"""Secrets passed through the environment: a repository's testing.env naming tokens, every
variable or `"*"`, and a cloned repository's cra.toml taking the CLI user's environment or
choosing the model server that gets their prompts; none of it gets a secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.config.files import TestingConfig
from agent.gate.validation import run_validation
from agent.sandbox.commands import scrubbed_env
from bot.environment import repository_environment
from bot.settings import BotSettings
from tests.e2e.first_hour import clean_env, models_toml
from tests.e2e.test_untrusted_repo_config import (
    IGNORED,
    SECRET,
    hostile_config,
    seen_env,
    solve,
    write_user_config,
)
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.probes import MakeBwrap
from tests.fakes.repos import make_python_project
from tests.gate.test_validation import ENVIRON, SECRET_VALUES


def test_attack_testing_env_naming_every_variable_passes_no_secret() -> None:
    env = scrubbed_env(ENVIRON, list(ENVIRON))
    assert set(env) == {"PATH", "HOME", "LANG", "MY_SETTING", "UNLISTED"}


def test_attack_testing_env_naming_tokens_shows_the_command_none(
    tmp_path: Path, bwrap: MakeBwrap
) -> None:
    testing = TestingConfig(test_command="env", env=["GITHUB_TOKEN", "OPENAI_API_KEY", "MY_*"])
    result = run_validation(tmp_path, testing, environ=ENVIRON, sandbox=bwrap())
    assert result.success
    assert result.test_output is not None and "MY_SETTING=visible" in result.test_output
    assert not [value for value in SECRET_VALUES if value in result.test_output]
    assert "UNLISTED" not in result.test_output


def test_attack_testing_env_star_reaches_no_credential_of_the_bots(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`testing.env = ["*"]` in a repository's cra.toml reaches no credential of the server's."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "AKIA",
        "DATABASE_URL": "postgres://u:pw@db/x",
        "SSH_AUTH_SOCK": "/run/ssh",
        "PIP_INDEX_URL": "http://pypi.local",
        "PATH": "/usr/bin",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CRA_TEST_ENV", "PIP_*,DATABASE_URL_FOR_TESTS")
    settings = BotSettings.load()
    assert settings.test_env == ["PIP_*", "DATABASE_URL_FOR_TESTS"]

    offered = repository_environment(settings.test_env)

    assert offered["PIP_INDEX_URL"] == "http://pypi.local" and offered["PATH"] == "/usr/bin"
    assert not {"AWS_ACCESS_KEY_ID", "DATABASE_URL", "SSH_AUTH_SOCK"} & set(offered)
    assert "AWS_ACCESS_KEY_ID" not in scrubbed_env(offered, ["*"])


def your_env(tmp: Path, yours: ScriptedModelServer) -> dict[str, str]:
    """A clean environment holding a secret, with your config file on `yours`."""
    env = clean_env(tmp, {"XDG_CONFIG_HOME": str(tmp / "config"), "DEPLOY_KEY": SECRET})
    write_user_config(env, models_toml(yours.url))
    return env


def test_attack_cloned_cra_toml_taking_your_environment_gets_none_of_it(tmp_path: Path) -> None:
    with ScriptedModelServer() as yours, ScriptedModelServer() as theirs:
        repo = make_python_project(tmp_path / "repo", config=hostile_config(tmp_path, theirs.url))
        done = solve(tmp_path, repo, your_env(tmp_path, yours))

    assert "DEPLOY_KEY" not in seen_env(tmp_path) and SECRET not in seen_env(tmp_path)
    assert "testing.env (DEPLOY_KEY)" in done.err, done.err
    assert "may not pass your environment to its commands" in done.err
    assert done.err.count(IGNORED) == 1, done.err


def test_attack_cloned_cra_toml_choosing_the_model_server_gets_no_prompt(tmp_path: Path) -> None:
    with ScriptedModelServer() as yours, ScriptedModelServer() as theirs:
        repo = make_python_project(tmp_path / "repo", config=hostile_config(tmp_path, theirs.url))
        done = solve(tmp_path, repo, your_env(tmp_path, yours))

        assert theirs.requests == []
        assert yours.chat_requests, done.err
    assert "models.coding.base_url" in done.err and "models.reasoning.provider" in done.err
