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
