"""Packing files into a token budget by priority: each file in the richest form that fits.

Seeds come first and each later seed keeps a reserve, so every seed gets in (cut short if it
must be); other files follow in rank order and are dropped, with the reason, when even their
smallest form does not fit. The package never estimates to more than the budget.
`context_from_files` is the plain seam: named files, whole, in order, while they fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from agent.llm.budget import estimate_tokens
from agent.models import OVER_BUDGET, ContextFile, ContextPackage, DroppedFile, SymbolDetail
from agent.retrieval.indexing.symbols import Symbol
from agent.retrieval.outline import chars_for, render_outline, truncate

SEED_FLOOR_TOKENS = 256
SEPARATOR = "\n\n"  # between file blocks in ContextPackage.to_prompt_text
Detail = Literal["full", "outline", "truncated"]


@dataclass
class Entry:
    """A file on its way into a package: its current text, definitions and chosen details."""

    path: str
    text: str
    symbols: list[Symbol]
    reason: str
    seed: bool = False
    doc: str = ""
    details: dict[str, SymbolDetail] | None = None


@dataclass(frozen=True)
class Form:
    """One way to show a file, and what it costs in the prompt."""

    detail: Detail
    content: str
    symbols: tuple[tuple[str, SymbolDetail], ...] = ()
    last_resort: bool = False  # a bare skeleton: a seed is rather cut short

    def as_file(self, entry: Entry) -> ContextFile:
        """The ContextFile of this form, its cost included."""
        file = ContextFile(
            path=entry.path,
            content=self.content,
            detail=self.detail,
            reason=entry.reason,
            symbols=dict(self.symbols),
        )
        return file.model_copy(update={"tokens": block_tokens(file)})


def block_tokens(file: ContextFile) -> int:
    """The tokens a file takes in the prompt, its separator included."""
    return estimate_tokens(file.prompt_block() + SEPARATOR)


def pack(
    entries: Sequence[Entry],
    budget: int,
    *,
    whole_file_tokens: int,
    seed_symbols: Sequence[str],
) -> tuple[list[ContextFile], list[DroppedFile]]:
    """The files that fit, in `entries` order, and the ones dropped with the reason."""
    options = [
        [
            (f, f.as_file(e))
            for f in forms(e, whole_file_tokens=whole_file_tokens, seed_symbols=seed_symbols)
        ]
        for e in entries
    ]
    seeds = [i for i, e in enumerate(entries) if e.seed]
    count = max(1, len(seeds))
    share = max(budget // (2 * count), min(SEED_FLOOR_TOKENS, budget // count))
    floors = {i: min([share, *(f.tokens for _, f in options[i])]) for i in seeds}
    packed: list[ContextFile] = []
    dropped: list[DroppedFile] = []
    left = budget
    for i, entry in enumerate(entries):
        room = left - sum(floors[j] for j in seeds if j > i)
        chosen = _choose(entry, options[i], room)
        if chosen is None:
            smallest = min(f.tokens for _, f in options[i])
            dropped.append(
                DroppedFile(
                    path=entry.path,
                    reason=f"{OVER_BUDGET} (needs {smallest} tokens, {max(room, 0)} left)",
                )
            )
            continue
        packed.append(chosen)
        left -= chosen.tokens
    return packed, dropped


def _choose(
    entry: Entry, options: Sequence[tuple[Form, ContextFile]], room: int
) -> ContextFile | None:
    """The richest option that fits `room`; a seed is cut short before it is shown as a bare
    skeleton, and dropped only when neither fits."""
    for form, file in options:
        if file.tokens <= room and not form.last_resort:
            return file
    if entry.seed:
        outlines = [f.content for f, _ in options if f.detail == "outline" and not f.last_resort]
        short = cut_short(entry, room, outlines[-1] if outlines else entry.text)
        if short is not None:
            return short
    return next((file for form, file in options if file.tokens <= room), None)


def forms(entry: Entry, *, whole_file_tokens: int, seed_symbols: Sequence[str]) -> list[Form]:
    """The ways to show `entry`, richest first: whole, chosen outline, the chosen bodies alone,
    signatures, headlines, skeleton — each with the seed symbols in full, then (when a seed
    symbol is a class) with the named classes shown by their members instead: a task that
    names `Command` must not cost the planner a file of 3,000 lines."""
    whole = Form("full", entry.text)
    if not entry.symbols:
        return [whole]
    wanted = set(seed_symbols)
    seeds: dict[str, SymbolDetail] = {
        s.qualname: "full" for s in entry.symbols if s.name in wanted or s.qualname in wanted
    }
    parents = {s.parent for s in entry.symbols if s.parent}
    lean = {k: v for k, v in seeds.items() if k not in parents}
    chosen = entry.details or {}
    bodies = {k: v for k, v in chosen.items() if v == "full"}
    lighter = {k: _lighter(v) for k, v in chosen.items()}
    small = estimate_tokens(entry.text) <= whole_file_tokens
    candidates = []
    if small or (entry.details is None and entry.seed):  # a large file: a seed's, whole
        candidates.append(whole)
    for named in [seeds, lean] if lean != seeds else [seeds]:
        if entry.details is not None:
            candidates += _outlines(entry, {**chosen, **named})
            if bodies or named:  # the chosen bodies alone, when the rest's signatures do not fit
                candidates += _outlines(entry, {**bodies, **named}, default="omitted")
        candidates += _outlines(entry, {**lighter, **named})
    if (
        not entry.seed
        and parents
        and not parents.intersection(s.parent for s in entry.symbols if s.qualname in lean)
    ):
        candidates += _outlines(
            entry, {**{s.qualname: "omitted" for s in entry.symbols if s.parent}, **lean}, fold=True
        )
    if entry.seed or seeds:  # a skeleton of anything else says too little to be worth it
        for named in [seeds, lean] if lean != seeds else [seeds]:
            candidates += [
                replace(skeleton, last_resort=not named)
                for skeleton in _outlines(entry, named, default="omitted")
            ]
    unique: dict[str, Form] = {}
    for form in candidates:
        unique.setdefault(form.content, form)
    return list(unique.values())


def _lighter(detail: SymbolDetail) -> SymbolDetail:
    """One step less: a full body becomes its signature."""
    return "signature" if detail == "full" else detail


def _outlines(
    entry: Entry,
    details: dict[str, SymbolDetail],
    default: SymbolDetail = "signature",
    *,
    fold: bool = False,
) -> list[Form]:
    """An outline form with the lines bordering its full bodies, then the same without them
    (one form where no body is full: borders would change nothing);
    the recorded details cover every definition of the file. `fold`: its headlines only
    (classes folded like functions), for a file whose outline is too long."""
    shown = tuple((s.qualname, details.get(s.qualname, default)) for s in entry.symbols)
    recorded = tuple(dict(shown).items())
    bordered = (True, False) if "full" in (default, *details.values()) else (False,)
    return [
        Form(
            "outline",
            render_outline(
                entry.text, entry.symbols, details, default, fold_containers=fold, borders=borders
            ),
            recorded,
        )
        for borders in bordered
    ]


def cut_short(entry: Entry, room: int, text: str) -> ContextFile | None:
    """The first lines of `text` (a seed's text or outline) that fit in `room` tokens, or None
    when not even one does."""
    frame = Form("truncated", "").as_file(entry)
    chars = chars_for(room) - len(frame.prompt_block() + SEPARATOR)
    while chars > 0:
        content = truncate(text, chars)
        if content is None:
            return None
        file = Form("truncated", content).as_file(entry)
        if file.tokens <= room:
            return file
        chars -= 8
    return None


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
    file = ContextFile(path=rel, content=text)
    tokens = block_tokens(file)
    if package.used_tokens + tokens > package.budget_tokens:
        package.dropped.append(DroppedFile(path=rel, reason=f"{OVER_BUDGET} ({tokens} tokens)"))
        return
    package.files.append(file.model_copy(update={"tokens": tokens}))
    package.used_tokens += tokens


def _inside(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True
