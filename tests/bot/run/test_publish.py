"""A run's push over the fake GitHub's git smart-HTTP: tried again after a passing failure, with
a growing wait (an injected sleep), a few times at most; never after GitHub refused it; a push
that landed though its answer was lost ends pushed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.errors import GitError
from agent.git.remotes import mirror_sync, push_rejection
from agent.git.worktrees import add_worktree
from bot.github.api import GitHubAPI
from bot.github.tokens import StaticToken
from bot.run import publish
from tests.fakes.github_server import FakeGitHub
from tests.fakes.repos import (
    IDENTITY_ENV,
    ISOLATED_GIT_ENV,
    commit_file,
    git_in,
    make_python_project,
)

REPO = "acme/calc"
BRANCH = "cra/issue-1"
PUSHES = r"/git-receive-pack$"
TOKEN = "ghs_publish"
# Ends GitHub's receive the moment the branch is updated, before it reports: the push landed,
# its answer is lost (once: the hook removes itself).
ANSWER_LOST = """#!/bin/sh
cat >/dev/null
if [ "$1" = committed ]; then rm -f -- "$0"; kill -9 "$PPID"; fi
exit 0
"""


class Sleeps:
    """An injected sleep that only records."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


class Pushing:
    """A mirror of the fake GitHub's repository with one commit on BRANCH to push."""

    def __init__(self, gh: FakeGitHub, tmp_path: Path) -> None:
        self.gh = gh
        api = GitHubAPI(gh.api_url, gh.git_url, StaticToken(TOKEN))
        self.url, self.env = api.clone_url(REPO), api.git_auth_env(None)
        self.mirror = mirror_sync(self.url, tmp_path / "mirror.git", env=self.env)
        worktree = add_worktree(self.mirror, tmp_path / "wt", commit="main", branch=BRANCH)
        self.commit = commit_file(
            worktree, "calc/ops.py", "def mul(a, b):\n    return a * b\n", "Fix mul"
        )
        self.sleeps = Sleeps()

    def push(self, replacing: str | None = "") -> None:
        publish.push(self.branch_push(replacing), publish.Retries(sleep=self.sleeps))

    def branch_push(self, replacing: str | None) -> publish.BranchPush:
        return publish.BranchPush(self.mirror, self.url, BRANCH, env=self.env, replacing=replacing)


@pytest.fixture
def gh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    for name, value in {**ISOLATED_GIT_ENV, **IDENTITY_ENV}.items():
        monkeypatch.setenv(name, value)
    with FakeGitHub() as fake:
        fake.add_repo(REPO, make_python_project(tmp_path / "source"))
        fake.add_static_token(TOKEN)
        yield fake


@pytest.fixture
def pushing(gh: FakeGitHub, tmp_path: Path) -> Pushing:
    return Pushing(gh, tmp_path)


def test_a_push_that_fails_once_is_tried_again_after_a_wait(pushing: Pushing) -> None:
    pushing.gh.fail_next("POST", PUSHES, 502)

    pushing.push()

    assert pushing.gh.branch_sha(REPO, BRANCH) == pushing.commit
    assert pushing.sleeps.calls == [publish.PUSH_BACKOFF]


def test_a_push_that_keeps_failing_gives_up_after_its_last_try(pushing: Pushing) -> None:
    pushing.gh.fail_next("POST", PUSHES, 500, times=publish.PUSH_ATTEMPTS)

    with pytest.raises(GitError):
        pushing.push()

    assert pushing.gh.branch_sha(REPO, BRANCH) is None
    assert pushing.sleeps.calls == [
        publish.PUSH_BACKOFF * 2**n for n in range(publish.PUSH_ATTEMPTS - 1)
    ]


def test_a_push_github_refused_is_not_tried_again(pushing: Pushing) -> None:
    main = pushing.gh.branch_sha(REPO, "main")
    git_in(pushing.gh.repo_path(REPO), "update-ref", f"refs/heads/{BRANCH}", str(main))

    with pytest.raises(GitError) as refused:
        pushing.push(replacing="")  # the run saw no branch: someone pushed one meanwhile

    assert push_rejection(refused.value) is not None
    assert pushing.sleeps.calls == []
    assert pushing.gh.branch_sha(REPO, BRANCH) == main


def test_a_push_refused_while_its_ref_is_locked_on_github_is_tried_again(
    pushing: Pushing,
) -> None:
    lock = pushing.gh.repo_path(REPO) / "refs" / "heads" / f"{BRANCH}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.touch()  # an update in progress there, or a receive that crashed mid-update

    def release(seconds: float) -> None:
        pushing.sleeps(seconds)
        lock.unlink()

    publish.push(pushing.branch_push(replacing=""), publish.Retries(sleep=release))

    assert pushing.gh.branch_sha(REPO, BRANCH) == pushing.commit
    assert pushing.sleeps.calls == [publish.PUSH_BACKOFF]


def test_a_push_that_landed_though_its_answer_was_lost_ends_pushed(pushing: Pushing) -> None:
    hook = pushing.gh.repo_path(REPO) / "hooks" / "reference-transaction"
    hook.write_text(ANSWER_LOST)
    hook.chmod(0o755)

    pushing.push(replacing="")  # the run saw no branch; its first try made it

    assert pushing.gh.branch_sha(REPO, BRANCH) == pushing.commit
    assert not hook.exists()  # the first try did land, and its answer was lost
    assert pushing.sleeps.calls == [publish.PUSH_BACKOFF]  # the second found it up to date
