"""BotSettings: CRA_* variables, secrets kept secret, the server's models, the webhook secret."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.errors import SettingsError
from bot.settings import BotSettings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No CRA_* variable of the machine leaks in; HOME is a temporary folder."""
    for name in list(os.environ):
        if name.startswith("CRA_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))


def test_defaults_are_the_documented_ones(tmp_path: Path) -> None:
    settings = BotSettings()
    assert settings.label == "cra"
    assert settings.queue == "thread"
    assert settings.workers == 2
    assert settings.on_partial == "draft"
    assert settings.comment_interval == 5.0
    assert settings.github_api_url == "https://api.github.com"
    assert settings.data_dir == tmp_path / ".local/share/cra-bot"
    assert settings.database_url == f"sqlite:///{tmp_path / '.local/share/cra-bot/cra.db'}"


def test_every_setting_is_described() -> None:
    assert all(field.description for field in BotSettings.model_fields.values())


def test_variables_with_the_cra_prefix_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRA_LABEL", "autofix")
    monkeypatch.setenv("CRA_QUEUE", "rq")
    monkeypatch.setenv("CRA_INSECURE_DEV", "1")
    monkeypatch.setenv("CRA_CODING_BASE_URL", "http://gpu:8000")
    settings = BotSettings()
    assert (settings.label, settings.queue, settings.insecure_dev) == ("autofix", "rq", True)
    assert settings.coding.base_url == "http://gpu:8000"


def test_the_default_database_lives_in_the_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRA_DATA_DIR", "/srv/cra")
    assert BotSettings().database_url == "sqlite:////srv/cra/cra.db"


def test_a_database_url_given_wins_over_the_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRA_DATA_DIR", "/srv/cra")
    monkeypatch.setenv("CRA_DATABASE_URL", "postgresql+psycopg://cra@db/cra")
    settings = BotSettings()
    assert settings.data_dir == Path("/srv/cra")
    assert settings.database_url == "postgresql+psycopg://cra@db/cra"


def test_an_unknown_queue_backend_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRA_QUEUE", "celery")
    with pytest.raises(ValidationError):
        BotSettings()


def test_secrets_never_show_in_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRA_WEBHOOK_SECRET", "hush-webhook")
    monkeypatch.setenv("CRA_CODING_API_KEY", "hush-key")
    monkeypatch.setenv("CRA_PRIVATE_KEY", "-----BEGIN RSA PRIVATE KEY-----")
    settings = BotSettings()
    shown = repr(settings) + str(settings) + settings.model_dump_json()
    assert "hush" not in shown and "BEGIN RSA" not in shown


def test_the_webhook_secret_is_required() -> None:
    with pytest.raises(SettingsError, match="CRA_WEBHOOK_SECRET"):
        BotSettings().require_webhook_secret()


def test_an_empty_webhook_secret_counts_as_none() -> None:
    with pytest.raises(SettingsError):
        BotSettings(webhook_secret="").require_webhook_secret()


def test_the_webhook_secret_is_returned_when_set() -> None:
    assert BotSettings(webhook_secret="s3cret").require_webhook_secret() == "s3cret"


def test_insecure_dev_runs_without_a_secret() -> None:
    assert BotSettings(insecure_dev=True).require_webhook_secret() is None


def test_model_config_for_a_role_comes_from_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRA_REASONING_PROVIDER", "openai")
    monkeypatch.setenv("CRA_REASONING_BASE_URL", "http://vllm:8000/v1")
    monkeypatch.setenv("CRA_REASONING_MODEL", "qwen3:8b")
    monkeypatch.setenv("CRA_REASONING_CONTEXT_WINDOW", "32768")
    config = BotSettings().model_config_for("reasoning")
    assert (config.provider, config.base_url) == ("openai", "http://vllm:8000/v1")
    assert (config.model, config.context_window) == ("qwen3:8b", 32768)
    assert config.api_key_env is None


def test_a_role_keeps_the_agent_defaults_it_is_not_given() -> None:
    config = BotSettings().model_config_for("classifier")
    assert (config.model, config.context_window, config.max_tokens) == ("qwen3:0.6b", 8192, 512)


def test_api_keys_are_given_per_role(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRA_CODING_API_KEY", "sk-coding")
    settings = BotSettings()
    assert settings.api_key_for("coding") == "sk-coding"
    assert settings.api_key_for("reasoning") is None


def test_an_unknown_role_is_an_error() -> None:
    with pytest.raises(ValueError, match="planner"):
        BotSettings().model_config_for("planner")


def test_allowed_models_are_a_comma_separated_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRA_ALLOWED_MODELS", "qwen3:8b, llama3.1:8b,")
    assert BotSettings().allowed_models == ["qwen3:8b", "llama3.1:8b"]


def test_allowed_models_may_be_a_json_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRA_ALLOWED_MODELS", '["qwen3:8b"]')
    assert BotSettings().allowed_models == ["qwen3:8b"]


def test_the_configured_models_are_always_allowed() -> None:
    settings = BotSettings(allowed_models=["qwen3:8b", "qwen3:4b"])
    assert settings.allowed_model_names() == [
        "qwen3:4b",
        "qwen2.5-coder:3b",
        "qwen3:0.6b",
        "qwen3:8b",
    ]


def test_a_dotenv_file_is_read_beneath_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("CRA_APP_ID=42\nCRA_LABEL=from-file\nCRA_WEBHOOK_SECRET=file-secret\n")
    monkeypatch.setenv("CRA_LABEL", "from-env")
    settings = BotSettings.load(env_file)
    assert (settings.app_id, settings.label) == (42, "from-env")
    assert settings.require_webhook_secret() == "file-secret"


def test_no_dotenv_file_is_read_unless_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".env").write_text("CRA_LABEL=from-file\n")
    monkeypatch.chdir(tmp_path)
    assert BotSettings.load().label == "cra"


def test_a_stale_after_shorter_than_two_heartbeats_is_refused_naming_both(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CRA_HEARTBEAT_INTERVAL", "30")
    monkeypatch.setenv("CRA_STALE_AFTER", "45")
    with pytest.raises(SettingsError, match=r"CRA_STALE_AFTER.*CRA_HEARTBEAT_INTERVAL"):
        BotSettings.load()


def test_a_stall_timeout_a_command_could_outlast_is_refused_naming_both(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CRA_MAX_TEST_TIMEOUT", "1800")
    monkeypatch.setenv("CRA_RUN_STALL_TIMEOUT", "1800")
    with pytest.raises(SettingsError, match=r"CRA_RUN_STALL_TIMEOUT.*CRA_MAX_TEST_TIMEOUT"):
        BotSettings.load()


def test_the_stall_timeout_outlasts_the_longest_command_by_default() -> None:
    settings = BotSettings()
    assert settings.run_stall_timeout > settings.max_test_timeout


def test_a_model_url_with_credentials_is_refused_without_showing_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CRA_CODING_BASE_URL", "https://bob:hunter2@models.example/v1")
    with pytest.raises(
        SettingsError, match="CRA_CODING_BASE_URL: the URL carries credentials"
    ) as caught:
        BotSettings.load(None)
    assert "hunter2" not in str(caught.value)
