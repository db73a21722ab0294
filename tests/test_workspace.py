"""agent.workspace: the scratch copy the gate runs the original tests in."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.workspace import scratch_tree
from tests.fakes.repos import ISOLATED_GIT_ENV, make_python_project, write_files


@pytest.fixture(autouse=True)
def isolated_git(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in ISOLATED_GIT_ENV.items():
        monkeypatch.setenv(key, value)


def test_a_scratch_tree_is_the_worktree_with_the_given_files_in_place(tmp_path: Path) -> None:
    repo = make_python_project(tmp_path / "repo")
    write_files(repo, {"conftest.py": "SKIP = True\n", "calc/new.py": "x = 1\n",
                       "tests/test_ops.py": "# emptied\n"})
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
