"""The bench's checkouts (agent.bench.trees) left by a process that was killed are removed with
their environments once it is gone; a live process's, another host's and a folder the bench did
not make are left alone."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from agent.bench.trees import Owner, abandoned, remove_left
from tests.bench.history import History
from tests.bench.leftovers import killed_checkout, live_checkout
from tests.fakes.repos import git_in

pytestmark = pytest.mark.usefixtures("isolated_git")


def leftovers(work_dir: Path, tree: Path) -> list[Path]:
    """What is left of the checkout `tree`: itself, its owner record, its environments."""
    return [p for p in (tree, tree.with_name(tree.name + ".owner")) if p.exists()] + sorted(
        (work_dir / "envs").glob(f"{tree.name}-*")
    )


def test_a_killed_process_checkout_is_removed_with_its_environments(
    history: History, tmp_path: Path
) -> None:
    checkouts = git_in(history.repo, "worktree", "list")
    left = killed_checkout(history.repo, tmp_path / "work")
    assert len(leftovers(tmp_path / "work", left)) == 3
    assert str(left) in git_in(history.repo, "worktree", "list")

    assert remove_left(tmp_path / "work") == [left]

    assert leftovers(tmp_path / "work", left) == []
    assert git_in(history.repo, "worktree", "list") == checkouts


def test_a_live_process_checkout_is_left_alone(history: History, tmp_path: Path) -> None:
    with live_checkout(history.repo, tmp_path / "work") as tree:
        assert remove_left(tmp_path / "work") == []

        assert len(leftovers(tmp_path / "work", tree)) == 3
        assert (tree / "pkg").is_dir()  # still the checkout its process works in
    assert leftovers(tmp_path / "work", tree) == []  # its process removed it, as it ended


def test_a_folder_without_an_owner_record_is_left_alone(tmp_path: Path) -> None:
    stray = tmp_path / "work" / "bench-someone-elses"
    stray.mkdir(parents=True)
    (stray / "notes.txt").write_text("mine\n")

    assert remove_left(tmp_path / "work") == []
    assert (stray / "notes.txt").read_text() == "mine\n"


def test_a_checkout_is_abandoned_only_when_its_process_on_this_host_is_gone() -> None:
    here = socket.gethostname()
    owner = Owner(pid=123, started="456", host=here, repo="/r")
    assert abandoned(owner, here, lambda pid, started: False)
    assert not abandoned(owner, here, lambda pid, started: True)
    other = owner.model_copy(update={"host": "another-host"})
    assert not abandoned(other, here, lambda pid, started: False)  # its liveness is unknown
