"""A mirror per repository, fetched under a lock; worktrees are added from it."""

from __future__ import annotations

import fcntl
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from agent.git import remotes

_THREAD_LOCKS: dict[Path, threading.Lock] = {}
_GUARD = threading.Lock()


class MirrorCache:
    """Bare mirrors under `root/<owner>/<name>.git`, one writer at a time per repository."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def path(self, repository: str) -> Path:
        """Where the mirror of `owner/name` lives."""
        owner, name = repository.split("/", 1)
        return self._root / owner / f"{name}.git"

    def sync(self, repository: str, url: str, *, env: Mapping[str, str]) -> Path:
        """Clone or fetch the mirror (the token only in `env`, never in a config file)."""
        mirror = self.path(repository)
        with self.locked(repository):
            return remotes.mirror_sync(url, mirror, env=env)

    @contextmanager
    def locked(self, repository: str) -> Iterator[None]:
        """Exclusive use of one mirror across threads and processes of this machine."""
        mirror = self.path(repository)
        mirror.parent.mkdir(parents=True, exist_ok=True)
        lock_path = mirror.with_name(mirror.name + ".lock")
        with _thread_lock(lock_path), lock_path.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _thread_lock(path: Path) -> threading.Lock:
    with _GUARD:
        return _THREAD_LOCKS.setdefault(path, threading.Lock())
