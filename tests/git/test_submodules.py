"""agent.git.submodules: a run's worktree gets the submodules its checkout holds, and never
fetches."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.git.submodules import check_out_submodules, submodules
from agent.git.workspace import close_workspace, open_workspace
from tests.fakes.repos import git_in, init_repo, make_python_project, write_files

pytestmark = pytest.mark.usefixtures("isolated_git")

LOCAL_FILES = ("-c", "protocol.file.allow=always")  # git refuses file:// submodules by default


def library(root: Path, text: str = "def two():\n    return 2\n") -> tuple[Path, str]:
    """A repository to use as a submodule; its path and commit."""
    init_repo(root)
    write_files(root, {"helper.py": text})
    git_in(root, "add", "--all")
    git_in(root, "commit", "--quiet", "-m", "helper")
    return root, git_in(root, "rev-parse", "HEAD").strip()


def with_submodule(tmp_path: Path) -> tuple[Path, Path, str]:
    """A checkout whose submodule vendor/lib is initialised and checked out; (checkout,
    library, the recorded commit)."""
    lib, commit = library(tmp_path / "lib")
    repo = make_python_project(tmp_path / "repo")
    git_in(repo, *LOCAL_FILES, "submodule", "--quiet", "add", str(lib), "vendor/lib")
    git_in(repo, "commit", "--quiet", "-m", "Add the library")
    return repo, lib, commit


def test_a_submodule_the_checkout_holds_is_checked_out_and_removed_with_the_worktree(
    tmp_path: Path,
) -> None:
    repo, _, commit = with_submodule(tmp_path)
    config = (repo / ".git" / "config").read_text()

    ws = open_workspace(repo, work_dir=tmp_path / "work", run_id="r1", branch_hint="fix")

    assert ws.notes == ()
    assert (ws.worktree / "vendor/lib/helper.py").read_text() == "def two():\n    return 2\n"
    assert git_in(ws.worktree / "vendor/lib", "rev-parse", "HEAD").strip() == commit
    assert git_in(ws.worktree, "status", "--porcelain") == ""
    assert (repo / ".git" / "config").read_text() == config  # the user's config is untouched
    close_workspace(ws, keep_branch=False)
    assert not ws.worktree.exists()
    assert git_in(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_a_submodule_the_checkout_never_initialised_is_named_not_fetched(tmp_path: Path) -> None:
    upstream, _, _ = with_submodule(tmp_path)
    clone = tmp_path / "clone"
    git_in(tmp_path, "clone", "--quiet", str(upstream), str(clone))  # without its submodules

    ws = open_workspace(clone, work_dir=tmp_path / "work", run_id="r2", branch_hint="fix")

    assert not (ws.worktree / "vendor/lib/helper.py").exists()  # its URL would have served it
    [note] = ws.notes
    assert note.startswith("not checked out: the submodule vendor/lib (cra never fetches")
    assert "tests that need their files fail before and after" in note
    close_workspace(ws, keep_branch=False)


def test_submodules_are_read_from_the_index_and_named_by_gitmodules(tmp_path: Path) -> None:
    repo = make_python_project(tmp_path / "repo")
    sha = "1" * 40
    git_in(repo, "update-index", "--add", "--cacheinfo", f"160000,{sha},third party/lib")
    write_files(
        repo,
        {
            ".gitmodules": '[submodule "odd.name"]\n\tpath = third party/lib\n'
            "\turl = https://example.com/lib.git\n"
        },
    )

    [found] = submodules(repo)

    assert (found.name, found.path, found.commit) == ("odd.name", "third party/lib", sha)
    # Not initialised here: named, and nothing is fetched from example.com.
    assert check_out_submodules(repo, repo) == [
        "not checked out: the submodule third party/lib (cra never fetches a submodule; it "
        "copies only those a local checkout has initialised): tests that need their files "
        "fail before and after the change"
    ]


def test_a_tree_without_submodules_gets_no_note(tmp_path: Path) -> None:
    repo = make_python_project(tmp_path / "repo")
    assert submodules(repo) == [] and check_out_submodules(repo, repo) == []
