"""Reading what git keeps in plain files, where a git process per question costs more: the
commit a worktree's HEAD names right after a commit, whether a branch exists, and where a
worktree's admin dir and common dir are. Every answer is None (ask git) when the files do not
say it plainly."""

from __future__ import annotations

import re
from pathlib import Path

OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256


def head_from_files(admin: Path, common: Path) -> str | None:
    """The object id HEAD names, read from the HEAD in `admin` (`.git`, or a linked worktree's
    admin dir) and a loose ref in `common` (as `git commit` leaves them); None whenever it takes
    more than that (packed or reftable refs, anything unusual): ask git then."""
    try:
        head = (admin / "HEAD").read_text(encoding="utf-8").strip()
        if OBJECT_ID.fullmatch(head):
            return head
        ref = head.removeprefix("ref: ")
        if ref == head or not ref.startswith("refs/heads/") or ".." in ref:
            return None
        value = (common / ref).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return value if OBJECT_ID.fullmatch(value) else None


SAFE_REF = re.compile(r"refs/heads/[A-Za-z0-9_][A-Za-z0-9_.\-]*(/[A-Za-z0-9_][A-Za-z0-9_.\-]*)*")


def ref_exists_in_files(common: Path, ref: str) -> bool | None:
    """Whether `ref` exists among the loose refs and packed-refs of `common` (a checkout's
    `.git` or a worktree's common dir); None whenever that takes more (reftable, a name outside
    the plain ones, an unreadable file): ask git then."""
    if not SAFE_REF.fullmatch(ref) or ".." in ref or ref.endswith((".lock", ".")):
        return None
    try:
        if (common / "reftable").exists():
            return None
        loose = common / ref
        if loose.is_file():
            value = loose.read_text(encoding="utf-8").strip()
            return True if OBJECT_ID.fullmatch(value) or value.startswith("ref: ") else None
        packed = common / "packed-refs"
        if not packed.exists():
            return False
        for line in packed.read_text(encoding="utf-8").splitlines():
            if line[:1] not in ("#", "^") and line.partition(" ")[2] == ref:
                return True
        return False
    except (OSError, UnicodeDecodeError):
        return None


# --- a checkout's or a linked worktree's admin dir ----------------------------------------


def gitdir_of(tree: Path) -> Path | None:
    """Where a linked worktree's `.git` file points (it may be gone); None for another tree."""
    marker = tree / ".git"
    if not marker.is_file():
        return None
    text = marker.read_text(encoding="utf-8", errors="replace").strip()
    if not text.startswith("gitdir:"):
        return None
    return (tree / text.removeprefix("gitdir:").strip()).resolve()


def linked_admin_dir(tree: Path) -> Path | None:
    """The admin dir (`<common>/worktrees/<name>`) of a linked worktree; None for another tree."""
    admin = gitdir_of(tree)
    return admin if admin is not None and admin.is_dir() else None


def admin_common_dir(admin: Path) -> Path:
    """The common dir (the mirror, or a checkout's `.git`) a worktree's admin dir belongs to."""
    pointer = admin / "commondir"
    if not pointer.is_file():
        return admin
    return (admin / pointer.read_text(encoding="utf-8").strip()).resolve()


def admin_dir(tree: Path) -> Path | None:
    """The git admin dir of a checkout (its `.git`) or of a linked worktree; None otherwise
    (a bare repository, a subdirectory): then git is asked."""
    return linked_admin_dir(tree) or (tree / ".git" if (tree / ".git").is_dir() else None)


def head_in_tree(tree: Path) -> str | None:
    """HEAD's commit read from git's files without a process; None: ask git."""
    admin = admin_dir(tree)
    return None if admin is None else head_from_files(admin, admin_common_dir(admin))


def ref_exists_in_tree(repo: Path, ref: str) -> bool | None:
    """Whether `ref` exists, from the loose and packed refs of `repo`'s common dir; None when
    the files cannot say (a bare or unusual layout, reftable, an odd name): ask git then."""
    admin = admin_dir(repo)
    return None if admin is None else ref_exists_in_files(admin_common_dir(admin), ref)
