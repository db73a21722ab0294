"""The process environment read whole, not field by field as BotSettings reads it.

What GitHub Actions tells a job, the CRA_ variables the settings read (one per key of a model
role's endpoint) and those no setting reads, and the part of the environment repository commands
may see.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dotenv import dotenv_values

from agent.console import unknown_variables
from bot.errors import SettingsError
from bot.model_endpoints import ModelEndpoint, check_role, role_defaults
from bot.settings import ActionsEnvironment, BotSettings

READ_ELSEWHERE = ("CRA_APP_SLUG",)  # written by `cra-bot register` for people, read by nothing
OTHER_TOOLS = ("CRA_TEST_", "CRA_MODEL_")  # read by the test suite, the demo, the workflow


@dataclass(frozen=True)
class SettingVariable:
    """One CRA_ variable: its name, where its value lands in BotSettings, meaning and default."""

    name: str
    path: tuple[str, ...]
    description: str
    default: Any


def environment_variables() -> list[SettingVariable]:
    """Every CRA_ variable BotSettings reads, in the order of its fields; a role's endpoint is
    one variable per key (CRA_CODING_BASE_URL, …)."""
    found: list[SettingVariable] = []
    for name, field in BotSettings.model_fields.items():
        if field.annotation is not ModelEndpoint:
            default = field.get_default(call_default_factory=True)
            description = field.description or ""
            found.append(SettingVariable(f"CRA_{name.upper()}", (name,), description, default))
            continue
        role = check_role(name)
        defaults = role_defaults(role)
        for key, inner in ModelEndpoint.model_fields.items():
            found.append(
                SettingVariable(
                    f"CRA_{name.upper()}_{key.upper()}",
                    (name, key),
                    (inner.description or "").format(role=role),
                    defaults[key] if key in defaults else inner.get_default(),
                )
            )
    return found


def setting_variables() -> list[str]:
    """Every CRA_ variable BotSettings reads."""
    return [found.name for found in environment_variables()]


def unknown_settings(
    environ: Mapping[str, str], env_file: Path | None = None
) -> list[tuple[str, str | None]]:
    """CRA_ variables of the environment (and the .env file) that no setting reads, each with
    its nearest setting when it looks like a typo of one."""
    names = dict(environ)
    if env_file is not None and env_file.is_file():
        names.update({k: v or "" for k, v in dotenv_values(env_file).items()})
    return unknown_variables(names, [*setting_variables(), *READ_ELSEWHERE], ignore=OTHER_TOOLS)


def actions_environment(environ: Mapping[str, str] | None = None) -> ActionsEnvironment:
    """The Actions variables `cra-bot action` needs; SettingsError naming what is missing."""
    env = os.environ if environ is None else environ
    wanted = {
        "event_name": "GITHUB_EVENT_NAME",
        "event_path": "GITHUB_EVENT_PATH",
        "token": "GITHUB_TOKEN",
        "repository": "GITHUB_REPOSITORY",
    }
    missing = [var for var in wanted.values() if not env.get(var)]
    if missing:
        raise SettingsError(f"not inside GitHub Actions? missing {', '.join(missing)}")
    return ActionsEnvironment(
        **{key: env[var] for key, var in wanted.items()},
        api_url=env.get("GITHUB_API_URL", "https://api.github.com"),
        server_url=env.get("GITHUB_SERVER_URL", "https://github.com"),
        run_id=env.get("GITHUB_RUN_ID", ""),
        temp_dir=env.get("RUNNER_TEMP"),
    )


def process_environment() -> dict[str, str]:
    """The process environment (the settings' checks read it whole)."""
    return dict(os.environ)


def repository_environment(allowed: Sequence[str] = ()) -> dict[str, str]:
    """What of the process environment the repository's commands may see: the base variables
    and those CRA_TEST_ENV allows, without secret-looking names (agent.gate.validation). A
    repository's `testing.env` chooses among these, never from the server's whole environment
    (its cloud credentials, its database URL)."""
    from agent.sandbox.commands import scrubbed_env

    return scrubbed_env(os.environ, allowed)
