"""Where each pass's context comes from: the ContextSource seam and its file-seeded form."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from agent.config.files import RetrievalConfig
from agent.git import repo as git
from agent.llm.logged import LoggedLLMClient
from agent.models import ContextPackage, RefinementRequest
from agent.retrieval.indexing.index import Progress, RepoIndex, default_index_path
from agent.retrieval.indexing.scan import is_test_path, test_subject
from agent.retrieval.packing import context_from_files
from agent.retrieval.pipeline import IndexedContext, Mode
from agent.retrieval.seeds import PATH_PATTERN, normalize_path
from agent.sandbox.base import TREE_MOUNT


class ContextSource(Protocol):
    """Builds the clean-room context of one pass, within a token budget."""

    def gather(
        self,
        task: str,
        *,
        mode: Mode,
        files: Sequence[str],
        failure: str | None,
        budget_tokens: int,
        classifier: LoggedLLMClient | None,
        symbols: Sequence[str] = (),
    ) -> ContextPackage:
        """A fresh package for one pass, seeded with `files` and what the texts mention;
        the definitions named `symbols` (a step's target symbols) shown whole where a file
        is shown in part."""
        ...

    def refine(
        self,
        package: ContextPackage,
        request: RefinementRequest,
        *,
        classifier: LoggedLLMClient | None,
    ) -> ContextPackage:
        """The package widened by what the request says is missing, in the same budget."""
        ...

    def test_files(self, task: str, *, limit: int) -> list[str]:
        """The repository's test files nearest `task`, best first (no model call)."""
        ...

    def refresh(self) -> None:
        """Catch up with commits made in the worktree."""
        ...

    def close(self) -> None:
        """Release what the source holds (an index file)."""
        ...


def mentioned_paths(root: Path, *texts: str | None) -> list[str]:
    """Repository files named in free text (task, failure output), in order of mention; an
    absolute path inside the worktree (a traceback's frame), as the host or the sandbox
    (TREE_MOUNT) sees it, as the file it names."""
    prefixes = {f"{str(r).strip('/')}/" for r in (root, root.resolve(), TREE_MOUNT)}
    found: list[str] = []
    for text in texts:
        for match in PATH_PATTERN.finditer(text or ""):
            rel = normalize_path(match.group("path"))
            inside = next((p for p in prefixes if rel.startswith(p)), "")
            rel = rel.removeprefix(inside)
            if rel not in found and (root / rel).is_file():
                found.append(rel)
    return found


class SeededFiles:
    """The plain context: the named files and the files the texts mention, whole."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def gather(
        self,
        task: str,
        *,
        mode: Mode,
        files: Sequence[str],
        failure: str | None,
        budget_tokens: int,
        classifier: LoggedLLMClient | None,
        symbols: Sequence[str] = (),
    ) -> ContextPackage:
        """Named files first, then mentioned ones, whole, while they fit."""
        del mode, classifier, symbols
        paths = [*files, *mentioned_paths(self._root, task, failure)]
        return context_from_files(task, self._root, paths, budget_tokens=budget_tokens)

    def refine(
        self,
        package: ContextPackage,
        request: RefinementRequest,
        *,
        classifier: LoggedLLMClient | None,
    ) -> ContextPackage:
        """The same files plus the missing ones (mentioned files of the error signatures too)."""
        del classifier
        paths = [f.path for f in package.files] + list(request.missing_files)
        paths += mentioned_paths(self._root, *request.error_signatures)
        return context_from_files(
            package.task, self._root, paths, budget_tokens=package.budget_tokens
        )

    def test_files(self, task: str, *, limit: int) -> list[str]:
        """The test files the task mentions, then those of the sources it mentions (by what
        they test), then the others, by path."""
        tracked = git.run_git(["ls-files", "-z"], self._root).split("\0")
        tests = sorted(p for p in tracked if p and is_test_path(p))
        named = mentioned_paths(self._root, task)
        subjects = {test_subject(p) for p in named if not is_test_path(p)}
        paired = [p for p in tests if test_subject(p) in subjects]
        return list(dict.fromkeys([*(p for p in named if is_test_path(p)), *paired, *tests]))[
            :limit
        ]

    def refresh(self) -> None:
        """Nothing to catch up: files are read from disk each time."""

    def close(self) -> None:
        """Nothing to release."""


ContextFactory = Callable[[Path], ContextSource]


class IndexedFactory:
    """Context sources over the repository index, one private copy of it per run.

    Runs on the same repository may overlap (the bot): each works on its own copy of the
    shared index file, updated incrementally, and copies it back when it closes.
    """

    def __init__(
        self, data_dir: Path, config: RetrievalConfig, *, progress: Progress | None = None
    ) -> None:
        self._data_dir = data_dir  # the index files live in data_dir/index (as `cra index`)
        self._config = config
        self._progress = progress  # told of the files read while the index is brought up to date

    def __call__(self, worktree: Path) -> ContextSource:
        """An indexed context for `worktree`, its index brought up to date."""
        shared = default_index_path(self._data_dir, worktree)
        private = shared.with_name(f"{shared.stem}.{uuid.uuid4().hex[:8]}{shared.suffix}")
        private.parent.mkdir(parents=True, exist_ok=True)
        if shared.exists():
            _sqlite_copy(shared, private)
        index = RepoIndex.open(private, config=self._config)
        index.update(worktree, progress=self._progress)
        return _PrivateIndexContext(IndexedContext(index, worktree, self._config), private, shared)


class _PrivateIndexContext:
    """An IndexedContext whose index file is copied back to the shared one on close."""

    def __init__(self, inner: IndexedContext, private: Path, shared: Path) -> None:
        self._inner, self._private, self._shared = inner, private, shared
        self.gather = inner.gather
        self.refine = inner.refine
        self.refresh = inner.refresh
        self.test_files = inner.test_files

    def close(self) -> None:
        """Close the index, publish it as the shared one, remove the private copy."""
        self._inner.close()
        try:
            _sqlite_copy(self._private, self._shared)
        finally:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self._private}{suffix}").unlink(missing_ok=True)


def _sqlite_copy(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite database (the backup API; WAL-safe)."""
    src = sqlite3.connect(source)
    try:
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()
