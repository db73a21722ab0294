"""The process environment read whole, not field by field as BotSettings reads it.

What GitHub Actions tells a job, the CRA_ variables no setting reads, and the part of the
environment repository commands may see.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from dotenv import dotenv_values

from agent.console import unknown_variables
from bot.errors import SettingsError
from bot.settings import ActionsEnvironment, BotSettings

READ_ELSEWHERE = ("CRA_APP_SLUG",)  # written by `cra-bot register` for people, read by nothing
OTHER_TOOLS = ("CRA_TEST_", "CRA_MODEL_")  # read by the test suite, the demo, the workflow


def setting_variables() -> list[str]:
    """Every CRA_ variable BotSettings reads."""
    return [f"CRA_{name.upper()}" for name in BotSettings.model_fields]


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
