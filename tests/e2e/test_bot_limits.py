"""Operator limits enforced end to end: a repository's cra.toml asks for far more than the
server allows, and the run stops at the server's maximum, saying which limit and who sets it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.intake.triggers import Trigger
from bot.store.runs import Run
from tests.e2e.bot_world import REPO, BotWorld
from tests.fakes.github_server import FakeGitHub
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.repos import ISOLATED_GIT_ENV, TEST_COMMAND

GREEDY = {
    "budget": {"max_tokens_per_run": 50_000_000, "max_tokens_per_step": 9_000_000},
    "orchestrator": {"max_retries_per_step": 9, "max_calls_per_step": 500},
    "testing": {"timeout": 3600.0},
}


def greedy_toml(test_command: str = TEST_COMMAND) -> str:
    """A cra.toml asking for far more than any server allows."""
    lines = []
    for section, values in GREEDY.items():
        lines.append(f"[{section}]")
        if section == "testing":
            lines.append(f"test_command = {json.dumps(test_command)}")
        lines += [f"{key} = {value!r}" for key, value in values.items()]
    return "\n".join([*lines, "[retrieval]", "stages = []"]) + "\n"


@pytest.fixture(autouse=True)
def isolated_git(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in ISOLATED_GIT_ENV.items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def world_with(tmp_path: Path) -> Iterator[Any]:
    """Builds the bot world with a greedy repository and the given server maximums."""
    worlds: list[BotWorld] = []
    with FakeGitHub() as fake, ScriptedModelServer() as models:

        def build(cra_toml: str | None = None, **server: Any) -> BotWorld:
            world = BotWorld(tmp_path, fake, models, cra_toml=cra_toml or greedy_toml(), **server)
            worlds.append(world)
            return world

        try:
            yield build
        finally:
            for world in worlds:
                world.close()


def told(world: BotWorld, run: Run) -> str:
    """Everything cra wrote about the run: its comments and its pull request's body."""
    texts = [
        c.body
        for c in world.fake.comments(REPO, run.issue_number)
        if c.user.login == world.fake.bot_login
    ]
    texts += [p.body or "" for p in world.fake.pulls(REPO)]
    return "\n".join(texts).replace("\\", "")  # Markdown escapes undone


def stages(world: BotWorld) -> list[str | None]:
    return [r.stage for r in world.models.requests if r.method == "POST"]


def test_the_server_caps_the_tokens_of_a_run(world_with: Any) -> None:
    world = world_with(max_tokens_per_run=400)
    world.script_fix()
    run = world.run(world.label_issue())
    assert run.status == "failed"
    text = told(world, run)
    assert "budget.max_tokens_per_run = 400 tokens" in text
    assert "CRA_MAX_TOKENS_PER_RUN" in text and "50,000,000" in text


def test_the_server_caps_the_tokens_of_a_step(world_with: Any) -> None:
    world = world_with(max_tokens_per_step=600)
    world.script_fix()
    run = world.run(world.label_issue())
    assert "implement" not in stages(world)  # no step prompt fits 600 tokens
    text = told(world, run)
    assert "budget.max_tokens_per_step = 600 tokens" in text
    assert "CRA_MAX_TOKENS_PER_STEP" in text and "9,000,000" in text


def test_the_server_caps_the_model_calls_of_a_step(world_with: Any) -> None:
    world = world_with(max_calls_per_step=1)
    world.script_fix(second_step_fails=True)
    run = world.run(world.label_issue())
    assert run.status == "partial"
    assert "implement_retry" not in stages(world)  # the retry would be the step's 2nd call
    text = told(world, run)
    assert "orchestrator.max_calls_per_step = 1 model calls" in text
    assert "CRA_MAX_CALLS_PER_STEP" in text


def test_the_server_caps_the_retries_of_a_step(world_with: Any) -> None:
    world = world_with(max_retries_per_step=0)
    world.script_fix(second_step_fails=True)
    run = world.run(world.label_issue())
    assert run.status == "partial"
    assert stages(world).count("implement") == 2 and "implement_retry" not in stages(world)


def test_the_server_caps_the_test_timeout(world_with: Any) -> None:
    slow = f"sleep 30; {TEST_COMMAND}"  # killed at the server's maximum, not the asked hour
    world = world_with(cra_toml=greedy_toml(slow), max_test_timeout=1.0, max_retries_per_step=0)
    world.script_fix()
    run = world.run(world.label_issue())
    assert run.status == "failed"
    text = told(world, run)
    assert "the tests ran out of time: testing.timeout = 1 s" in text
    assert "CRA_MAX_TEST_TIMEOUT" in text and "3,600" in text


def _running(world: BotWorld, number: int, installation_id: int) -> None:
    """Another run, already running, on issue `number`."""
    store = world.services.store
    other = store.create_run(
        Trigger(
            command="solve",
            repository=REPO,
            issue_number=number,
            actor="Codertocat",
            source="label",
            installation_id=installation_id,
            delivery_id=f"d-{number}",
        )
    )
    assert store.claim_run(other.id)


def test_a_run_over_the_repositorys_limit_is_refused_saying_so(world_with: Any) -> None:
    world = world_with(max_runs_per_repository=1)
    _running(world, 5, world.fake.installation_id)
    run = world.run(world.label_issue())
    assert run.status == "rejected" and run.error == "over CRA_MAX_RUNS_PER_REPOSITORY (1)"
    text = told(world, run)
    assert "1 other run is in progress in this repository" in text
    assert "set by this cra server's operator" in text
    assert world.models.requests == [] and world.fake.pulls(REPO) == []


def test_a_run_over_the_installations_limit_is_refused_saying_so(world_with: Any) -> None:
    world = world_with(max_runs_per_installation=2)
    _running(world, 5, world.fake.installation_id)
    _running(world, 6, world.fake.installation_id)
    run = world.run(world.label_issue())
    assert run.status == "rejected"
    assert "CRA_MAX_RUNS_PER_INSTALLATION" in told(world, run)
