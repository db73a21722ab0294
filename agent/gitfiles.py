"""Reading what git keeps in plain files, where a git process per question costs more: the
commit a worktree's HEAD names right after a commit."""

from __future__ import annotations

import re
from pathlib import Path

OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256


def admin_dir(tree: Path) -> Path | None:
    """The directory holding a worktree's HEAD: `.git`, or a linked worktree's admin dir."""
    marker = tree / ".git"
    if marker.is_dir():
        return marker
    if not marker.is_file():
        return None
    text = marker.read_text(encoding="utf-8", errors="replace").strip()
    if not text.startswith("gitdir:"):
        return None
    admin = (tree / text.removeprefix("gitdir:").strip()).resolve()
    return admin if admin.is_dir() else None


def head_from_files(tree: Path) -> str | None:
    """The object id HEAD names, read from HEAD and a loose ref (as `git commit` leaves them);
    None whenever it takes more than that (packed or reftable refs, anything unusual): ask
    git then."""
    admin = admin_dir(tree)
    if admin is None:
        return None
    try:
        head = (admin / "HEAD").read_text(encoding="utf-8").strip()
        if OBJECT_ID.fullmatch(head):
            return head
        ref = head.removeprefix("ref: ")
        if ref == head or not ref.startswith("refs/heads/") or ".." in ref:
            return None
        pointer = admin / "commondir"
        common = (admin / pointer.read_text().strip()).resolve() if pointer.is_file() else admin
        value = (common / ref).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return value if OBJECT_ID.fullmatch(value) else None
