"""Role → model: which configured model and client serve reasoning, coding and classifying."""

from __future__ import annotations

import threading
from collections.abc import Callable

from agent.config.files import ModelConfig, ModelsConfig
from agent.errors import ConfigError
from agent.llm.client import ChatModel
from agent.models import ModelRole

ROLES: tuple[ModelRole, ...] = ("reasoning", "coding", "classifier")


class ModelRouter:
    """One ChatModel per role, built on first use by the injected factory and cached."""

    def __init__(
        self, models: ModelsConfig, *, factory: Callable[[ModelConfig], ChatModel]
    ) -> None:
        self._models = models
        self._factory = factory
        self._clients: dict[ModelRole, ChatModel] = {}
        self._lock = threading.Lock()

    def config(self, role: ModelRole) -> ModelConfig:
        """The model configuration of a role."""
        if role not in ROLES:
            raise ConfigError(f"unknown model role {role!r}; expected one of {', '.join(ROLES)}")
        config: ModelConfig = getattr(self._models, role)
        return config

    def client(self, role: ModelRole) -> ChatModel:
        """The role's client, built once."""
        config = self.config(role)
        with self._lock:
            if role not in self._clients:
                self._clients[role] = self._factory(config)
            return self._clients[role]

    def close(self) -> None:
        """Close every client built so far."""
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()
