"""The run's workspace: a git worktree on a new branch, opened and closed around a run."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from agent import git
from agent.errors import AgentError


@dataclass(frozen=True)
class Workspace:
    """A worktree of `repo` at `worktree`, on `branch`, started from commit `base`."""

    repo: Path
    worktree: Path
    branch: str
    base: str


def slugify(text: str, *, limit: int = 40) -> str:
    """A branch-safe slug of free text."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:limit].rstrip("-") or "task"


def open_workspace(repo: Path, *, work_dir: Path, run_id: str, branch_hint: str) -> Workspace:
    """A new worktree of `repo`'s HEAD on a fresh branch `cra/<slug>` under `work_dir`."""
    base = git.head_commit(repo)
    branch = git.unique_branch(repo, f"cra/{slugify(branch_hint)}")
    worktree = work_dir / "worktrees" / f"{slugify(branch_hint, limit=24)}-{run_id[:8]}"
    worktree.parent.mkdir(parents=True, exist_ok=True)
    git.add_worktree(repo, worktree, commit=base, branch=branch)
    return Workspace(repo=repo, worktree=worktree, branch=branch, base=base)


def close_workspace(ws: Workspace, *, keep_branch: bool) -> None:
    """Remove the worktree; delete the branch unless it carries the result."""
    if ws.worktree.exists():
        git.remove_worktree(ws.repo, ws.worktree)
    if not keep_branch and git.branch_exists(ws.repo, ws.branch):
        git.delete_branch(ws.repo, ws.branch)


def apply_in_place(ws: Workspace, diff: str) -> str | None:
    """Apply the result's diff to the user's working tree; the error text when it won't apply."""
    try:
        git.apply_diff(ws.repo, diff)
    except AgentError as exc:
        return f"could not apply the result to {ws.repo}: {exc}; it is on {ws.branch}"
    return None
