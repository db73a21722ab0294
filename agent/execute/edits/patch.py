"""Search/replace edits applied to a worktree all or none: simulated in memory first, then
written atomically and rolled back on failure. Matching is in `matching`, path rules in `paths`."""

from __future__ import annotations

import difflib
import os
import secrets
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.config.files import DEFAULT_PROTECTED
from agent.errors import PatchRejected, UnsafePath
from agent.execute.edits.lines import split_lines
from agent.execute.edits.matching import replace_once
from agent.execute.edits.paths import check_path, normalise_path, same_named
from agent.models import PatchEdit, PatchResult

__all__ = [
    "PatchResult",
    "apply_edits",
    "check_path",
    "normalise_path",
    "replace_once",
    "rollback_edits",
    "unified_diff",
    "validate_edits",
    "write_atomic",
]

Writer = Callable[[Path, str, int | None], None]
"""Writes text to a path with a file mode (None: a new file's default mode)."""

# --- planning: every edit simulated in memory ------------------------------------------------


@dataclass
class _FileChange:
    """One file's state while edits are simulated: original text (None: absent) and new text."""

    rel: str
    path: Path
    original: str | None
    content: str | None
    mode: int | None


@dataclass(frozen=True)
class _Failure:
    """One rejected edit: its 1-based index, file, reason and retry hint."""

    index: int
    rel: str
    reason: str
    hint: str = ""

    def describe(self, total: int) -> str:
        return f"edit {self.index} of {total} ({self.rel}): {self.reason}"


def _plan(
    edits: Sequence[PatchEdit], root: Path, protected: Sequence[str]
) -> tuple[list[_FileChange], list[_Failure]]:
    """Simulate the edits per file in answer order; a file's later edits stop at its failure."""
    changes: dict[Path, _FileChange] = {}
    failed: set[Path] = set()
    failures: list[_Failure] = []
    for index, edit in enumerate(edits, start=1):
        try:
            path = check_path(root, edit.file_path, protected=protected)
        except UnsafePath as exc:
            failures.append(_Failure(index, edit.file_path, exc.reason, exc.hint))
            continue
        if path in failed:
            continue
        change = changes.get(path)
        try:
            # the file by its name in the tree: an edit through a symlink writes the target
            change = change or _load(path, path.relative_to(root.resolve()).as_posix(), root)
            change.content = _apply_one(change, edit, root)
            changes[path] = change
        except PatchRejected as exc:
            failed.add(path)
            failures.append(_Failure(index, normalise_path(edit.file_path), exc.reason, exc.hint))
    return list(changes.values()), failures


def _load(path: Path, rel: str, root: Path) -> _FileChange:
    """A file's current state; PatchRejected for directories, unreadable or non-UTF-8 files."""
    if path.is_dir():
        raise PatchRejected("is a directory, not a file")
    if not path.exists():
        _check_creatable(path, root)
        return _FileChange(rel, path, None, None, None)
    try:
        data = path.read_bytes()
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError as exc:
        raise PatchRejected(f"cannot read the file: {exc.strerror}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PatchRejected(
            f"not a UTF-8 text file (invalid byte at offset {exc.start}); cra edits only UTF-8 text"
        ) from exc
    return _FileChange(rel, path, text, text, mode)


def _check_creatable(path: Path, root: Path) -> None:
    """PatchRejected if an existing non-directory stands where a parent directory must go."""
    for parent in path.parents:
        if parent == root.resolve():
            return
        if parent.exists() and not parent.is_dir():
            raise PatchRejected(f"cannot create the file: {parent.name} is not a directory")


def _apply_one(change: _FileChange, edit: PatchEdit, root: Path) -> str:
    """The file's text after `edit`; PatchRejected when it cannot apply."""
    try:
        edit.replacement.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PatchRejected("the replacement is not valid Unicode text") from exc
    if change.content is None:
        if edit.search:
            found = same_named(change.path, root.resolve())
            hint = f"files of that name: {', '.join(found)}" if found else ""
            raise PatchRejected(
                "file not found; to create a new file use an empty <search>"
                + (f" (did you mean {found[0]}?)" if len(found) == 1 else ""),
                hint=hint,
            )
        return _new_file_text(edit.replacement)
    return replace_once(change.content, edit.search, edit.replacement)


def _new_file_text(text: str) -> str:
    """A new file's text: ends with a newline, which the edit format strips."""
    return text if not text or text.endswith("\n") else text + "\n"


# --- writing ---------------------------------------------------------------------------------


def write_atomic(path: Path, content: str, mode: int | None) -> None:
    """Write UTF-8 text through a temp file in the same directory and os.replace."""
    temp = path.with_name(f".cra-{secrets.token_hex(8)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content.encode("utf-8"))
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def validate_edits(
    edits: Sequence[PatchEdit], root: Path, *, protected: Sequence[str] = DEFAULT_PROTECTED
) -> list[str]:
    """Why each failing edit would be rejected; [] when all apply. Writes nothing."""
    _, failures = _plan(edits, root, protected)
    return [failure.describe(len(edits)) for failure in failures]


def apply_edits(
    edits: Sequence[PatchEdit],
    root: Path,
    *,
    protected: Sequence[str] = DEFAULT_PROTECTED,
    write: Writer = write_atomic,
) -> PatchResult:
    """Apply all edits or none: validate everything, then write atomically, undoing on failure."""
    if not edits:
        return PatchResult(success=False, error_info="no edits to apply")
    changes, failures = _plan(edits, root, protected)
    if failures:
        info = "\n".join(failure.describe(len(edits)) for failure in failures)
        return PatchResult(success=False, error_info=info, hint=failures[0].hint)
    changes = [c for c in changes if c.content is not None and c.content != c.original]
    try:
        dirs = _write_all(changes, root, write)
    except _WriteFailed as exc:
        return PatchResult(success=False, error_info=str(exc))
    return PatchResult(
        success=True,
        files_modified=[c.rel for c in changes if c.original is not None],
        files_created=[c.rel for c in changes if c.original is None],
        dirs_created=dirs,
        original_contents={c.rel: c.original for c in changes},
        diff="".join(unified_diff(c.rel, c.original, c.content or "") for c in changes),
    )


class _WriteFailed(Exception):
    """A write failed midway; the message says what was restored."""


def _write_all(changes: list[_FileChange], root: Path, write: Writer) -> list[str]:
    """Write every change (creating parents); on an OSError restore all and raise _WriteFailed."""
    written: list[_FileChange] = []
    dirs: list[Path] = []
    for change in changes:
        try:
            _make_parents(change.path, root.resolve(), dirs)
            write(change.path, change.content or "", change.mode)
        except OSError as exc:
            problems = _restore(written, dirs, write)
            undone = (
                "rollback incomplete: " + "; ".join(problems)
                if problems
                else (f"all {len(written)} file(s) written before it were restored")
            )
            raise _WriteFailed(f"writing {change.rel} failed ({exc}); {undone}") from exc
        written.append(change)
    return [d.relative_to(root.resolve()).as_posix() for d in dirs]


def _make_parents(path: Path, base: Path, created: list[Path]) -> None:
    """Create the missing parent directories of `path`, outermost first, noting each."""
    missing = [p for p in path.parents if p.is_relative_to(base) and not p.exists()]
    for directory in reversed(missing):
        directory.mkdir()
        created.append(directory)


def _restore(written: list[_FileChange], dirs: list[Path], write: Writer) -> list[str]:
    """Put back what `written` replaced, remove created dirs; the problems met doing so."""
    problems = []
    for change in reversed(written):
        try:
            if change.original is None:
                change.path.unlink(missing_ok=True)
            else:
                write(change.path, change.original, change.mode)
        except OSError as exc:
            problems.append(f"{change.rel}: {exc}")
    for directory in reversed(dirs):
        try:
            directory.rmdir()
        except OSError as exc:
            problems.append(f"{directory}: {exc}")
    return problems


def rollback_edits(result: PatchResult, root: Path) -> None:
    """Restore the originals of a PatchResult, delete created files and the dirs made for them."""
    for rel, original in result.original_contents.items():
        path = check_path(root, rel, protected=())
        if original is None:
            path.unlink(missing_ok=True)
        else:
            mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else None
            write_atomic(path, original, mode)
    for rel in reversed(result.dirs_created):
        directory = root / rel
        if directory.is_dir() and not any(directory.iterdir()):
            directory.rmdir()


def unified_diff(rel: str, before: str | None, after: str) -> str:
    """A git-style diff of one file (`/dev/null` for a new one), marking a missing final newline."""
    header = f"diff --git a/{rel} b/{rel}\n" + ("new file mode 100644\n" if before is None else "")
    lines = difflib.unified_diff(
        split_lines(before or ""),
        split_lines(after),
        "/dev/null" if before is None else f"a/{rel}",
        f"b/{rel}",
    )
    body = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
    return header + body if body or before is None else ""
