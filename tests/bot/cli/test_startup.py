"""What cra-bot checks before it starts: the App's key, variables nothing reads, the port."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pydantic import SecretStr

from agent.console import shown_url
from bot.cli.startup import require_free_port
from bot.environment import unknown_settings
from bot.errors import SettingsError
from bot.github.app_key import load_private_key
from bot.settings import BotSettings
from tests.e2e.first_hour import ec_pem, rsa_pem


def settings(**values: object) -> BotSettings:
    return BotSettings.model_validate(values)


def test_a_pem_rsa_key_loads_from_a_file_or_the_variable(tmp_path: Path) -> None:
    pem = rsa_pem()
    (tmp_path / "k.pem").write_text(pem)
    assert load_private_key(settings(private_key_path=tmp_path / "k.pem")) == pem
    escaped = SecretStr(pem.replace("\n", "\\n"))  # as `cra-bot register` writes .env
    assert load_private_key(settings(private_key=escaped)) == pem


def test_a_pkcs8_rsa_key_is_fine_too(tmp_path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    assert load_private_key(settings(private_key=SecretStr(pem))) == pem


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("", "not a PEM private key"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n",
            "not a PEM private key",
        ),
        (ec_pem(), "GitHub Apps sign with RSA"),
    ],
)
def test_what_is_not_an_rsa_key_is_refused_naming_the_file(
    tmp_path: Path, content: str, says: str
) -> None:
    key = tmp_path / "k.pem"
    key.write_text(content)
    with pytest.raises(SettingsError) as info:
        load_private_key(settings(private_key_path=key))
    assert f"CRA_PRIVATE_KEY_PATH={key}" in str(info.value) and says in str(info.value)


def test_an_encrypted_key_is_refused(tmp_path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"pw"),
    ).decode()
    with pytest.raises(SettingsError, match="encrypted"):
        load_private_key(settings(private_key=SecretStr(pem)))


def test_no_key_at_all_names_both_settings() -> None:
    with pytest.raises(SettingsError, match="CRA_PRIVATE_KEY or CRA_PRIVATE_KEY_PATH"):
        load_private_key(settings())


def test_variables_nothing_reads_come_from_the_environment_and_the_env_file(
    tmp_path: Path,
) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("CRA_APP_ID=1\nCRA_APP_SLUG=cra\nCRA_WEBHOK_SECRET=x\n")
    env = {
        "CRA_LABEL": "cra",
        "CRA_TEST_REDIS_URL": "redis://",
        "CRA_MODEL_URL": "http://x",
        "CRA_WOKERS": "3",
        "CRA_SOMETHING_ELSE": "1",
    }
    assert unknown_settings(env, dotenv) == [
        ("CRA_SOMETHING_ELSE", None),
        ("CRA_WEBHOK_SECRET", "CRA_WEBHOOK_SECRET"),
        ("CRA_WOKERS", "CRA_WORKERS"),
    ]


def test_a_settings_error_names_the_variables_in_plain_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CRA_COMMENT_INTERVAL", "-1")
    monkeypatch.setenv("CRA_QUEUE", "redis")
    with pytest.raises(SettingsError) as info:
        BotSettings.load()
    assert str(info.value).splitlines() == [
        "CRA_QUEUE: expected one of 'thread' or 'rq', got the text 'redis'",
        "CRA_COMMENT_INTERVAL: expected a number at least 0.0, got the text '-1'",
    ]


def test_a_port_in_use_is_refused_and_a_free_one_is_not() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SettingsError, match=f"port {port} on 127.0.0.1 is in use"):
            require_free_port("127.0.0.1", port)
    require_free_port("127.0.0.1", port)


def test_urls_are_shown_without_their_password() -> None:
    assert shown_url("postgresql+psycopg://cra:hunter2@db/cra") == (
        "postgresql+psycopg://cra:***@db/cra"
    )
    assert shown_url("not a url") == "(not a URL)"
