"""Which paths an edit may touch: relative, inside the worktree, not .git/, not protected, not in
another repository (a submodule or a nested clone)."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from agent.config.files import DEFAULT_PROTECTED
from agent.errors import GitError, UnsafePath
from agent.gate.gate_files import is_cra_config
from agent.git.repo import run_git
from agent.models import PatchEdit

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
    _check_nested_repository(base, target, rel)
    return target


def _check_nested_repository(base: Path, target: Path, rel: str) -> None:
    """UnsafePath if `target` lies in a submodule (listed in .gitmodules, checked out or not) or
    in any other repository inside the tree (a directory holding .git): git leaves such files
    out of the run's commits (`add --all` skips them without a word), and they belong to another
    repository anyway."""
    inside = PurePosixPath(target.relative_to(base).as_posix())
    for submodule in _submodules(base):
        if inside == submodule or submodule in inside.parents:
            raise UnsafePath(
                f"inside the submodule {submodule}/, another repository; cra "
                "edits only this repository's own files",
                path=rel,
            )
    for parent in target.parents:
        if parent == base or not parent.is_relative_to(base):
            return
        if os.path.lexists(parent / ".git"):
            raise UnsafePath(
                f"inside {parent.relative_to(base).as_posix()}/, another git "
                "repository nested in this one; cra edits only this repository's "
                "own files",
                path=rel,
            )


_GITMODULES_PATH = re.compile(r"^\s*path\s*=\s*(.*?)\s*$", re.MULTILINE | re.IGNORECASE)


def _submodules(base: Path) -> tuple[PurePosixPath, ...]:
    """The submodule paths the tree's .gitmodules lists (none without one)."""
    try:
        found = (base / ".gitmodules").stat()
    except OSError:
        return ()
    return _read_submodules(str(base / ".gitmodules"), found.st_mtime_ns, found.st_size)


@functools.lru_cache(maxsize=16)
def _read_submodules(path: str, _mtime_ns: int, _size: int) -> tuple[PurePosixPath, ...]:
    """The `path = …` values of a .gitmodules file (cached while the file is unchanged)."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ()
    found = []
    for value in _GITMODULES_PATH.findall(text):
        cleaned = value.strip().strip('"').strip().strip("/")
        if cleaned:
            found.append(PurePosixPath(cleaned))
    return tuple(found)


def never_edited(posix: str, protected: Sequence[str] = DEFAULT_PROTECTED) -> str | None:
    """Why cra never edits the tree-relative `posix` path (inside .git/, cra's own config, a
    protected glob), or None when it may."""
    if any(part.lower() == ".git" for part in posix.split("/")):
        return "inside .git/, which cra never edits"
    if is_cra_config(posix.lower()):
        return "cra's own config defines the test gate; cra never edits it"
    for pattern in protected:
        if _glob(pattern).fullmatch(posix):
            return f"protected path (matches {pattern!r}); cra never edits it"
    return None


def _check_rules(posix: str, rel: str, protected: Sequence[str]) -> None:
    """UnsafePath if `posix` is inside .git/ or matches a protected glob."""
    if (why := never_edited(posix, protected)) is not None:
        raise UnsafePath(why, path=rel)


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


def repository_path(root: Path, rel: str) -> str:
    """The path git knows the file an edit of `rel` writes by: symlinks inside the tree
    followed (an edit of a link changes its target, which is what the commit must take; git
    refuses a path beyond a symlinked directory); UnsafePath as check_path."""
    return check_path(root, rel, protected=()).relative_to(root.resolve()).as_posix()


def commit_refusal(root: Path, edits: Sequence[PatchEdit]) -> str | None:
    """Why the run's commit would not take an edit, as "edit N of M (path): reason", or None.

    A step commits exactly the files its edits write (repository_path), so each must be a file
    git tracks, or a new one git would track: an existing untracked file is not the
    repository's (the setup step or a test run made it), and a new file under a .gitignore
    rule would never reach the pull request although the tests ran with it. Paths the edit
    engine refuses anyway are left to it. Two git processes at most (one without new files).
    """
    paths: dict[str, list[int]] = {}
    for index, edit in enumerate(edits, start=1):
        try:
            paths.setdefault(repository_path(root, edit.file_path), []).append(index)
        except UnsafePath:
            continue
    if not paths:
        return None
    literal = ["--literal-pathspecs"]  # a name with * or ? is that name, not a pattern
    tracked = set(run_git([*literal, "ls-files", "-z", "--", *paths], root).split("\0"))
    reasons: dict[str, str] = {}
    new = []
    for rel in paths:
        if rel in tracked:
            continue
        if os.path.lexists(root / rel):
            reasons[rel] = (
                "not one of the repository's files: git does not track it (the "
                "setup step or a test run made it); edit the tracked files"
            )
        else:
            new.append(rel)
    for rel, rule in _ignore_rules(root, new).items():
        reasons[rel] = (
            f"git ignores this path ({rule}), so the new file would never reach "
            "the pull request; create it where the repository keeps its files"
        )
    if not reasons:
        return None
    index, rel = min((paths[rel][0], rel) for rel in reasons)
    return f"edit {index} of {len(edits)} ({rel}): {reasons[rel]}"


def _ignore_rules(root: Path, paths: Sequence[str]) -> dict[str, str]:
    """Of untracked `paths`, those a .gitignore rule (or info/exclude, or core.excludesFile)
    hides: path → "`rule` in source, line N"."""
    if not paths:
        return {}
    try:
        out = run_git(
            ["check-ignore", "--verbose", "-z", "--stdin"], root, input="\0".join(paths) + "\0"
        )
    except GitError:  # 1: none of them is ignored; else git cannot tell, and the commit will
        return {}
    fields = out.split("\0")
    found = {}
    for at in range(0, len(fields) - 3, 4):
        source, line, rule, rel = fields[at : at + 4]
        if rel and not rule.startswith("!"):  # a negated rule matched: the path is kept
            found[rel] = f"`{rule}` in {source}, line {line}"
    return found


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
