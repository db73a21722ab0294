"""agent.git.treefiles, and the readers that use it: a file a test command replaced by a symlink
is never read through it by cra (the sandbox hid its target)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.gate.validation import _read_capped
from agent.git.treefiles import read_in_tree, read_text_in_tree
from agent.retrieval.indexing.scan import ScanRules, list_worktree, read_file
from tests.fakes.repos import make_python_project

pytestmark = pytest.mark.usefixtures("isolated_git")

SECRET = "the sandbox hid this\n"


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "secret.txt"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


def test_a_regular_file_is_read_whole_or_capped(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f.py").write_bytes(b"0123456789")
    assert read_in_tree(tmp_path, "a/f.py") == b"0123456789"
    assert read_in_tree(tmp_path, "a/f.py", 4) == b"0123"
    assert read_text_in_tree(tmp_path, "a/f.py") == "0123456789"


def test_symlinks_fifos_and_missing_files_are_not_read(tmp_path: Path, secret: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "link.py").symlink_to(secret)
    (tree / "in_tree.py").write_text("x = 1\n")
    (tree / "pkg" / "local.py").symlink_to("../in_tree.py")  # even one inside the tree
    (tree / "dir").symlink_to(secret.parent, target_is_directory=True)
    os.mkfifo(tree / "fifo")  # never blocks: opened without waiting for a writer
    for rel in (
        "pkg/link.py",
        "pkg/local.py",
        "dir/secret.txt",
        "fifo",
        "missing.py",
        "../outside/secret.txt",
    ):
        with pytest.raises(OSError):
            read_in_tree(tree, rel)
        assert read_text_in_tree(tree, rel) is None


def test_a_tracked_file_a_test_replaced_by_a_symlink_is_not_indexed(
    tmp_path: Path, secret: Path
) -> None:
    repo = make_python_project(tmp_path / "repo")
    ops = repo / "calc" / "ops.py"
    ops.unlink()
    ops.symlink_to(secret)

    listing = list_worktree(repo, ScanRules(skip_dirs=(), skip_globs=(), max_file_bytes=10_000))

    assert "calc/ops.py" not in listing.entries and "calc/__init__.py" in listing.entries
    assert read_file(repo, "calc/ops.py", "0" * 40, 10_000) is None


def test_a_junit_report_that_is_a_symlink_is_not_read(tmp_path: Path, secret: Path) -> None:
    report = tmp_path / "out" / "junit.xml"
    report.parent.mkdir()
    report.symlink_to(secret)
    assert _read_capped(report) is None
    report.unlink()
    report.write_text("<testsuite/>")
    assert _read_capped(report) == "<testsuite/>"
