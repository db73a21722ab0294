"""Reading a file of a worktree that the repository's commands have written to.

A test command can replace a tracked file, or a folder above it, with a symlink to anything the
worker can read (the bot's data, a key, /etc/shadow): cra itself would then read what the
sandbox hid, and hand it to a model, a run record or a page. So cra reads a worktree's file only
when it is a regular file reached without any symlink below the tree's root, and writes into
one only where no symlink of the tree's is on the way.
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


def symlink_in_the_way(src: Path, dst: Path) -> str | None:
    """The first path under `dst` (relative to it) that copying the contents of `src` into
    `dst` would write through because it is a symlink; None when there is none.

    cra's copies into a checkout run outside the sandbox, as the worker: cp (or copytree)
    writing through a symlink writes wherever it points — another repository's mirror, the run
    log."""
    for folder, folders, files in os.walk(src):
        here = Path(folder).relative_to(src)
        for name in [*folders, *files]:
            try:
                mode = os.lstat(dst / here / name).st_mode
            except OSError:  # absent (or under a file): nothing below it is in the way
                if name in folders:
                    folders.remove(name)
                continue
            if stat.S_ISLNK(mode):
                return (here / name).as_posix()
    return None


def symlinked_folder(root: Path, rel: str) -> str | None:
    """The first folder on the way from `root` to `root/rel` that is a symlink; None when
    there is none."""
    parts = Path(rel).parts
    for end in range(1, len(parts)):
        if (root.joinpath(*parts[:end])).is_symlink():
            return Path(*parts[:end]).as_posix()
    return None
