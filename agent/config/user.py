"""The user's own config file, `~/.config/cra/config.toml`: their model servers (laid under every
repository's) and whom they trust."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator

from agent.config.files import ModelsConfig, Section, config_error, read_config_file

USER_CONFIG = "cra/config.toml"  # under $XDG_CONFIG_HOME, else ~/.config


class TrustConfig(Section):
    """Whom the user trusts: checkouts whose own cra.toml applies whole, and the variables any
    repository's `testing.env` may pass."""

    repositories: list[str] = Field(default_factory=list)
    env: list[str] = Field(default_factory=list)

    @field_validator("repositories")
    @classmethod
    def _absolute(cls, paths: list[str]) -> list[str]:
        for path in paths:
            if not (path.startswith("/") or path == "~" or path.startswith("~/")):
                raise ValueError(
                    f"{path!r} is not an absolute path: name the checkout as "
                    "/path/to/it or ~/path/to/it"
                )
        return paths


class UserConfig(Section):
    """The user's own file: their model servers (under every repository's) and whom they trust."""

    models: ModelsConfig = Field(default_factory=ModelsConfig)
    trust: TrustConfig = Field(default_factory=TrustConfig)
    source: str | None = None

    def models_set(self) -> dict[str, Any]:
        """The [models] keys the file sets, as a mapping to lay under a repository's."""
        return self.models.model_dump(exclude_unset=True)


def user_config_path(environ: Mapping[str, str]) -> Path | None:
    """`$XDG_CONFIG_HOME/cra/config.toml`, else `~/.config/cra/config.toml` (None with no HOME)."""
    if environ.get("XDG_CONFIG_HOME"):
        return Path(environ["XDG_CONFIG_HOME"]) / USER_CONFIG
    if environ.get("HOME"):
        return Path(environ["HOME"]) / ".config" / USER_CONFIG
    return None


def load_user_config(environ: Mapping[str, str]) -> UserConfig:
    """The user's own config file (empty when there is none); ConfigError naming it if wrong."""
    path = user_config_path(environ)
    if path is None or not path.is_file():
        return UserConfig()
    try:
        return UserConfig.model_validate({**read_config_file(path), "source": str(path)})
    except ValidationError as exc:
        raise config_error(exc, str(path), UserConfig) from exc
