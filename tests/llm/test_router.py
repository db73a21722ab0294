"""ModelRouter: role → config and one cached client per role."""

from __future__ import annotations

from typing import Any

import pytest

from agent.config.files import ModelConfig, ModelsConfig
from agent.errors import ConfigError
from agent.llm.router import ModelRouter
from agent.models import LLMResponse, Usage


class FakeChatModel:
    """A ChatModel that answers "ok" and remembers whether it was closed."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.closed = False

    def complete(
        self,
        system: str,
        user: str,
        *,
        json_schema: dict[str, Any] | None = None,
        json_mode: bool = False,
        stage: str = "",
        temperature: float | None = None,
    ) -> LLMResponse:
        return LLMResponse(text="ok", raw_text="ok", model=self.config.model, usage=Usage())

    def close(self) -> None:
        self.closed = True


MODELS = ModelsConfig.model_validate(
    {"reasoning": {"model": "big"}, "coding": {"model": "coder"}, "classifier": {"model": "tiny"}}
)


def test_config_returns_the_roles_model():
    router = ModelRouter(MODELS, factory=FakeChatModel)
    assert router.config("coding").model == "coder"
    assert router.config("classifier").model == "tiny"


def test_client_is_built_once_per_role():
    built: list[str] = []

    def factory(config: ModelConfig) -> FakeChatModel:
        built.append(config.model)
        return FakeChatModel(config)

    router = ModelRouter(MODELS, factory=factory)
    assert router.client("reasoning") is router.client("reasoning")
    assert router.client("coding") is not router.client("reasoning")
    assert built == ["big", "coder"]


def test_close_closes_every_built_client():
    clients: list[FakeChatModel] = []

    def factory(config: ModelConfig) -> FakeChatModel:
        clients.append(FakeChatModel(config))
        return clients[-1]

    router = ModelRouter(MODELS, factory=factory)
    router.client("reasoning")
    router.client("classifier")
    router.close()
    assert [c.closed for c in clients] == [True, True]


def test_unknown_role_is_a_config_error():
    router = ModelRouter(MODELS, factory=FakeChatModel)
    with pytest.raises(ConfigError, match="unknown model role"):
        router.config("writer")  # type: ignore[arg-type]
