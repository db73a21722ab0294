"""Reading what git keeps in plain files, where a git process per question costs more: the
commit a worktree's HEAD names right after a commit."""

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
