"""Which paths an edit may touch: relative, inside the worktree, not .git/, not protected."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from agent.config import DEFAULT_PROTECTED
from agent.errors import UnsafePath
from agent.gate import is_cra_config

_DRIVE = re.compile(r"[A-Za-z]:")


def normalise_path(rel: str) -> str:
    """The posix relative form of `rel` (`./a.py` → `a.py`); UnsafePath if it has none."""
    cleaned = rel.replace("\\", "/")
    if not cleaned.strip() or "\x00" in cleaned:
        raise UnsafePath("empty or invalid path", path=rel)
    if cleaned.startswith("/") or _DRIVE.match(cleaned):
        raise UnsafePath("absolute path; give a path relative to the repository root", path=rel)
    parts = PurePosixPath(cleaned).parts
    if ".." in parts:
        raise UnsafePath("'..' in the path leaves the repository", path=rel)
    if not parts:
        raise UnsafePath("not a file path", path=rel)
    return "/".join(parts)


def check_path(root: Path, rel: str, *, protected: Sequence[str] = DEFAULT_PROTECTED) -> Path:
    """The resolved path of `rel` inside `root`; UnsafePath when it is off-limits."""
    clean = normalise_path(rel)
    _check_rules(clean, rel, protected)
    base = root.resolve()
    try:
        target = (base / clean).resolve()
    except (OSError, RuntimeError) as exc:
        raise UnsafePath(f"cannot resolve the path: {exc}", path=rel) from exc
    if not target.is_relative_to(base) or target == base:
        raise UnsafePath("the path leaves the repository through a symlink", path=rel)
    resolved = target.relative_to(base).as_posix()
    if resolved != clean:  # an in-tree symlink must not lead into .git or a protected path
        _check_rules(resolved, rel, protected)
    return target


def _check_rules(posix: str, rel: str, protected: Sequence[str]) -> None:
    """UnsafePath if `posix` is inside .git/ or matches a protected glob."""
    if any(part.lower() == ".git" for part in posix.split("/")):
        raise UnsafePath("inside .git/, which cra never edits", path=rel)
    if is_cra_config(posix.lower()):
        raise UnsafePath("cra's own config defines the test gate; cra never edits it", path=rel)
    for pattern in protected:
        if _glob(pattern).fullmatch(posix):
            raise UnsafePath(f"protected path (matches {pattern!r}); cra never edits it", path=rel)


@functools.lru_cache(maxsize=64)
def _glob(pattern: str) -> re.Pattern[str]:
    """A regex for an fnmatch-style glob where `**` also crosses directories."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            out.append({"*": "[^/]*", "?": "[^/]"}.get(pattern[i], re.escape(pattern[i])))
            i += 1
    return re.compile("".join(out), re.IGNORECASE | re.DOTALL)


MAX_SAME_NAMED = 5
_WALK_LIMIT = 20_000  # files looked at before giving up: a hint is not worth a long walk


def same_named(missing: Path, root: Path) -> list[str]:
    """Files under `root` (outside .git) named like the missing file, as relative paths."""
    found: list[str] = []
    seen = 0
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        seen += len(filenames)
        if missing.name in filenames:
            found.append((Path(directory) / missing.name).relative_to(root).as_posix())
        if len(found) >= MAX_SAME_NAMED or seen > _WALK_LIMIT:
            break
    return found
