"""Linked worktrees: adding, resetting, removing and pruning them, and reading their state.

A run's work happens in a worktree of the user's checkout or of a bare mirror, on a branch of
its own; the repository's own working tree, index and HEAD are never touched.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from agent.git.branches import delete_branch
from agent.git.files import gitdir_of
from agent.git.repo import not_an_option, run_git


def add_worktree(repo: Path, path: Path, *, commit: str, branch: str, force: bool = False) -> Path:
    """Check out `commit` at `path` on a new branch; works from a bare mirror or a checkout.

    The repository's own working tree, index and HEAD are untouched. An existing `branch` is a
    GitError unless `force`, which resets it to `commit` (`-B`). No upstream is configured.
    """
    not_an_option(branch, "branch")
    flag = "-B" if force else "-b"
    path.parent.mkdir(parents=True, exist_ok=True)
    run_git(
        [
            "worktree",
            "add",
            "--quiet",
            "--no-track",
            flag,
            branch,
            str(path),
            not_an_option(commit, "commit"),
        ],
        repo,
    )
    return path


def reset_clean(worktree: Path, commit: str) -> None:
    """Reset the worktree hard to `commit` and delete untracked files (ignored ones stay)."""
    run_git(["reset", "--hard", "--quiet", not_an_option(commit, "commit")], worktree)
    run_git(["clean", "-fd", "--quiet"], worktree)


def remove_worktree(repo: Path, path: Path, *, branch: str | None = None) -> None:
    """Remove the worktree at `path` (even if dirty), then delete `branch` when one is named."""
    if path.exists():
        run_git(["worktree", "remove", "--force", "--force", str(path)], repo)
    else:
        run_git(["worktree", "prune"], repo)
    if branch is not None:
        delete_branch(repo, branch)


def prune_worktrees(repo: Path, parent: Path | None = None) -> list[Path]:
    """Forget vanished worktrees; delete stale worktree dirs under `parent` git no longer knows.

    A child of `parent` is deleted only when it is a linked worktree (a `.git` file) that is
    not registered and whose admin dir belongs to `repo` or no longer exists.
    """
    run_git(["worktree", "prune"], repo)
    if parent is None or not parent.is_dir():
        return []
    known = {Path(p).resolve() for p in worktree_paths(repo)}
    admin = _common_dir(repo) / "worktrees"
    stale = [
        child
        for child in sorted(parent.iterdir())
        if child.is_dir() and child.resolve() not in known and _is_orphan(child, admin)
    ]
    for child in stale:
        shutil.rmtree(child)
    return stale


def worktree_paths(repo: Path) -> list[str]:
    """The paths of every worktree git knows for `repo`."""
    out = run_git(["worktree", "list", "--porcelain"], repo)
    return [
        line.removeprefix("worktree ") for line in out.splitlines() if line.startswith("worktree ")
    ]


def _common_dir(repo: Path) -> Path:
    """The absolute git common dir of `repo` (the bare repo itself, or `.git`)."""
    return (repo / run_git(["rev-parse", "--git-common-dir"], repo).strip()).resolve()


def status_entries(worktree: Path) -> list[tuple[str, str]]:
    """(two-letter code, path) of every changed, untracked (`??`) and ignored (`!!`) path;
    an untracked or ignored directory is one entry ending in `/`."""
    out = run_git(
        [
            "status",
            "--porcelain=v1",
            "-z",
            "--ignored=matching",
            "--untracked-files=normal",
            "--no-renames",
        ],
        worktree,
    )
    return [(entry[:2], entry[3:]) for entry in out.split("\0") if entry]


def tracked_blobs(worktree: Path) -> list[tuple[str, str]]:
    """(path, blob SHA) of every file in the index of `worktree`."""
    out = run_git(["ls-files", "--stage", "-z"], worktree)
    pairs = []
    for entry in out.split("\0"):
        if entry:
            meta, _, path = entry.partition("\t")
            pairs.append((path, meta.split()[1]))
    return pairs


def _is_orphan(child: Path, admin: Path) -> bool:
    """True when `child` is a linked worktree whose gitdir is under `admin` or gone."""
    gitdir = gitdir_of(child)
    return gitdir is not None and (gitdir.parent == admin or not gitdir.exists())
