"""A run's push recovers: one GitHub drops is tried again, and the late push of an earlier run
whose worker was killed mid-push is replaced, not blamed on someone (the fake GitHub over git
smart-HTTP, the scripted models, SQLite and the thread queue)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from agent.run.landing.attempt import AUTHOR_EMAIL, AUTHOR_NAME
from bot.mirrors import MirrorCache
from bot.run import publish
from tests.e2e.bot_world import REPO, BotWorld
from tests.fakes.repos import git_env, git_in

pytestmark = pytest.mark.usefixtures("isolated_git")
PUSHES = r"/git-receive-pack$"
BRANCH = "cra/issue-1"


def land_on_github(world: BotWorld, *, author: tuple[str, str]) -> str:
    """A commit by `author` (name, email) on top of main lands as BRANCH on the fake GitHub, as
    a push would leave it; its sha."""
    bare = world.fake.repo_path(REPO)
    main = git_in(bare, "rev-parse", "refs/heads/main").strip()
    name, email = author
    env = {**git_env(), "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email}
    sha = subprocess.run(
        ["git", "commit-tree", f"{main}^{{tree}}", "-p", main, "-m", "Late"],
        cwd=bare,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    git_in(bare, "update-ref", f"refs/heads/{BRANCH}", sha.strip())
    return sha.strip()


class LandsAfterTheSync(MirrorCache):
    """The run's mirror, synced; right after, a push lands on GitHub — here the git push of a
    killed worker, which outlived it."""

    def __init__(self, root: Path, land: Callable[[], str]) -> None:
        super().__init__(root)
        self._land = land
        self.landed: list[str] = []

    def sync(self, repository: str, url: str, *, env: Mapping[str, str]) -> Path:
        mirror = super().sync(repository, url, env=env)
        self.landed.append(self._land())
        return mirror


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
    assert (
        pull.head_ref == "cra/issue-1"
        and run.pr_url
        and run.pr_url.endswith(f"/pull/{pull.number}")
    )


def test_a_push_github_keeps_dropping_fails_the_run_after_its_last_try(world: BotWorld) -> None:
    world.script_fix()
    world.fake.fail_next("POST", PUSHES, 502, times=publish.PUSH_ATTEMPTS)
    waits: list[float] = []
    world.services.sleep = waits.append

    run = world.run(world.label_issue())

    assert run.status == "failed" and "git push failed" in (run.error or ""), run.error
    assert len(waits) == publish.PUSH_ATTEMPTS - 1
    assert world.fake.pulls(REPO) == [] and world.fake.branch_sha(REPO, "cra/issue-1") is None


def test_a_killed_runs_push_landing_late_is_replaced_and_the_pull_request_opens(
    world: BotWorld,
) -> None:
    world.script_fix()
    late = LandsAfterTheSync(
        world.settings.data_dir / "mirrors",
        lambda: land_on_github(world, author=(AUTHOR_NAME, AUTHOR_EMAIL)),
    )
    world.services.mirrors = late

    run = world.run(world.label_issue())

    assert run.status == "succeeded", run.error
    head = world.fake.branch_sha(REPO, BRANCH)
    assert late.landed and head is not None and head != late.landed[0]  # replaced by the run's
    [pull] = world.fake.pulls(REPO)
    assert pull.head_ref == BRANCH


def test_a_persons_push_landing_while_cra_works_is_still_kept(world: BotWorld) -> None:
    world.script_fix()
    late = LandsAfterTheSync(
        world.settings.data_dir / "mirrors",
        lambda: land_on_github(world, author=("Ada", "ada@example.com")),
    )
    world.services.mirrors = late

    run = world.run(world.label_issue())

    assert run.status == "failed" and f"push to {BRANCH} rejected" in (run.error or "")
    assert world.fake.branch_sha(REPO, BRANCH) == late.landed[0]
    assert world.fake.pulls(REPO) == []
