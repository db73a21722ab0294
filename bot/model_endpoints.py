"""ModelEndpoint: the server of one model role as the bot's settings name it (CRA_<ROLE>_*)."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, Field, SecretStr, field_validator

from agent.config.files import DEFAULT_OLLAMA_URL, ROLE_DEFAULTS, ModelConfig, check_endpoint
from agent.models import ModelRole

Provider = Literal["ollama", "openai"]
ROLES: tuple[ModelRole, ...] = get_args(ModelRole)
DEFAULT_WINDOW = 16384


class ModelEndpoint(BaseModel):
    """A role's model server: wire format, URL, model name, key and window. `{role}` in a
    description stands for the role's name (the docs' table and error messages fill it in)."""

    provider: Provider = Field(
        default="ollama", description="Wire format of the {role} model: ollama | openai."
    )
    base_url: str = Field(
        default=DEFAULT_OLLAMA_URL,
        description="Endpoint of the {role} model's server (http(s), no user:password@ in it).",
    )
    model: str = Field(description="Model name of the {role} role.")
    api_key: SecretStr | None = Field(
        default=None, description="API key of the {role} model's server (never logged)."
    )
    context_window: int = Field(gt=0, description="Context window (tokens) of the {role} model.")

    @field_validator("base_url")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        return check_endpoint(value)

    def as_model_config(self, role: ModelRole) -> ModelConfig:
        """The agent's model config of the role: endpoint, name and window from here, the rest
        the agent's defaults for the role."""
        return ModelConfig(
            **{
                **ROLE_DEFAULTS[role],
                "provider": self.provider,
                "base_url": self.base_url,
                "model": self.model,
                "context_window": self.context_window,
            }
        )

    def key(self) -> str | None:
        """The API key of the server, or None (an empty key is none)."""
        secret = self.api_key.get_secret_value() if self.api_key is not None else ""
        return secret or None


def role_defaults(role: ModelRole) -> dict[str, Any]:
    """What a role's endpoint is when not told otherwise: the agent's model name and window."""
    defaults = ROLE_DEFAULTS[role]
    return {
        "model": defaults["model"],
        "context_window": defaults.get("context_window", DEFAULT_WINDOW),
    }


def default_endpoint(role: ModelRole) -> Any:
    """The settings field of a role's endpoint, defaulting to the agent's model for the role."""
    return Field(
        default_factory=lambda: ModelEndpoint(**role_defaults(role)),
        description=f"The {role} model's server (CRA_{role.upper()}_*).",
    )


def check_role(role: str) -> ModelRole:
    """`role` as a model role; ValueError unless it is one of the three."""
    for known in ROLES:
        if role == known:
            return known
    raise ValueError(f"unknown model role {role!r}; expected one of {', '.join(ROLES)}")
