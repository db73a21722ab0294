"""A run on GitHub whose setup step fails: the comment and the run page say which command
failed, how it ended and what it printed last — never a secret it printed."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.store.runs import Run
from tests.e2e.bot_world import BotWorld
from tests.fakes.github_server import FakeGitHub
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.repos import TEST_COMMAND

SETUP = (
    "echo 'added 12 packages'; "
    "echo 'npm ERR! fetch https://me:hunter2pass@git.example/dep.git: no route' >&2; exit 128"
)
CRA_TOML = (
    f"[testing]\nsetup_command = {json.dumps(SETUP)}\ntest_command = {json.dumps(TEST_COMMAND)}\n"
)


@pytest.fixture
def world(tmp_path: Path, isolated_git: None) -> Iterator[BotWorld]:
    with FakeGitHub() as fake, ScriptedModelServer() as models:
        w = BotWorld(tmp_path, fake, models, cra_toml=CRA_TOML, run_pages="public")
        try:
            yield w
        finally:
            w.close()


@pytest.fixture
def run(world: BotWorld) -> Run:
    return world.run(world.label_issue())


def test_the_comment_of_a_failed_setup_shows_its_status_and_last_lines(
    world: BotWorld, run: Run
) -> None:
    assert run.status == "failed"
    assert "exited with status 128" in (run.error or "")
    [ours] = [
        c for c in world.fake.comments("Codertocat/Hello-World", 1) if c.body and "setup" in c.body
    ]
    assert "exited with status 128" in ours.body
    assert "Output of the setup step" in ours.body
    assert "added 12 packages" in ours.body and "git.example/dep.git: no route" in ours.body
    assert "hunter2pass" not in ours.body
    assert world.models.requests == []


def test_the_run_page_of_a_failed_setup_shows_its_status_and_last_lines(
    world: BotWorld, run: Run
) -> None:
    page = world.client.get(f"/runs/{run.id}").get_data(as_text=True)
    setup = re.search(r'<dd id="setup">(.*?)</dd>', page, re.S)
    assert setup is not None
    assert "exited with status 128" in setup.group(1)
    output = re.search(r'<pre id="setup-output">(.*?)</pre>', page, re.S)
    assert output is not None and "added 12 packages" in output.group(1)
    assert "hunter2pass" not in page
