"""SolveConfig loading: file discovery, defaults, and errors that name the key and the file."""

from __future__ import annotations

from ipaddress import IPv4Network
from pathlib import Path

import pytest

from agent.config.files import SolveConfig, load_config, parse_config, resolve_api_key
from agent.errors import ConfigError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_follow_the_seeds() -> None:
    config = SolveConfig()
    assert config.models.reasoning.model == "qwen3:4b"
    assert config.models.coding.model == "qwen2.5-coder:3b"
    assert config.models.classifier.model == "qwen3:0.6b"
    assert config.models.coding.base_url == "http://localhost:11434"
    assert config.models.coding.provider == "ollama"
    assert config.budget.max_tokens_per_step == 30000


def test_no_file_gives_defaults(tmp_path: Path) -> None:
    assert load_config(tmp_path) == SolveConfig()


def test_github_cra_toml_wins_over_cra_toml(tmp_path: Path) -> None:
    write(tmp_path / "cra.toml", '[testing]\ntest_command = "make test"\n')
    write(tmp_path / ".github/cra.toml", '[testing]\ntest_command = "pytest"\n')
    config = load_config(tmp_path)
    assert config.testing.test_command == "pytest"
    assert config.source == str(tmp_path / ".github/cra.toml")


def test_explicit_config_wins(tmp_path: Path) -> None:
    write(tmp_path / ".github/cra.toml", '[testing]\ntest_command = "pytest"\n')
    explicit = write(tmp_path / "elsewhere.toml", '[testing]\ntest_command = "tox"\n')
    assert load_config(tmp_path, explicit).testing.test_command == "tox"


def test_missing_explicit_config_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path, tmp_path / "nope.toml")


def test_partial_model_section_keeps_role_defaults(tmp_path: Path) -> None:
    write(
        tmp_path / "cra.toml",
        '[models.coding]\nbase_url = "http://gpu:8000"\nprovider = "openai"\n',
    )
    coding = load_config(tmp_path).models.coding
    assert (coding.model, coding.base_url, coding.provider) == (
        "qwen2.5-coder:3b",
        "http://gpu:8000",
        "openai",
    )


def test_unknown_key_names_the_key_and_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "cra.toml", '[testing]\ntest_comand = "pytest"\n')
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert "testing.test_comand" in str(info.value)
    assert str(path) in str(info.value)
    assert info.value.key == "testing.test_comand"


def test_unknown_section_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "cra.toml", "[tests]\ncommand = 1\n")
    with pytest.raises(ConfigError, match="tests"):
        load_config(tmp_path)


def test_wrong_type_names_the_key(tmp_path: Path) -> None:
    write(tmp_path / "cra.toml", '[models.coding]\ncontext_window = "big"\n')
    with pytest.raises(ConfigError, match=r"models\.coding\.context_window"):
        load_config(tmp_path)


def test_unknown_provider_is_an_error() -> None:
    with pytest.raises(ConfigError, match="provider"):
        parse_config({"models": {"coding": {"provider": "anthropic"}}})


def test_invalid_toml_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "cra.toml", "[testing\n")
    with pytest.raises(ConfigError, match="not valid TOML") as info:
        load_config(tmp_path)
    assert str(path) in str(info.value)


def test_reserved_tokens_must_fit_every_window() -> None:
    with pytest.raises(ConfigError, match="reserved_tokens"):
        parse_config({"budget": {"reserved_tokens": 9000}})


def test_solve_without_a_test_command_is_an_error() -> None:
    with pytest.raises(ConfigError, match="tests are the gate"):
        SolveConfig().require_test_command()


def test_repository_config_cannot_choose_a_model_url(tmp_path: Path) -> None:
    write(tmp_path / ".github/cra.toml", '[models.coding]\nbase_url = "http://evil.example"\n')
    with pytest.raises(ConfigError, match="set by the server"):
        load_config(tmp_path, allow_endpoints=False)


def test_repository_config_may_choose_a_model_name(tmp_path: Path) -> None:
    write(tmp_path / ".github/cra.toml", '[models.coding]\nmodel = "qwen2.5-coder:7b"\n')
    assert load_config(tmp_path, allow_endpoints=False).models.coding.model == "qwen2.5-coder:7b"


def test_api_key_is_read_from_the_named_variable() -> None:
    model = parse_config({"models": {"coding": {"api_key_env": "MY_KEY"}}}).models.coding
    assert resolve_api_key(model, {"MY_KEY": "sk-123"}) == "sk-123"
    with pytest.raises(ConfigError, match="MY_KEY"):
        resolve_api_key(model, {})
    assert resolve_api_key(SolveConfig().models.coding, {}) is None


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://bob:hunter2@models.example/v1", "carries credentials"),
        ("http://token@localhost:11434", "carries credentials"),
        ("localhost:11434", "expected the http:// or https:// URL"),
        ("file:///etc/passwd", "expected the http:// or https:// URL"),
        ("http://localhost:port", "not a URL"),
    ],
)
def test_a_model_url_is_http_and_carries_no_credentials(url: str, why: str) -> None:
    with pytest.raises(ConfigError, match=why) as caught:
        parse_config({"models": {"coding": {"base_url": url}}})
    assert "hunter2" not in str(caught.value) and caught.value.key == "models.coding.base_url"


def test_a_model_url_with_a_path_and_port_is_fine() -> None:
    config = parse_config({"models": {"coding": {"base_url": "https://h.example:8443/v1"}}})
    assert config.models.coding.base_url == "https://h.example:8443/v1"


def test_a_repositorys_own_config_cannot_open_addresses_to_the_setup_step(
    tmp_path: Path,
) -> None:
    write(tmp_path / "cra.toml", '[sandbox]\nallow_addresses = ["10.1.2.3"]\n')
    for allow_endpoints in (True, False):  # cra in a checkout, the bot reading the repository
        with pytest.raises(ConfigError, match="never by the repository's own") as caught:
            load_config(tmp_path, allow_endpoints=allow_endpoints)
        assert caught.value.key == "sandbox"


def test_the_operators_config_file_opens_addresses_to_the_setup_step(tmp_path: Path) -> None:
    path = write(
        tmp_path / "ops.toml", '[sandbox]\nallow_addresses = ["10.1.2.3", "10.9.0.0/16"]\n'
    )
    allowed = load_config(tmp_path, path).sandbox.allow_addresses
    assert allowed == [IPv4Network("10.1.2.3/32"), IPv4Network("10.9.0.0/16")]


def test_an_address_no_sandbox_opens_names_the_key(tmp_path: Path) -> None:
    path = write(tmp_path / "ops.toml", '[sandbox]\nallow_addresses = ["169.254.169.254"]\n')
    with pytest.raises(ConfigError, match="never opened") as caught:
        load_config(tmp_path, path)
    assert caught.value.key == "sandbox.allow_addresses.0"
