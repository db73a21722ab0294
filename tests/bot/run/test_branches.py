"""An issue run's branch: afresh over cra's own attempt, on top of anyone else's commits."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.git import repo as git
from agent.run.landing.attempt import AUTHOR_EMAIL, AUTHOR_NAME
from bot.run.branches import IssueBranch, issue_branch
from tests.fakes.repos import commit_file, git_in, make_python_project

BRANCH = "cra/issue-3"


def planned(repo: Path) -> IssueBranch:
    return issue_branch(repo, "main", BRANCH)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_python_project(tmp_path / "repo")


def commit_on(repo: Path, branch: str, rel: str, *, by_cra: bool) -> str:
    """A commit on `branch` (made from main when missing), by cra or by the test's person."""
    git_in(repo, "checkout", "--quiet", "-B" if branch == "main" else "-b", branch)
    if by_cra:
        (repo / rel).write_text(f"{rel}\n")
        git_in(repo, "add", "--", rel)
        git.commit_all(repo, f"Add {rel}", author_name=AUTHOR_NAME, author_email=AUTHOR_EMAIL)
        sha = git.head_commit(repo)
    else:
        sha = commit_file(repo, rel, f"{rel}\n", f"Add {rel}")
    git_in(repo, "checkout", "--quiet", "main")
    return sha


def test_no_branch_yet_starts_from_the_default_branch(repo: Path) -> None:
    assert planned(repo) == IssueBranch(BRANCH, "main", "", False)


def test_a_branch_of_cras_commits_only_is_replaced(repo: Path) -> None:
    head = commit_on(repo, BRANCH, "a.txt", by_cra=True)
    assert planned(repo) == IssueBranch(BRANCH, "main", head, False)


def test_a_branch_with_someone_elses_commit_is_built_on(repo: Path) -> None:
    commit_on(repo, BRANCH, "a.txt", by_cra=True)
    git_in(repo, "checkout", "--quiet", BRANCH)
    head = commit_file(repo, "b.txt", "fix-up\n", "A person's fix-up")
    git_in(repo, "checkout", "--quiet", "main")
    assert planned(repo) == IssueBranch(BRANCH, BRANCH, head, True)


def test_commits_the_default_branch_has_are_not_someone_elses_work_on_the_branch(
    repo: Path,
) -> None:
    """A branch behind main (main moved on), or holding only main's commits: still cra's."""
    git_in(repo, "branch", BRANCH)  # from main's head: the test identity's commits
    commit_on(repo, "main", "later.txt", by_cra=False)
    head = git.resolve_commit(repo, BRANCH)
    assert planned(repo) == IssueBranch(BRANCH, "main", head, False)
