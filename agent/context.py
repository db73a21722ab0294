"""Where each pass's context comes from: the ContextSource seam and its file-seeded form."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol

from agent.llm.logged import LoggedLLMClient
from agent.models import ContextPackage, RefinementRequest
from agent.retrieval.pipeline import context_from_files

Mode = Literal["plan", "implement"]
_PATH_MENTION = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.[A-Za-z0-9]{1,8})\b")


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
    ) -> ContextPackage:
        """A fresh package for one pass, seeded with `files` and what the texts mention."""
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

    def refresh(self) -> None:
        """Catch up with commits made in the worktree."""
        ...


def mentioned_paths(root: Path, *texts: str | None) -> list[str]:
    """Repository files named in free text (task, failure output), in order of mention."""
    found: list[str] = []
    for text in texts:
        for match in _PATH_MENTION.finditer(text or ""):
            rel = match.group(1).lstrip("./")
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
    ) -> ContextPackage:
        """Named files first, then mentioned ones, whole, while they fit."""
        del mode, classifier
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

    def refresh(self) -> None:
        """Nothing to catch up: files are read from disk each time."""
