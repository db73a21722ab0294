"""Shared by the end-to-end tests that want them: git isolated from the user's config, and a
whole bot on loopback (tests/e2e/bot_world.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.bot_world import BotWorld
from tests.fakes.github_server import FakeGitHub
from tests.fakes.model_server import ScriptedModelServer


@pytest.fixture
def world(tmp_path: Path, isolated_git: None) -> Iterator[BotWorld]:
    """The fake GitHub with the calc project, scripted models and the bot on SQLite."""
    with FakeGitHub() as fake, ScriptedModelServer() as models:
        w = BotWorld(tmp_path, fake, models)
        try:
            yield w
        finally:
            w.close()


@pytest.fixture
def public_world(tmp_path: Path, isolated_git: None) -> Iterator[BotWorld]:
    """The same world with public run pages, for tests that read a run page's content."""
    with FakeGitHub() as fake, ScriptedModelServer() as models:
        w = BotWorld(tmp_path, fake, models, run_pages="public")
        try:
            yield w
        finally:
            w.close()
