"""Search/replace edits applied to a worktree: matching, path safety, atomic writes, rollback."""

from __future__ import annotations

import difflib
import functools
import os
import re
import secrets
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from agent.config import DEFAULT_PROTECTED
from agent.errors import PatchRejected, UnsafePath
from agent.gate import is_cra_config
from agent.models import PatchEdit, PatchResult

Writer = Callable[[Path, str, int | None], None]
"""Writes text to a path with a file mode (None: a new file's default mode)."""

_MAX_LISTED = 10
_MIN_SIMILARITY = 0.5
_DRIVE = re.compile(r"[A-Za-z]:")

# --- matching (pure) -------------------------------------------------------------------------


@dataclass(frozen=True)
class Shift:
    """How the file's indentation differs from the search's: one prefix added or removed."""

    added: str = ""
    removed: str = ""


def replace_once(text: str, search: str, replacement: str) -> str:
    """`text` with the one match of `search` replaced: exact first, else whitespace-normalised.

    The replacement is written with the file's line endings. PatchRejected when there is no
    match or more than one (its hint shows the matches or the closest region).
    """
    if not search:
        if text:
            raise PatchRejected("empty search on an existing non-empty file; quote the lines "
                                "to replace, or pick a new file name to create a file")
        return replacement
    eol = line_ending(text)
    starts = _occurrences(text, search)
    if len(starts) > 1:
        numbers = [text.count("\n", 0, start) + 1 for start in starts]
        raise _ambiguous(len(starts), numbers, split_lines(text), "")
    if not starts:
        return _replace_normalised(text, search, replacement, eol)
    start, end = starts[0], starts[0] + len(search)
    if not replacement:
        end = _deleted_line_end(text, start, end)
    return text[:start] + _with_eol(replacement, eol) + text[end:]


def _deleted_line_end(text: str, start: int, end: int) -> int:
    """Where a deletion ends: past the line ending when the match spans whole lines.

    The edit format drops the newline before </search>, so deleting whole lines would
    otherwise leave an empty line behind.
    """
    at_line_start = start == 0 or text[start - 1] == "\n"
    if at_line_start and text[end - 1] != "\n":
        for ending in ("\r\n", "\n"):
            if text.startswith(ending, end):
                return end + len(ending)
    return end


def line_ending(text: str) -> str:
    """The text's dominant line ending: "\\r\\n" or "\\n"."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf * 2 >= text.count("\n") else "\n"


def split_lines(text: str) -> list[str]:
    """Lines split at "\\n" only, each keeping its line ending."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def _with_eol(text: str, eol: str) -> str:
    """`text` with every line ending made `eol`."""
    text = text.replace("\r\n", "\n")
    return text if eol == "\n" else text.replace("\n", eol)


def _occurrences(text: str, search: str) -> list[int]:
    """Start offsets of every (also overlapping) occurrence of `search`."""
    found: list[int] = []
    start = text.find(search)
    while start != -1:
        found.append(start)
        start = text.find(search, start + 1)
    return found


def _ambiguous(count: int, numbers: list[int], lines: list[str], how: str) -> PatchRejected:
    """The rejection of a search that matches `count` times, listing the first lines."""
    listed = "\n".join(f"line {n}: {lines[n - 1].rstrip()}" for n in numbers[:_MAX_LISTED])
    return PatchRejected(
        f"ambiguous: the search text matches {count} times{how}; "
        "include more surrounding lines so that it matches exactly once",
        hint=f"the search text matches at:\n{listed}",
    )


def _block_lines(text: str) -> list[str]:
    """The lines of a search or replacement, without line endings (a final one dropped)."""
    text = text.replace("\r\n", "\n")
    if not text:
        return []
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    return lines[:-1] if text.endswith("\n") else lines


def _edge_blanks(lines: list[str]) -> tuple[int, int]:
    """How many blank lines open and close `lines`."""
    head = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    tail = next((i for i, line in enumerate(reversed(lines)) if line.strip()), len(lines))
    return head, tail


def _replace_normalised(text: str, search: str, replacement: str, eol: str) -> str:
    """Replace the unique match that ignores trailing whitespace, an indent shift and CRLF."""
    lines = split_lines(text)
    needle = _block_lines(search)
    head, tail = _edge_blanks(needle)
    needle = [line.rstrip() for line in needle[head : len(needle) - tail]]
    matches = _normalised_matches(lines, needle) if needle else []
    if not matches:
        raise PatchRejected("search text not found", hint=closest_region(text, search))
    if len(matches) > 1:
        numbers = [start + 1 for start, _ in matches]
        raise _ambiguous(len(matches), numbers, lines, " when whitespace is ignored")
    start, shift = matches[0]
    new = _reindent(_trim_edges(_block_lines(replacement), head, tail), shift)
    end = start + len(needle)
    body = eol.join(new) + (eol if new and lines[end - 1].endswith("\n") else "")
    return "".join(lines[:start]) + body + "".join(lines[end:])


def _normalised_matches(lines: list[str], needle: list[str]) -> list[tuple[int, Shift]]:
    """Every (start line index, shift) where `needle` matches modulo whitespace."""
    found = []
    for start in range(len(lines) - len(needle) + 1):
        shift = _shift_at(lines[start : start + len(needle)], needle)
        if shift is not None:
            found.append((start, shift))
    return found


def _shift_at(window: list[str], needle: list[str]) -> Shift | None:
    """The one indentation shift that maps `needle` onto `window`, or None."""
    shift: Shift | None = None
    for have, want in zip(window, needle, strict=True):
        have = have.rstrip()
        if not want.strip():
            if have.strip():
                return None
            continue
        delta = _indent_delta(have, want)
        if delta is None or (shift is not None and delta != shift):
            return None
        shift = delta
    return shift


def _indent_delta(have: str, want: str) -> Shift | None:
    """The indentation shift between a file line and a search line with equal code."""
    have_code, want_code = have.lstrip(" \t"), want.lstrip(" \t")
    if have_code != want_code:
        return None
    have_indent = have[: len(have) - len(have_code)]
    want_indent = want[: len(want) - len(want_code)]
    if have_indent.endswith(want_indent):
        return Shift(added=have_indent[: len(have_indent) - len(want_indent)])
    if want_indent.endswith(have_indent):
        return Shift(removed=want_indent[: len(want_indent) - len(have_indent)])
    return None


def _trim_edges(lines: list[str], head: int, tail: int) -> list[str]:
    """`lines` without up to `head` leading and `tail` trailing blank lines."""
    lead, trail = _edge_blanks(lines)
    lines = lines[min(head, lead) :]
    return lines[: len(lines) - min(tail, trail, len(lines))]


def _reindent(lines: list[str], shift: Shift) -> list[str]:
    """Replacement lines moved by the same shift as the search."""
    moved = []
    for line in lines:
        if not line.strip():
            moved.append("")
            continue
        if shift.removed:
            indent = len(line) - len(line.lstrip(" \t"))
            cut = len(shift.removed) if line.startswith(shift.removed) else indent
            line = line[min(cut, indent) :]
        moved.append(shift.added + line)
    return moved


def closest_region(text: str, search: str) -> str:
    """The file region most similar to `search`, with line numbers, for a retry prompt."""
    lines = [line.rstrip("\r\n") for line in split_lines(text)]
    if not lines:
        return "the file is empty"
    needle = [line.strip() for line in _block_lines(search) if line.strip()] or [search.strip()]
    size = min(len(needle), len(lines))
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2("\n".join(needle))
    scored = []
    for start in range(len(lines) - size + 1):
        matcher.set_seq1("\n".join(line.strip() for line in lines[start : start + size]))
        scored.append((matcher.quick_ratio(), -start))
    best, start = 0.0, 0
    for _, negative in sorted(scored, reverse=True)[:8]:
        matcher.set_seq1("\n".join(line.strip() for line in lines[-negative : -negative + size]))
        if matcher.ratio() > best:
            best, start = matcher.ratio(), -negative
    if best < _MIN_SIMILARITY:
        return "nothing in the file resembles the search text; check the file and the lines"
    shown = "\n".join(f"{n:>5} | {lines[n - 1]}" for n in range(start + 1, start + size + 1))
    percent = int(best * 100)  # floored: a near miss never reads "100% similar"
    return f"did you mean lines {start + 1}-{start + size} ({percent}% similar)?\n{shown}"


# --- paths -----------------------------------------------------------------------------------


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
            change = change or _load(path, normalise_path(edit.file_path), root)
            change.content = _apply_one(change, edit)
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
        raise PatchRejected(f"not a UTF-8 text file (invalid byte at offset {exc.start}); "
                            "cra edits only UTF-8 text") from exc
    return _FileChange(rel, path, text, text, mode)


def _check_creatable(path: Path, root: Path) -> None:
    """PatchRejected if an existing non-directory stands where a parent directory must go."""
    for parent in path.parents:
        if parent == root.resolve():
            return
        if parent.exists() and not parent.is_dir():
            raise PatchRejected(f"cannot create the file: {parent.name} is not a directory")


def _apply_one(change: _FileChange, edit: PatchEdit) -> str:
    """The file's text after `edit`; PatchRejected when it cannot apply."""
    try:
        edit.replacement.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PatchRejected("the replacement is not valid Unicode text") from exc
    if change.content is None:
        if edit.search:
            raise PatchRejected("file not found; to create a new file use an empty <search>")
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
            undone = "rollback incomplete: " + "; ".join(problems) if problems else (
                f"all {len(written)} file(s) written before it were restored")
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
        split_lines(before or ""), split_lines(after),
        "/dev/null" if before is None else f"a/{rel}", f"b/{rel}",
    )
    body = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
    return header + body if body or before is None else ""
