"""What a prompt shows of a fix, for the context-honest oracle: the fix's files whose path or
code stands in it, its hunks whose lines stand in it whole, the file it shows closest to a fix's
file, and the definitions the fix changes (by the lines each hunk touches)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath

from agent.bench.patches import FilePatch
from agent.retrieval.indexing.parsing import parse_source
from agent.retrieval.indexing.symbols import Symbol

_FILE_BLOCK = re.compile(r'<file path="([^"]+)"')
_SCOPE_FILE = re.compile(r"^File: (\S+) \(", re.M)
_PRECISION_SYMBOL = re.compile(r"(?:^Is|full body of) `([\w.]+)`", re.M)
# a hunk: its first line before the fix, its lines before (git's context with them), after
Hunk = tuple[int, list[str], list[str]]


def names_path(text: str, path: str) -> bool:
    """Whether `text` names `path` whole: not as the head of a longer path (`pkg/mod.py` in
    `pkg/mod.pyi`) nor as the tail of one (`mod.py` in `pkg/mod.py`)."""
    return re.search(rf"(?<![\w./-]){re.escape(path)}(?![\w/-]|\.\w)", text) is not None


def step_files(prompt: str) -> list[str]:
    """The files an implement prompt's step names (its `Files: a, b` line), in order."""
    after_task = prompt.rpartition("</task>")[2] or prompt  # a task's text is not the step
    step = re.search(r"<step>\n(.*?)\n</step>", after_task, re.S)
    line = re.search(r"^Files: (.*)$", step.group(1) if step else "", re.M)
    return [p for p in line.group(1).split(", ") if p] if line else []


def shown_files(prompt: str) -> list[str]:
    """The paths of the file blocks a prompt holds, in order."""
    return list(dict.fromkeys(_FILE_BLOCK.findall(prompt)))


def old_text(hunk: Hunk) -> str:
    """A hunk's lines before the fix, as one block."""
    return "\n".join(hunk[1]).strip("\n")


def hunk_shown(prompt: str, hunk: Hunk) -> bool:
    """Whether every line a hunk changes or keeps around its change stands in the prompt, in
    order (a hunk of a new file has nothing to see)."""
    text = old_text(hunk)
    return not text or text in prompt


def writable(prompt: str, path: str, before: str, hunk: Hunk) -> Hunk | None:
    """The part of a hunk a model shown `prompt` can write as an edit: the whole hunk when its
    old lines stand in the prompt (hunk_shown); else the widest run of them, shown in the
    file's own blocks and found once in the file, that still holds every line the hunk removes
    — or, for a hunk that only adds lines, that borders the place it adds them. Git's three
    lines of context are the diff's, not the fix's: a model anchors its edit on whichever of
    them it is shown. None when the prompt shows no such run."""
    start, old, new = hunk
    if hunk_shown(prompt, hunk):
        return hunk
    shown = "\n".join(m.group(1) for m in _blocks(path).finditer(prompt))
    head = _shared_head(old, new)  # the unchanged lines before the change, and after it
    tail = _shared_head(old[head:][::-1], new[head:][::-1])
    runs = sorted(
        ((a, b) for a in range(head + 1) for b in range(len(old) - tail, len(old) + 1)),
        key=lambda run: run[0] - run[1],
    )  # the widest first
    for a, b in runs:
        text = "\n".join(old[a:b]).strip("\n")
        if text.strip() and text in shown and before.count(text) == 1:
            return (
                start + a,
                old[a:b],
                [*old[a:head], *new[head : len(new) - tail], *old[len(old) - tail : b]],
            )
    return None


def _shared_head(a: Sequence[str], b: Sequence[str]) -> int:
    """How many items `a` and `b` begin with in common."""
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def _blocks(path: str) -> re.Pattern[str]:
    """The file blocks of `path` in a prompt, their text as group 1."""
    return re.compile(rf'<file path="{re.escape(path)}"[^>]*>\n(.*?)\n</file>', re.S)


def file_shown(prompt: str, file: FilePatch) -> bool:
    """Whether the prompt names the file's path or shows one of its hunks' code."""
    if names_path(prompt, file.path):
        return True
    return any(old_text(h) and hunk_shown(prompt, h) for h in file.hunks)


def closest(candidates: Sequence[str], targets: Sequence[str]) -> str | None:
    """The candidate nearest to any target: the longest shared folder prefix, then a shared
    name stem, then the first."""

    def score(path: str) -> tuple[int, int]:
        best = (0, 0)
        for target in targets:
            a, b = PurePosixPath(path).parts, PurePosixPath(target).parts
            shared = _shared_head(a, b)
            stem = int(PurePosixPath(path).stem.strip("_") == PurePosixPath(target).stem.strip("_"))
            best = max(best, (shared, stem))
        return best

    return max(candidates, key=score, default=None)


def touched(file: FilePatch, before: str) -> list[Symbol]:
    """The definitions of `file` as it was (`before`) whose lines a hunk touches, in the
    file's order (none for a new file)."""
    parsed = parse_source(file.path, before) if before and not file.new_file else None
    spans = [(start, start + max(len(old), 1) - 1) for start, old, _ in file.hunks]
    return [
        s
        for s in (parsed.symbols if parsed else [])
        if any(s.start <= end and start <= s.end for start, end in spans)
    ]


def changed_symbols(files: Sequence[FilePatch], before: Mapping[str, str]) -> set[str]:
    """The qualified names of the definitions whose lines a hunk touches, and their parents."""
    found = {s.qualname for f in files for s in touched(f, before.get(f.path, ""))}
    return found | {".".join(q.split(".")[:n]) for q in found for n in range(1, q.count(".") + 1)}


def step_symbols(file: FilePatch, before: str, shown: str | None, cap: int) -> list[str]:
    """The definitions a step on `file` names as its target symbols, as a planner is asked
    to: the innermost ones its hunks touch, in the file's order, at most `cap`; with `shown`
    (the plan prompt, context-honest) only those whose name it shows."""
    found = touched(file, before)
    parents = {s.parent for s in found if s.parent}
    named = [
        s.qualname
        for s in found
        if s.qualname not in parents
        and (shown is None or re.search(rf"(?<![\w$]){re.escape(s.name)}(?![\w$])", shown))
    ]
    return list(dict.fromkeys(named))[:cap]


def question_subject(stage: str, prompt: str) -> str | None:
    """What a relevance question asks about: the file of a scope question, the definition of a
    precision one (the last named: the question's own); None for other questions."""
    if stage.startswith("retrieval_scope"):
        paths = _SCOPE_FILE.findall(prompt)
        return paths[-1] if paths else ""
    if stage.startswith("retrieval_precision"):
        named = _PRECISION_SYMBOL.findall(prompt)
        return named[-1] if named else ""
    return None


def honest_yes(stage: str, prompt: str, gold: Sequence[str], symbols: set[str]) -> bool:
    """A yes/no question answered from the fix: a file is needed when it is one of the fix's,
    a definition when the fix changes it (or something inside it); other questions: yes."""
    subject = question_subject(stage, prompt)
    if subject is None:
        return True
    return bool(subject) and subject in (gold if stage.startswith("retrieval_scope") else symbols)
