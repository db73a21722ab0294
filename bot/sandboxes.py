"""The bot's sandbox and environment cache from its settings, and the start-up self-check."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from agent.sandbox.base import Sandbox, SandboxUnavailable
from agent.sandbox.bwrap import build_sandbox
from agent.sandbox.check import self_check
from agent.sandbox.envcache import EnvCache
from bot.environment import process_environment
from bot.errors import SettingsError
from bot.settings import BotSettings

log = logging.getLogger(__name__)


def build_bot_sandbox(settings: BotSettings, environ: Mapping[str, str]) -> Sandbox:
    """The configured sandbox, hiding the bot's files; SettingsError (fail closed) when it is
    not available here, saying how to install it or how to opt out."""
    home = Path(environ["HOME"]) if environ.get("HOME") else None
    try:
        return build_sandbox(
            settings.sandbox,
            hide=settings.sandbox_hidden(home),
            limits=settings.sandbox_limits(),
            allow_network=settings.sandbox_network,
            allow_addresses=settings.sandbox_allow_addresses,
        )
    except SandboxUnavailable as exc:
        raise SettingsError(str(exc)) from exc


def check_sandbox(settings: BotSettings, sandbox: Sandbox) -> list[str]:
    """The start-up self-check: prove the sandbox confines before any worker starts."""
    try:
        facts = self_check(sandbox, data_dir=settings.data_dir / "work")
    except SandboxUnavailable as exc:
        raise SettingsError(str(exc)) from exc
    log.info("sandbox: %s", "; ".join(facts))
    return facts


def build_env_cache(settings: BotSettings) -> EnvCache | None:
    """The environment cache under the data dir; None when CRA_ENV_CACHE_MB is 0."""
    if settings.env_cache_mb == 0:
        return None
    return EnvCache(settings.data_dir / "envcache", max_bytes=settings.env_cache_mb << 20)


def startup_check(settings: BotSettings) -> list[str]:
    """Build the configured sandbox and prove it works; SettingsError (refuse to start) if not."""
    return check_sandbox(settings, build_bot_sandbox(settings, process_environment()))
