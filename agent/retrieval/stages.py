"""The model stages of retrieval: scope (is this file needed?) and precision (how much of each
definition?), as yes/no questions to the classifier; an unparseable answer means no."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from agent.llm.binary import REASK_INSTRUCTION, run_binary_judgment
from agent.llm.budget import MESSAGE_OVERHEAD_TOKENS, estimate_tokens, prompt_limit
from agent.llm.logged import LoggedLLMClient
from agent.models import DroppedFile, SymbolDetail
from agent.retrieval.outline import chars_for
from agent.retrieval.parsing import CONTAINER_KINDS, terms
from agent.retrieval.symbols import Symbol

SCOPE_STAGE, PRECISION_STAGE = "retrieval_scope", "retrieval_precision"
SCOPE_SYSTEM = (
    "You pick the files a coding task needs from a repository. A file is needed when the task "
    "will change it, or when its code must be read to make or test the change. Answer with one "
    "word: yes or no."
)
PRECISION_SYSTEM = (
    "You pick the parts of a source file a coding task needs to see. Answer with one word: "
    "yes or no."
)
TASK_SHARE = 0.45  # of the classifier's prompt room; the item gets the rest
TASK_TOKENS = 400  # of the task a question shows at most: its title and first lines decide
Mode = Literal["plan", "implement"]


@dataclass(frozen=True)
class ScopeItem:
    """A candidate file, the summary the classifier sees of it, and its content's version."""

    path: str
    summary: str
    version: str = ""


@dataclass(frozen=True)
class _Question:
    """One yes/no question about a definition: what it shows, then what it asks."""

    key: str
    shown: str
    ask: str


def judge_scope(
    task: str, items: Sequence[ScopeItem], llm: LoggedLLMClient
) -> tuple[list[str], list[DroppedFile]]:
    """The paths judged needed, in order, and the others with the reason."""
    fit = _Fit(llm, SCOPE_SYSTEM, task)
    judgment = run_binary_judgment(
        list(items), llm=llm, system_prompt=SCOPE_SYSTEM, task_context=fit.task_context,
        format_item=lambda i: fit.item(i.summary, "Is this file needed for the task?"),
        item_key=lambda i: i.path, stage=SCOPE_STAGE, default=False,
        version=lambda i: i.version,
    )
    kept = [i.path for i in items if judgment.verdicts.get(i.path)]
    dropped = [
        DroppedFile(path=i.path, reason="scope: unparseable answer"
                    if i.path in judgment.unparseable else "scope: not needed")
        for i in items if not judgment.verdicts.get(i.path)
    ]
    return kept, dropped


def choose_details(
    task: str, path: str, text: str, symbols: Sequence[Symbol], llm: LoggedLLMClient, *,
    mode: Mode, max_questions: int, seed_symbols: Sequence[str],
) -> tuple[dict[str, SymbolDetail], int]:
    """Per definition: full body, signature only, or omitted, level by level from the top.

    First "is X relevant?" (no → omitted); then, in implement mode, "does the task need the
    full body of X?" (yes → full; no → signature, and a class's members are asked about in
    turn). Seed symbols are full without a question; past `max_questions` → signature.
    Returns the details and the number of questions asked.
    """
    lines = text.splitlines()
    fit = _Fit(llm, PRECISION_SYSTEM, task)
    by_parent: dict[str | None, list[Symbol]] = {}
    for symbol in symbols:
        by_parent.setdefault(symbol.parent, []).append(symbol)
    wanted = set(seed_symbols)
    details: dict[str, SymbolDetail] = {
        s.qualname: "full" for s in symbols if s.name in wanted or s.qualname in wanted
    }
    asker = _Asker(llm, fit, path, max_questions, content_version(text))
    order = _relevance_order(task)
    level = by_parent.get(None, [])
    while level:
        relevant = asker.ask(order([s for s in level if s.qualname not in details]),
                             _relevance_question, details)
        if mode == "plan":
            whole: list[Symbol] = []
        else:
            whole = asker.ask(relevant, lambda s: _body_question(s, lines), details)
        details.update({s.qualname: "full" for s in whole})
        partial = [s for s in relevant if s not in whole]
        details.update({s.qualname: "signature" for s in partial})
        level = [k for s in partial if s.kind in CONTAINER_KINDS
                 for k in by_parent.get(s.qualname, [])]
    return details, max_questions - asker.left


class _Asker:
    """Asks yes/no questions about definitions of one file within a question budget."""

    def __init__(
        self, llm: LoggedLLMClient, fit: _Fit, path: str, budget: int, version: str
    ) -> None:
        self.llm, self.fit, self.path, self.left = llm, fit, path, budget
        self.version = version

    def ask(self, symbols: Sequence[Symbol], question: Callable[[Symbol], _Question],
            details: dict[str, SymbolDetail]) -> list[Symbol]:
        """The symbols answered yes. Answered no (or unparseable): `omitted`; beyond the
        budget: `signature`, unasked."""
        asked, unasked = list(symbols[: self.left]), symbols[self.left :]
        self.left -= len(asked)
        details.update({s.qualname: "signature" for s in unasked})
        if not asked:
            return []
        judgment = run_binary_judgment(
            [question(s) for s in asked], llm=self.llm, system_prompt=PRECISION_SYSTEM,
            task_context=self.fit.task_context,
            format_item=lambda q: self.fit.item(f"File: {self.path}\n{q.shown}", q.ask),
            item_key=lambda q: q.key, stage=PRECISION_STAGE, default=False,
            version=lambda _: self.version,
        )
        yes = [s for s in asked if judgment.verdicts.get(s.qualname)]
        details.update({s.qualname: "omitted" for s in asked if s not in yes})
        return yes


def _relevance_question(symbol: Symbol) -> _Question:
    """"Is X relevant?", showing the definition's signature and docstring line."""
    doc = f"\n{symbol.doc}" if symbol.doc else ""
    return _Question(symbol.qualname, f"Definition ({symbol.kind}) `{symbol.qualname}`:\n"
                     f"{symbol.signature}{doc}", f"Is `{symbol.qualname}` relevant to the task?")


def _body_question(symbol: Symbol, lines: list[str]) -> _Question:
    """"Does the task need the full body of X?", showing the body."""
    body = "\n".join(lines[symbol.start - 1 : symbol.end])
    return _Question(symbol.qualname, f"```\n{body}\n```",
                     f"Does the task need the full body of `{symbol.qualname}` "
                     "(to read it closely or to change it)?")


def _relevance_order(task: str) -> Callable[[Sequence[Symbol]], list[Symbol]]:
    """Sorts definitions by how many task terms their name and docstring share (then line)."""
    wanted = set(terms(task))

    def order(symbols: Sequence[Symbol]) -> list[Symbol]:
        def overlap(s: Symbol) -> int:
            return len(wanted.intersection(terms(f"{s.name} {s.doc}")))
        return sorted(symbols, key=lambda s: (-overlap(s), s.start))
    return order


class _Fit:
    """Cuts the task and each item so that every question fits the classifier's window."""

    def __init__(self, llm: LoggedLLMClient, system: str, task: str) -> None:
        room = prompt_limit(llm.config, llm.reserved_tokens) - estimate_tokens(system)
        # The instruction of a re-ask is the longer one; the question must fit both ways.
        room -= 2 * MESSAGE_OVERHEAD_TOKENS + estimate_tokens(REASK_INSTRUCTION) + 8
        self.task_context = "Task:\n" + cut(task, max(16, min(int(room * TASK_SHARE),
                                                           TASK_TOKENS)))
        self.item_room = max(16, room - estimate_tokens(self.task_context) - 4)

    def item(self, head: str, question: str) -> str:
        """`head` (cut to fit) followed by the question."""
        room = self.item_room - estimate_tokens(question) - 2
        return f"{cut(head, max(8, room))}\n\n{question}"


def content_version(text: str) -> str:
    """A short digest of a file's content: a judgment about it holds while it is unchanged."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def cut(text: str, max_tokens: int) -> str:
    """`text`, shortened with a marker when it estimates to more than `max_tokens`."""
    limit = chars_for(max_tokens)
    if len(text) <= limit:
        return text
    marker = "\n[…cut…]"
    return text[: max(0, limit - len(marker))] + marker


def scope_summary(path: str, language: str, doc: str, symbols: Sequence[Symbol],
                  line_count: int) -> str:
    """What the classifier sees of a candidate file: path, docstring, definition signatures."""
    head = [f"File: {path} ({language}, {line_count} lines)"]
    if doc:
        head.append(f"Description: {doc}")
    if symbols:
        head.append("Definitions:")
        head += [("  " if s.parent else "") + s.signature for s in symbols]
    return "\n".join(head)
