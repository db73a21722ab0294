"""A run's push that GitHub drops is tried again: the labeled issue still becomes a pull request
(the fake GitHub over git smart-HTTP, the scripted models, SQLite and the thread queue)."""

from __future__ import annotations

import pytest

from bot import publish
from tests.e2e.bot_world import REPO, BotWorld

pytestmark = pytest.mark.usefixtures("isolated_git")
PUSHES = r"/git-receive-pack$"


def test_a_push_github_drops_once_is_tried_again_and_the_pull_request_opens(
    world: BotWorld,
) -> None:
    world.script_fix()
    world.fake.fail_next("POST", PUSHES, 502)
    waits: list[float] = []
    world.services.sleep = waits.append

    run = world.run(world.label_issue())

    assert run.status == "succeeded", run.error
    assert waits == [publish.PUSH_BACKOFF]
    [pull] = world.fake.pulls(REPO)
    assert pull.head_ref == "cra/issue-1" and run.pr_url and run.pr_url.endswith(
        f"/pull/{pull.number}")


def test_a_push_github_keeps_dropping_fails_the_run_after_its_last_try(world: BotWorld) -> None:
    world.script_fix()
    world.fake.fail_next("POST", PUSHES, 502, times=publish.PUSH_ATTEMPTS)
    waits: list[float] = []
    world.services.sleep = waits.append

    run = world.run(world.label_issue())

    assert run.status == "failed" and "git push failed" in (run.error or ""), run.error
    assert len(waits) == publish.PUSH_ATTEMPTS - 1
    assert world.fake.pulls(REPO) == [] and world.fake.branch_sha(REPO, "cra/issue-1") is None
