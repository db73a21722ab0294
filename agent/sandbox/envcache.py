"""The environment cache: a setup step's result per repository, keyed by its dependency files.

An entry holds the environment directory (mounted at the same path, ENV_MOUNT, by every run) and
the git-ignored files the setup left in the worktree (node_modules, .venv, *.egg-info), copied
back into the next run's worktree, which the sandbox also mounts at one fixed path, so absolute
paths inside (shebangs, editable installs) stay true. Entries are immutable once saved: a run
works on its own copy. One lock file per key: building holds it exclusively (a second run of the
same key waits, then reuses the result), restoring holds it shared, eviction only takes it when
free. The total size is bounded; the least recently used entries go first. A setup that left
the repository changed is not cached, and `uncacheable_notes` says why with advice that fits the
repository's lock files (`npm ci` only where a package-lock.json is tracked).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from agent.errors import UnsafeCopy
from agent.git import worktrees
from agent.git.treefiles import symlink_in_the_way

CACHE_FORMAT = "1"  # bump when the layout or the mounts change: old entries stop matching
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def repo_id(repo: Path) -> str:
    """A directory name for a repository: its name and a hash of its path."""
    resolved = repo.resolve()
    name = _SAFE.sub("-", resolved.name.removesuffix(".git"))[:40] or "repo"
    return f"{name}-{hashlib.sha256(str(resolved).encode()).hexdigest()[:12]}"


def matches_input(path: str, patterns: Sequence[str]) -> bool:
    """True when `path` is a dependency file: a pattern without `/` names a file at any depth."""
    name = path.rsplit("/", 1)[-1]
    return any(fnmatchcase(path if "/" in p else name, p) for p in patterns)


def setup_key(worktree: Path, command: str, inputs: Sequence[str], env: Mapping[str, str]) -> str:
    """The hash of what decides a setup's result: the command, the dependency files' content,
    the environment it sees and the machine's system."""
    digest = hashlib.sha256()
    for part in (CACHE_FORMAT, command, *inputs, platform.machine(), _os_release()):
        digest.update(part.encode() + b"\0")
    for name in sorted(env):
        digest.update(f"{name}={env[name]}".encode() + b"\0")
    for path, blob in sorted(worktrees.tracked_blobs(worktree)):
        if matches_input(path, inputs):
            digest.update(f"{path}\0{blob}\0".encode())
    return digest.hexdigest()[:32]


_FROZEN = {  # a lock file → the command that installs from it without rewriting it
    "package-lock.json": "npm ci",
    "npm-shrinkwrap.json": "npm ci",
    "yarn.lock": "yarn install --frozen-lockfile (yarn 1) or --immutable (yarn 2 and later)",
    "pnpm-lock.yaml": "pnpm install --frozen-lockfile",
    "Cargo.lock": "cargo fetch --locked",
    "poetry.lock": "poetry install, with the lock file in step with pyproject.toml",
}
_UNLOCKED = {  # a lock file the repository lacks and the setup writes → how to write none
    "package-lock.json": "npm install --no-package-lock writes none",
}


def uncacheable_notes(
    changed: Sequence[str], untracked: Sequence[str], tracked: Sequence[str]
) -> list[str]:
    """Why a setup that left the repository changed is not cached, with advice that fits the
    repository: `changed` tracked files and `untracked` ones it left, among the `tracked`."""
    notes = []
    if changed:
        notes.append(
            f"the setup step changed tracked files ({', '.join(changed[:5])}); its result is "
            f"not cached: {install_advice(changed, tracked)}"
        )
    if untracked:
        notes.append(
            f"the setup step left untracked files that are not git-ignored "
            f"({', '.join(untracked[:5])}): resetting an attempt deletes them; "
            f"{install_advice(untracked, tracked, 'install into $CRA_ENV or ignore them')}; "
            "the result is not cached"
        )
    return notes


def install_advice(
    paths: Sequence[str],
    tracked: Sequence[str],
    otherwise: str = "use a command that leaves the repository as it is",
) -> str:
    """What a setup that wrote `paths` should run instead, as its lock files tell: a lock file
    the repository holds is installed from as it is (`npm ci`); one it lacks is not written
    (never `npm ci` without a lock file). `otherwise` when no lock file is among `paths`."""
    held = {path.rsplit("/", 1)[-1] for path in tracked}
    for path in paths:
        name = path.rstrip("/").rsplit("/", 1)[-1]
        if name not in _FROZEN:
            continue
        if name in held:
            return f"{_FROZEN[name]} installs from {name} without rewriting it"
        how = _UNLOCKED.get(name, "ignore it in .gitignore")
        return f"the repository has no {name} and the setup writes one: {how}"
    return otherwise


def _os_release() -> str:
    try:
        return Path("/etc/os-release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


@dataclass(frozen=True)
class Entry:
    """One cached setup result."""

    path: Path

    @property
    def env(self) -> Path:
        return self.path / "env"

    @property
    def tree(self) -> Path:
        return self.path / "tree"

    def exists(self) -> bool:
        """True once saved (entries appear by an atomic rename)."""
        return (self.path / "meta.json").is_file()

    def restore(self, env_dir: Path, worktree: Path) -> list[str]:
        """Copy the environment and the setup's worktree files into a run's own directories;
        the worktree paths restored. UnsafeCopy, before anything is copied, when the worktree
        has a symlink where a file or folder of the entry goes."""
        if self.tree.is_dir():
            hazard = symlink_in_the_way(self.tree, worktree)
            if hazard is not None:
                raise UnsafeCopy(hazard)
        copy_tree(self.env, env_dir)
        if self.tree.is_dir():
            copy_tree(self.tree, worktree)
        (self.path / "used").touch()
        meta = json.loads((self.path / "meta.json").read_text())
        return [str(p) for p in meta.get("tree_paths", [])]


class EnvCache:
    """Setup results under `root/<repo id>/<key>/`, at most `max_bytes` in total."""

    def __init__(self, root: Path, *, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes

    def entry(self, repo: str, key: str) -> Entry:
        """Where the entry for `key` of `repo` lives (whether or not it exists)."""
        return Entry(self.root / repo / key)

    @contextlib.contextmanager
    def reading(self, entry: Entry) -> Iterator[bool]:
        """Hold the entry against eviction; yields whether it exists."""
        with _flock(_lock_path(entry), fcntl.LOCK_SH):
            yield entry.exists()

    @contextlib.contextmanager
    def building(self, entry: Entry) -> Iterator[bool]:
        """The right to build `entry`, waiting for a run building it; yields whether it exists."""
        with _flock(_lock_path(entry), fcntl.LOCK_EX):
            yield entry.exists()

    def save(
        self,
        entry: Entry,
        env_dir: Path,
        worktree: Path,
        tree_paths: Sequence[str],
        meta: Mapping[str, object],
    ) -> None:
        """Store a run's environment and `tree_paths` of its worktree (call inside `building`)."""
        staging = entry.path.parent / f".staging-{uuid.uuid4().hex}"
        try:
            copy_tree(env_dir, staging / "env")
            for rel in tree_paths:
                copy_path(worktree / rel, staging / "tree" / rel)
            size = tree_size(staging)
            (staging / "meta.json").write_text(json.dumps({**meta, "bytes": size}))
            (staging / "used").touch()
            staging.rename(entry.path)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        self.evict(keep=entry)

    def evict(self, *, keep: Entry | None = None) -> list[Path]:
        """Remove least recently used entries until the total fits; busy entries stay."""
        entries = sorted(self._entries(), key=lambda e: e[1])
        total = sum(size for _, _, size in entries)
        removed: list[Path] = []
        for path, _, size in entries:
            if total <= self.max_bytes:
                break
            if keep is not None and path == keep.path:
                continue
            if _remove_if_free(Entry(path)):
                removed.append(path)
                total -= size
        return removed

    def _entries(self) -> Iterator[tuple[Path, float, int]]:
        """(path, last use, bytes) of every saved entry."""
        for meta in self.root.glob("*/*/meta.json"):
            if meta.parent.name.startswith("."):  # being saved (.staging-) or deleted (.trash-)
                continue
            with contextlib.suppress(OSError, ValueError):
                size = int(json.loads(meta.read_text())["bytes"])
                yield meta.parent, (meta.parent / "used").stat().st_mtime, size


def _lock_path(entry: Entry) -> Path:
    entry.path.parent.mkdir(parents=True, exist_ok=True)
    return entry.path.with_name(entry.path.name + ".lock")


@contextlib.contextmanager
def _flock(path: Path, mode: int) -> Iterator[None]:
    """flock(2) on `path`: between processes and, each open being its own, between threads."""
    with path.open("a") as handle:
        fcntl.flock(handle, mode)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _remove_if_free(entry: Entry) -> bool:
    """Delete an entry nobody is restoring or building; False when it is busy or gone."""
    with _lock_path(entry).open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        try:
            if not entry.exists():  # another run's eviction, listed at the same time, came first
                return False
            trash = entry.path.with_name(f".trash-{uuid.uuid4().hex}")
            entry.path.rename(trash)  # gone at once for readers, then deleted
            shutil.rmtree(trash, ignore_errors=True)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    return True


def copy_tree(src: Path, dst: Path) -> None:
    """Copy the contents of directory `src` into `dst`, keeping symlinks as symlinks.

    GNU cp shares the blocks on copy-on-write file systems (btrfs, XFS); elsewhere it copies,
    as shutil does where cp is another one. Never hard links: a command writing into a file in
    place would change the cache entry behind every later run.
    """
    cp = shutil.which("cp")
    dst.mkdir(parents=True, exist_ok=True)
    if cp is not None:
        done = subprocess.run(
            [cp, "-a", "--reflink=auto", f"{src}/.", str(dst)],
            capture_output=True,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        if done.returncode == 0:
            return
    shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)


def copy_path(src: Path, dst: Path) -> None:
    """Copy one file, symlink or directory to `dst`."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir() and not src.is_symlink():
        copy_tree(src, dst)
    else:
        shutil.copy2(src, dst, follow_symlinks=False)


def tree_size(root: Path) -> int:
    """Bytes of the files under `root` (symlinks counted as themselves)."""
    total = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total
