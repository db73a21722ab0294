"""Reading a worktree for the index: tracked files with blob SHAs, skip rules, decoded text."""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from agent.git.repo import run_git
from agent.git.treefiles import read_in_tree
from agent.llm.budget import estimate_tokens
from agent.retrieval.indexing.parsing import language_of, parse_source
from agent.retrieval.indexing.symbols import ParsedFile

FileStatus = Literal["parsed", "text", "syntax_error", "capped", "binary"]
BINARY_SNIFF_BYTES = 8192
_SUBMODULE, _SYMLINK = "160000", "120000"
_VOCABULARY_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
# folders of tests, and of the data tests compare against (Go's testdata, Jest's and insta's
# snapshots, fixtures): changing what a test expects is changing the test
_TEST_DIRS = frozenset(
    {
        "test",
        "tests",
        "testing",
        "__tests__",
        "spec",
        "specs",
        "testdata",
        "test_data",
        "fixtures",
        "__snapshots__",
        "snapshots",
    }
)


@dataclass(frozen=True)
class ScanRules:
    """What the index leaves out or caps."""

    skip_dirs: tuple[str, ...]
    skip_globs: tuple[str, ...]
    max_file_bytes: int


@dataclass
class Listing:
    """Tracked files to index (path → blob SHA) and the ones skipped, counted by reason."""

    entries: dict[str, str] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)


@dataclass
class FileRecord:
    """One file read and parsed, ready to store; `vocabulary` holds its distinct identifiers."""

    path: str
    blob_sha: str
    status: FileStatus
    size: int
    tokens: int
    parsed: ParsedFile
    vocabulary: str = ""


def list_worktree(worktree: Path, rules: ScanRules) -> Listing:
    """Tracked files of `worktree` with the blob SHA of their content on disk."""
    listing = Listing()
    dirty = set(_split_z(run_git(["diff", "--name-only", "--no-renames", "-z"], worktree)))
    for line in _split_z(run_git(["ls-files", "--stage", "-z"], worktree)):
        meta, _, path = line.partition("\t")
        mode, sha, _stage = meta.split(" ")
        reason = skip_reason(path, mode, rules)
        if reason is not None:
            listing.skipped[reason] += 1
        elif path in dirty:
            with contextlib.suppress(OSError):  # gone, or no longer a plain file of the tree
                listing.entries[path] = blob_sha(read_in_tree(worktree, path))
        else:
            listing.entries[path] = sha
    return listing


def _split_z(output: str) -> list[str]:
    """The NUL-separated records of a `-z` git output."""
    return [item for item in output.split("\0") if item]


def skip_reason(path: str, mode: str, rules: ScanRules) -> str | None:
    """Why `path` is left out of the index by its mode or location, or None."""
    if mode == _SUBMODULE:
        return "submodule"
    if mode == _SYMLINK:
        return "symlink"
    parts = PurePosixPath(path).parts
    if any(part in rules.skip_dirs for part in parts[:-1]):
        return "vendored"
    if any(fnmatch.fnmatchcase(parts[-1], glob) for glob in rules.skip_globs):
        return "generated"
    return None


def blob_sha(data: bytes) -> str:
    """The git blob SHA-1 of `data`."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def read_file(worktree: Path, path: str, sha: str, max_bytes: int) -> FileRecord | None:
    """Read and parse one file: binary skipped, huge capped, undecodable bytes replaced."""
    try:
        data = read_in_tree(worktree, path, max_bytes + 1)
    except OSError:
        return None  # vanished or unreadable since the listing
    language = language_of(path)
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return FileRecord(path, sha, "binary", len(data), 0, ParsedFile(language, "text"))
    if len(data) > max_bytes:
        size = (worktree / path).stat().st_size
        text = data[:max_bytes].decode("utf-8", errors="replace")
        parsed = ParsedFile(language, "text")
        return FileRecord(
            path, sha, "capped", size, estimate_tokens(text), parsed, vocabulary(text)
        )
    text = data.decode("utf-8", errors="replace")
    parsed = parse_source(path, text)
    return FileRecord(
        path, sha, parsed.status, len(data), estimate_tokens(text), parsed, vocabulary(text)
    )


def vocabulary(text: str) -> str:
    """The distinct words of three or more characters in `text`, space-separated."""
    return " ".join(set(_VOCABULARY_WORD.findall(text)))


_SCRIPT_SUFFIXES = frozenset({".js", ".cjs", ".mjs", ".jsx", ".ts", ".cts", ".mts", ".tsx"})


def is_test_path(path: str) -> bool:
    """True for files that look like tests by folder or name in common conventions."""
    pure = PurePosixPath(path)
    name = pure.name
    stem = name.split(".", 1)[0]
    lower = stem.lower()
    return (
        any(part.lower() in _TEST_DIRS for part in pure.parts[:-1])
        or lower.startswith("test_")
        or lower.endswith(("_test", "_tests"))
        or lower == "conftest"
        or lower in ("test", "tests")  # Django's app/tests.py
        or (name.endswith(".py") and lower.startswith("test"))  # unittest discovers test*.py
        or ".test." in name
        or ".spec." in name
        or stem.endswith(("Test", "Tests"))
        # node --test's own defaults: calc-test.js, test-calc.mjs
        or (
            pure.suffix in _SCRIPT_SUFFIXES
            and (lower.endswith(("-test", "-spec")) or lower.startswith("test-"))
        )
    )


def test_subject(path: str) -> str:
    """What a file is about for source↔test pairing: `tests/test_ops.py` and `ops.py` → "ops"."""
    pure = PurePosixPath(path)
    stem = pure.name.split(".", 1)[0]
    if stem in ("__init__", "index", "mod", "lib", "main"):
        stem = pure.parent.name or stem
    lower = stem.lower()
    if not is_test_path(path):
        return lower
    for prefix in ("test_", "tests_"):
        lower = lower.removeprefix(prefix)
    for suffix in ("_tests", "_test", "tests", "test"):
        if lower.endswith(suffix) and len(lower) > len(suffix):
            return lower.removesuffix(suffix).rstrip("_")
    return lower
