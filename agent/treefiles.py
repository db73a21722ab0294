"""Reading a file of a worktree that the repository's commands have written to.

A test command can replace a tracked file, or a folder above it, with a symlink to anything the
worker can read (the bot's data, a key, /etc/shadow): cra itself would then read what the
sandbox hid, and hand it to a model, a run record or a page. So cra reads a worktree's file only
when it is a regular file reached without any symlink below the tree's root.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def read_in_tree(root: Path, rel: str, limit: int | None = None) -> bytes:
    """The bytes of the regular file `rel` under `root` (its first `limit` bytes when given);
    OSError when it is missing, not a regular file, or reached through a symlink."""
    path = root / rel
    if path.resolve() != root.resolve() / rel:  # a symlink (or `..`) somewhere below the root
        raise OSError(f"{rel} leads outside the tree or through a symlink")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{rel} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read() if limit is None else handle.read(limit)
    finally:
        os.close(fd)


def read_text_in_tree(root: Path, rel: str) -> str | None:
    """read_in_tree as text (undecodable bytes replaced), None when it cannot be read so."""
    try:
        return read_in_tree(root, rel).decode("utf-8", errors="replace")
    except OSError:
        return None
