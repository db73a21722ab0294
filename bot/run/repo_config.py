"""The effective SolveConfig of a run: the repository's cra.toml over the server's models."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from agent.config.files import (
    DEFAULT_PROTECTED,
    ROLE_DEFAULTS,
    ModelConfig,
    SolveConfig,
    load_config,
)
from agent.errors import ConfigError
from bot.model_endpoints import ROLES
from bot.run.limits import Limit, MaximumSettings, cap


class ModelSettings(Protocol):
    """What the server's settings say about models."""

    @property
    def allowed_models(self) -> list[str]:
        """Model names a repository may choose."""
        ...

    def model_config_for(self, role: str) -> ModelConfig:
        """The server's endpoint, key and model for a role."""
        ...


class ServerSettings(ModelSettings, MaximumSettings, Protocol):
    """The server's models and maximums."""


def limited_config(worktree: Path, settings: ServerSettings) -> tuple[SolveConfig, list[Limit]]:
    """The effective config under the server's maximums, and each limit with who set it."""
    return cap(effective_config(worktree, settings), settings)


def effective_config(worktree: Path, settings: ModelSettings) -> SolveConfig:
    """The repository's `.github/cra.toml` (or `cra.toml`) with the server's model endpoints.

    A repository may not set endpoints or keys (an error naming the key); it may pick a model
    name only from the server's allow-list. The server's maximums are `limited_config`'s.
    """
    repository_config = load_config(worktree, allow_endpoints=False)
    models: dict[str, ModelConfig] = {
        role: _model(role, getattr(repository_config.models, role), settings) for role in ROLES
    }
    # A repository may protect more paths, never fewer: the bot does not edit workflows.
    protected = list(
        dict.fromkeys([*DEFAULT_PROTECTED, *repository_config.orchestrator.protected_paths])
    )
    orchestrator = repository_config.orchestrator.model_copy(update={"protected_paths": protected})
    return repository_config.model_copy(
        update={
            "models": repository_config.models.model_copy(update=models),
            "orchestrator": orchestrator,
        }
    )


def _model(role: str, asked: ModelConfig, settings: ModelSettings) -> ModelConfig:
    server = settings.model_config_for(role)
    wanted = asked.model
    if wanted in (ROLE_DEFAULTS[role]["model"], server.model):
        return server
    if wanted not in settings.allowed_models:
        raise ConfigError(
            f"models.{role}.model = {wanted!r} is not one of the models this server allows "
            f"({', '.join(settings.allowed_models) or 'none'})",
            key=f"models.{role}.model",
        )
    return server.model_copy(update={"model": wanted})
