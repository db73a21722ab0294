"""What a prompt shows of a fix, for the context-honest oracle: the fix's files whose path or
code stands in it, its hunks whose lines stand in it whole, the file it shows closest to a fix's
file, and the definitions the fix changes (by the lines each hunk touches)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath

from agent.bench.patches import FilePatch
from agent.retrieval.parsing import parse_source

_FILE_BLOCK = re.compile(r'<file path="([^"]+)"')
_SCOPE_FILE = re.compile(r"^File: (\S+) \(", re.M)
_PRECISION_SYMBOL = re.compile(r"(?:^Is|full body of) `([\w.]+)`", re.M)


def shown_files(prompt: str) -> list[str]:
    """The paths of the file blocks a prompt holds, in order."""
    return list(dict.fromkeys(_FILE_BLOCK.findall(prompt)))


def old_text(hunk: tuple[int, list[str], list[str]]) -> str:
    """A hunk's lines before the fix, as one block."""
    return "\n".join(hunk[1]).strip("\n")


def hunk_shown(prompt: str, hunk: tuple[int, list[str], list[str]]) -> bool:
    """Whether every line a hunk changes or keeps around its change stands in the prompt, in
    order (a hunk of a new file has nothing to see)."""
    text = old_text(hunk)
    return not text or text in prompt


def file_shown(prompt: str, file: FilePatch) -> bool:
    """Whether the prompt names the file's path or shows one of its hunks' code."""
    if file.path in prompt:
        return True
    return any(old_text(h) and hunk_shown(prompt, h) for h in file.hunks)


def closest(candidates: Sequence[str], targets: Sequence[str]) -> str | None:
    """The candidate nearest to any target: the longest shared folder prefix, then a shared
    name stem, then the first."""
    def score(path: str) -> tuple[int, int]:
        best = (0, 0)
        for target in targets:
            a, b = PurePosixPath(path).parts, PurePosixPath(target).parts
            shared = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                          min(len(a), len(b)))
            stem = int(PurePosixPath(path).stem.strip("_") == PurePosixPath(target).stem.strip("_"))
            best = max(best, (shared, stem))
        return best
    return max(candidates, key=score, default=None)


def changed_symbols(files: Sequence[FilePatch], before: Mapping[str, str]) -> set[str]:
    """The qualified names of the definitions whose lines a hunk touches, and their parents."""
    found: set[str] = set()
    for file in files:
        text = before.get(file.path, "")
        if file.new_file or not text:
            continue
        parsed = parse_source(file.path, text)
        for start, old, _ in file.hunks:
            end = start + max(len(old), 1) - 1
            found |= {s.qualname for s in (parsed.symbols if parsed else [])
                      if s.start <= end and start <= s.end}
    return found | {".".join(q.split(".")[:n]) for q in found for n in range(1, q.count(".") + 1)}


def honest_yes(stage: str, prompt: str, gold: Sequence[str], symbols: set[str]) -> bool:
    """A yes/no question answered from the fix: a file is needed when it is one of the fix's,
    a definition when the fix changes it (or something inside it); other questions: yes."""
    if stage.startswith("retrieval_scope"):
        paths = _SCOPE_FILE.findall(prompt)  # the question's file is the last one named
        return bool(paths) and paths[-1] in gold
    if stage.startswith("retrieval_precision"):
        named = _PRECISION_SYMBOL.findall(prompt)
        return bool(named) and named[-1] in symbols
    return True
