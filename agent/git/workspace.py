"""The run's workspace: a git worktree on a new branch, opened and closed around a run."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from agent.errors import AgentError, GitError
from agent.git import branches, worktrees
from agent.git import repo as git
from agent.git.submodules import check_out_submodules
from agent.git.treefiles import symlinked_folder


@dataclass(frozen=True)
class Workspace:
    """A worktree of `repo` at `worktree`, on `branch`, started from commit `base`; `notes` on
    what it lacks (submodules it could not check out)."""

    repo: Path
    worktree: Path
    branch: str
    base: str
    notes: tuple[str, ...] = ()


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
    `cra/<slug>`. The submodules `repo` holds are checked out from its copies
    (agent.git.submodules)."""
    start = git.resolve_commit(repo, base) if base else git.head_commit(repo)
    name = branch or branches.unique_branch(repo, f"cra/{slugify(branch_hint)}")
    worktree = work_dir / "worktrees" / f"{slugify(branch_hint, limit=24)}-{run_id[:8]}"
    worktree.parent.mkdir(parents=True, exist_ok=True)
    _owner_file(worktree).write_text(
        json.dumps(
            {
                "pid": os.getpid(),
                "started": process_start(os.getpid()),
                "host": socket.gethostname(),
                "run_id": run_id,
                "repo": str(repo),
                "branch": name,
                "base": start,
            }
        ),
        encoding="utf-8",
    )
    worktrees.add_worktree(repo, worktree, commit=start, branch=name, force=branch is not None)
    notes = check_out_submodules(repo, worktree)
    return Workspace(repo=repo, worktree=worktree, branch=name, base=start, notes=tuple(notes))


def close_workspace(workspace: Workspace, *, keep_branch: bool) -> None:
    """Remove the worktree; delete the branch unless it carries the result."""
    if workspace.worktree.exists():
        worktrees.remove_worktree(workspace.repo, workspace.worktree)
    if not keep_branch and git.branch_exists(workspace.repo, workspace.branch):
        branches.delete_branch(workspace.repo, workspace.branch)
    _owner_file(workspace.worktree).unlink(missing_ok=True)


def _owner_file(worktree: Path) -> Path:
    """Beside each worktree: which process of which host works in it (for crash clean-up)."""
    return worktree.with_name(worktree.name + ".owner")


@dataclass(frozen=True)
class Abandoned:
    """A worktree whose process is gone, removed."""

    run_id: str
    worktree: Path
    branch_deleted: bool
    branch: str = ""  # kept when it holds commits of the run's (its work is not thrown away)


def remove_abandoned(work_dir: Path) -> list[Abandoned]:
    """Remove the worktrees under `work_dir` whose process died on this host (killed, crashed),
    their environments, and their branches when they hold no commit of their own; a live
    process's are untouched."""
    removed: list[Abandoned] = []
    for owner in sorted((work_dir / "worktrees").glob("*.owner")):
        try:
            info = json.loads(owner.read_text(encoding="utf-8"))
            pid, host = int(info["pid"]), str(info["host"])
            repo, branch, base = Path(info["repo"]), str(info["branch"]), str(info["base"])
            started = info.get("started")
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if host != socket.gethostname() or process_alive(pid, started):
            continue
        worktree = owner.with_name(owner.name.removesuffix(".owner"))
        deleted = False
        try:
            if worktree.exists():
                worktrees.remove_worktree(repo, worktree)
            else:  # its folder went first: the registration left would still hold the branch
                worktrees.prune_worktrees(repo)
            if git.branch_exists(repo, branch) and git.resolve_commit(repo, branch) == base:
                branches.delete_branch(repo, branch)  # nothing committed: only its name was left
                deleted = True
        except GitError:
            if worktree.exists():
                shutil.rmtree(worktree, ignore_errors=True)
        run_id = str(info.get("run_id", ""))
        if run_id and run_id == Path(run_id).name and run_id not in (".", ".."):
            # agent.run.environment
            shutil.rmtree(work_dir / "envs" / run_id, ignore_errors=True)
        owner.unlink(missing_ok=True)
        removed.append(Abandoned(run_id, worktree, deleted, branch))
    return removed


def process_alive(pid: int, started: object = None) -> bool:
    """Whether a process of this host still runs: one with its id runs (another user's
    counts) and, where its start time is known (process_start), started when it did — so a
    later process that was given the same id does not pass for a dead one."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # none has that id (or none could)
        return False
    except PermissionError:
        pass
    now = process_start(pid)
    return not isinstance(started, str) or now is None or now == started


def process_start(pid: int) -> str | None:
    """When the process started, in clock ticks since boot (Linux's /proc), or None where
    that is not known (another system, /proc not mounted, the process gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # the name, in parentheses, may hold spaces
    return fields[19] if len(fields) > 19 else None


def apply_in_place(workspace: Workspace, diff: str) -> str | None:
    """Apply the result's diff to the user's working tree; the error text when it won't apply."""
    try:
        git.apply_diff(workspace.repo, diff)
    except AgentError as exc:
        return f"could not apply the result to {workspace.repo}: {exc}; it is on {workspace.branch}"
    return None


# Caches that a copy must not share with the worktree (and need not copy).
SCRATCH_SKIP = frozenset(
    {
        ".git",
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".hypothesis",
        ".tox",
        ".nox",
    }
)


@contextmanager
def scratch_tree(
    worktree: Path, files: Mapping[str, str | None], *, parent: Path
) -> Iterator[Path]:
    """A throwaway copy of `worktree` under `parent` with `files` (path → text, None: absent)
    put in place; removed afterwards. What .gitignore hides (virtualenvs, node_modules, built
    extensions) is linked, not copied."""
    parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="scratch-", dir=parent))
    try:
        _copy_tree(worktree, scratch)
        for rel, text in files.items():
            _real_folders(scratch, rel)
            target = scratch / rel
            if target.is_symlink() or target.exists():
                target.unlink()
            if text is not None:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _real_folders(root: Path, rel: str) -> None:
    """Make every folder on the way from `root` to `root/rel` a real one in the copy: a
    symlink there (a test command may leave one in the worktree, pointing anywhere) becomes an
    empty folder, so that writing or deleting `rel` stays inside the copy — cra does it as the
    worker, outside the sandbox."""
    while (linked := symlinked_folder(root, rel)) is not None:
        (root / linked).unlink()
        (root / linked).mkdir()


def _copy_tree(worktree: Path, scratch: Path) -> None:
    """Copy the tracked and untracked files; link the ignored ones."""
    ignored = {p.rstrip("/") for p in git.ignored_paths(worktree)}

    def skip(folder: str, names: list[str]) -> set[str]:
        rel = Path(folder).relative_to(worktree)
        return {
            n
            for n in names
            if n in SCRATCH_SKIP or (rel / n).as_posix().removeprefix("./") in ignored
        }

    shutil.copytree(worktree, scratch, symlinks=True, ignore=skip, dirs_exist_ok=True)
    for rel in sorted(ignored):
        source, target = worktree / rel, scratch / rel
        if source.name in SCRATCH_SKIP or not target.parent.is_dir() or target.exists():
            continue
        os.symlink(source, target, target_is_directory=source.is_dir())
