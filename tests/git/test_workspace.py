"""agent.git.workspace: the scratch copy the gate runs the original tests in."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agent.git import repo as git
from agent.git.workspace import open_workspace, remove_abandoned, scratch_tree
from tests.fakes.repos import make_python_project, write_files

pytestmark = pytest.mark.usefixtures("isolated_git")


def test_a_scratch_tree_is_the_worktree_with_the_given_files_in_place(tmp_path: Path) -> None:
    repo = make_python_project(tmp_path / "repo")
    write_files(
        repo,
        {
            "conftest.py": "SKIP = True\n",
            "calc/new.py": "x = 1\n",
            "tests/test_ops.py": "# emptied\n",
        },
    )
    restore = {"conftest.py": None, "tests/test_ops.py": "def test_a():\n    pass\n"}

    with scratch_tree(repo, restore, parent=tmp_path / "scratch") as tree:
        assert not (tree / "conftest.py").exists()
        assert (tree / "tests/test_ops.py").read_text() == "def test_a():\n    pass\n"
        assert (tree / "calc/new.py").read_text() == "x = 1\n"  # untracked work is kept
        assert not (tree / ".git").exists()
        kept = tree

    assert not kept.exists()
    assert (repo / "conftest.py").read_text() == "SKIP = True\n"  # the worktree is untouched
    assert (repo / "tests/test_ops.py").read_text() == "# emptied\n"


def test_ignored_folders_are_linked_not_copied(tmp_path: Path) -> None:
    repo = make_python_project(tmp_path / "repo")
    write_files(repo, {".venv/lib/big.py": "x = 1\n", ".pytest_cache/v/x": "1"})

    with scratch_tree(repo, {}, parent=tmp_path / "scratch") as tree:
        assert (tree / ".venv").is_symlink()
        assert (tree / ".venv").resolve() == (repo / ".venv").resolve()
        assert not (tree / ".pytest_cache").exists()


def owned_worktree(tmp_path: Path, **owner: object) -> Path:
    """A worktree opened by this process, its owner file then given `owner`'s values."""
    repo = make_python_project(tmp_path / "repo")
    ws = open_workspace(repo, work_dir=tmp_path / "work", run_id="r1234567", branch_hint="t")
    owner_file = ws.worktree.with_name(ws.worktree.name + ".owner")
    owner_file.write_text(json.dumps({**json.loads(owner_file.read_text()), **owner}))
    return ws.worktree


def test_a_live_processs_worktree_is_not_abandoned(tmp_path: Path) -> None:
    worktree = owned_worktree(tmp_path)

    assert remove_abandoned(tmp_path / "work") == []
    assert worktree.is_dir()


def test_a_worktree_whose_process_id_was_reused_is_abandoned(tmp_path: Path) -> None:
    worktree = owned_worktree(tmp_path, started="1")  # this pid, but not this process
    env = tmp_path / "work" / "envs" / "r1234567"  # its environment (agent.run.environment)
    (env / "home").mkdir(parents=True)

    [gone] = remove_abandoned(tmp_path / "work")

    assert gone.run_id == "r1234567" and gone.branch_deleted
    assert not worktree.exists() and not env.exists()


def test_an_abandoned_worktree_whose_folder_is_gone_frees_its_branch(tmp_path: Path) -> None:
    worktree = owned_worktree(tmp_path, started="1")
    shutil.rmtree(worktree)  # its registration in the repository is left

    [gone] = remove_abandoned(tmp_path / "work")

    assert gone.branch_deleted and not git.branch_exists(tmp_path / "repo", gone.branch)
    assert list((tmp_path / "work" / "worktrees").iterdir()) == []
