"""The per-pass context pipeline; for now the seeded seam: named files, packed into a budget."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agent.llm.budget import estimate_tokens
from agent.models import ContextFile, ContextPackage, DroppedFile


def context_from_files(
    task: str, root: Path, paths: Sequence[str], *, budget_tokens: int
) -> ContextPackage:
    """Whole files, in the order given, while they fit `budget_tokens`; the rest are recorded
    as dropped with the reason (absent files may be created by the step)."""
    package = ContextPackage(task=task, budget_tokens=budget_tokens)
    for rel in dict.fromkeys(paths):
        _add_file(package, root, rel)
    return package


def _add_file(package: ContextPackage, root: Path, rel: str) -> None:
    path = root / rel
    if not _inside(root, path) or not path.is_file():
        package.dropped.append(DroppedFile(path=rel, reason="not in the repository"))
        return
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        package.dropped.append(DroppedFile(path=rel, reason="not UTF-8 text"))
        return
    tokens = estimate_tokens(text) + estimate_tokens(rel) + 8
    if package.used_tokens + tokens > package.budget_tokens:
        package.dropped.append(DroppedFile(path=rel, reason=f"over budget ({tokens} tokens)"))
        return
    package.files.append(ContextFile(path=rel, content=text, tokens=tokens))
    package.used_tokens += tokens


def _inside(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True
