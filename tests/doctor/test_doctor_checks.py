"""agent.doctor.checks: what a finding tells the user to fix names a key that exists, in the
file that sets it."""

from __future__ import annotations

from agent.config.files import ModelConfig
from agent.doctor.checks import in_config, model_finding
from agent.llm.probe import ModelState, ServerState
from bot.cli.startup import in_environment


def refused(config: ModelConfig) -> ModelState:
    server = ServerState(
        url=config.base_url,
        provider=config.provider,
        reachable=True,
        problem=f"{config.base_url}/v1/models refused the API key (401)",
    )
    return ModelState(server=server, name=config.model, present=None)


def test_a_refused_key_points_at_the_setting_that_holds_it() -> None:
    config = ModelConfig(provider="openai", base_url="http://h:1", model="m")
    in_file = model_finding("coding", config, refused(config), in_config("cra.toml"))
    assert in_file.fix == "check models.coding.api_key_env in cra.toml"
    in_env = model_finding("coding", config, refused(config), in_environment)
    assert in_env.fix == "check CRA_CODING_API_KEY"


def test_an_untrusted_repository_s_server_and_key_are_fixed_in_your_own_file() -> None:
    where = in_config("repo/cra.toml", "~/.config/cra/config.toml")

    assert where("coding", "base_url") == "models.coding.base_url in ~/.config/cra/config.toml"
    assert where("coding", "api_key") == "models.coding.api_key_env in ~/.config/cra/config.toml"
    assert where("coding", "model") == "models.coding.model in repo/cra.toml"
