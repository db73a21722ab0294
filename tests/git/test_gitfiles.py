"""HEAD read from git's files agrees with git, and gives up (None) on anything unusual."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agent.git import branches
from agent.git import repo as git
from agent.git.files import head_in_tree as head_from_files
from agent.git.files import ref_exists_in_files
from tests.fakes.repos import ISOLATED_GIT_ENV, make_python_project


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key, value in ISOLATED_GIT_ENV.items():
        monkeypatch.setenv(key, value)
    return make_python_project(tmp_path / "repo", config=None)


def test_head_of_a_checkout_is_gits(repo: Path) -> None:
    assert head_from_files(repo) == git.head_commit(repo)


def test_head_of_a_linked_worktree_after_a_commit_is_gits(repo: Path, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    subprocess.run(["git", "worktree", "add", "-q", "-b", "cra/x", str(tree)], cwd=repo, check=True)
    (tree / "new.txt").write_text("new\n")
    sha = git.commit_all(tree, "Add new.txt", author_name="cra", author_email="cra@example.com")
    assert sha is not None and sha == git.head_commit(tree) == head_from_files(tree)
    assert head_from_files(repo) == git.head_commit(repo) != sha


def test_a_detached_head_is_read_too(repo: Path) -> None:
    sha = git.head_commit(repo)
    subprocess.run(["git", "checkout", "-q", "--detach"], cwd=repo, check=True)
    assert head_from_files(repo) == sha


def test_packed_refs_are_left_to_git(repo: Path) -> None:
    subprocess.run(["git", "pack-refs", "--all"], cwd=repo, check=True)
    assert head_from_files(repo) is None


def test_a_directory_that_is_no_repository_gives_none(tmp_path: Path) -> None:
    assert head_from_files(tmp_path) is None


# --- does a branch exist? ---------------------------------------------------------------------


def _git_says(repo: Path, name: str) -> bool:
    return (
        subprocess.run(
            ["git", "show-ref", "--verify", "--quiet", f"refs/heads/{name}"], cwd=repo
        ).returncode
        == 0
    )


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_branch_existence_from_files_agrees_with_git(
    repo: Path, tmp_path: Path, packed: bool
) -> None:
    tree = tmp_path / "tree"
    subprocess.run(
        ["git", "worktree", "add", "-q", "-b", "cra/fix-it", str(tree)], cwd=repo, check=True
    )
    subprocess.run(["git", "branch", "cra/other"], cwd=repo, check=True)
    if packed:
        subprocess.run(["git", "pack-refs", "--all"], cwd=repo, check=True)
    common = repo / ".git"
    for name in ("cra/fix-it", "cra/other", "main", "cra", "cra/fix", "cra/fix-it-2", "nope"):
        assert ref_exists_in_files(common, f"refs/heads/{name}") is _git_says(repo, name), name
        assert git.branch_exists(repo, name) is _git_says(repo, name)
        assert git.branch_exists(tree, name) is _git_says(repo, name)  # from a linked worktree


def test_odd_ref_names_and_reftable_are_left_to_git(repo: Path) -> None:
    common = repo / ".git"
    for ref in (
        "refs/heads/a..b",
        "refs/heads/x.lock",
        "refs/heads/.hidden",
        "refs/heads/sp ace",
        "refs/tags/v1",
        "refs/heads/é",
    ):
        assert ref_exists_in_files(common, ref) is None, ref
    (common / "reftable").mkdir()
    assert ref_exists_in_files(common, "refs/heads/main") is None


def test_unique_branch_skips_a_packed_branch(repo: Path) -> None:
    subprocess.run(["git", "branch", "cra/task"], cwd=repo, check=True)
    subprocess.run(["git", "pack-refs", "--all"], cwd=repo, check=True)
    assert branches.unique_branch(repo, "cra/task") == "cra/task-2"


@pytest.mark.parametrize("name", ["cra/fix-it", "cra/a_b/c-1", "x", "cra/2fix", "_a/b"])
def test_plain_branch_names_are_ones_git_accepts(repo: Path, name: str) -> None:
    assert branches.PLAIN_BRANCH.fullmatch(name)
    assert (
        subprocess.run(
            ["git", "check-ref-format", "--branch", name], cwd=repo, capture_output=True
        ).returncode
        == 0
    )


@pytest.mark.parametrize(
    "name",
    [
        "cra/a..b",
        "cra/x.lock",
        "cra/.hidden",
        "cra/a b",
        "cra/",
        "cra//x",
        "cra/a@{1}",
        "-x",
        "cra/x~1",
        "HEAD",
    ],
)
def test_other_branch_names_are_left_to_git(repo: Path, name: str) -> None:
    if branches.PLAIN_BRANCH.fullmatch(name) and name != "HEAD":
        pytest.fail(f"{name} taken as plain")
    with pytest.raises(git.GitError):
        branches.unique_branch(repo, name)
