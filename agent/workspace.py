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


def open_workspace(
    repo: Path,
    *,
    work_dir: Path,
    run_id: str,
    branch_hint: str,
    base: str | None = None,
    branch: str | None = None,
) -> Workspace:
    """A new worktree under `work_dir`: of `base` (default: `repo`'s HEAD), on `branch` — reset
    to `base` when given (the bot's `cra/issue-<n>`, a PR's head) — else on a fresh branch
    `cra/<slug>`."""
    start = git.resolve_commit(repo, base) if base else git.head_commit(repo)
    name = branch or git.unique_branch(repo, f"cra/{slugify(branch_hint)}")
    worktree = work_dir / "worktrees" / f"{slugify(branch_hint, limit=24)}-{run_id[:8]}"
    worktree.parent.mkdir(parents=True, exist_ok=True)
    git.add_worktree(repo, worktree, commit=start, branch=name, force=branch is not None)
    return Workspace(repo=repo, worktree=worktree, branch=name, base=start)


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
