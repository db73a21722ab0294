"""The model stages of retrieval: scope (is this file needed?) and precision (how much of each
definition?), as yes/no questions to the classifier; an unparseable answer means no."""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from agent.llm.binary import REASK_INSTRUCTION, run_binary_judgment
from agent.llm.budget import MESSAGE_OVERHEAD_TOKENS, estimate_tokens, prompt_limit
from agent.llm.logged import LoggedLLMClient
from agent.models import DroppedFile, SymbolDetail
from agent.retrieval.indexing.parsing import terms
from agent.retrieval.indexing.symbols import CONTAINER_KINDS, Symbol
from agent.retrieval.outline import chars_for
from agent.retrieval.packing import Entry

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
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")  # a name called (or defined: no matter here)


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
        list(items),
        llm=llm,
        system_prompt=SCOPE_SYSTEM,
        task_context=fit.task_context,
        format_item=lambda i: fit.item(i.summary, "Is this file needed for the task?"),
        item_key=lambda i: i.path,
        stage=SCOPE_STAGE,
        default=False,
        version=lambda i: i.version,
    )
    kept = [i.path for i in items if judgment.verdicts.get(i.path)]
    dropped = [
        DroppedFile(
            path=i.path,
            reason="scope: unparseable answer"
            if i.path in judgment.unparseable
            else "scope: not needed",
        )
        for i in items
        if not judgment.verdicts.get(i.path)
    ]
    return kept, dropped


def choose_details(
    task: str,
    file: Entry,
    llm: LoggedLLMClient,
    *,
    max_questions: int,
    seed_symbols: Sequence[str],
    words: str,
) -> tuple[dict[str, SymbolDetail], int]:
    """Which definitions of a file too large to show whole are shown in full: the seed symbols
    without a question, then one question each — "does the task need X?", showing X — about
    the definitions the shown bodies call, then those whose names and code share the rarer
    words of `words` (the task's, and on a retry the failure's: the failing tests' names speak
    of the code they reach; see `callees_first`, `by_task_words`), at most `max_questions`.
    Yes → full,
    no → omitted, not asked: left out of the details (a signature, or omitted when the file
    must be shown compactly: see packing.forms).
    Returns the details and the number of questions asked.

    A departure from the seed's level-by-level questions (is the class relevant? its full
    body? then its members…): in a file of a few large classes those spent the questions on
    the classes and never reached the method a fix changes."""
    path, text, symbols = file.path, file.text, file.symbols
    lines = text.splitlines()
    wanted = set(seed_symbols)
    parents = {s.parent for s in symbols if s.parent}
    # a class the task names is no body to show whole: its members are asked about
    details: dict[str, SymbolDetail] = {
        s.qualname: "full"
        for s in symbols
        if (s.name in wanted or s.qualname in wanted) and s.qualname not in parents
    }
    units = [
        s
        for s in symbols
        if s.qualname not in details and not (s.kind in CONTAINER_KINDS and s.qualname in parents)
    ]
    shown = [s for s in symbols if details.get(s.qualname) == "full"]
    ranked = by_task_words(words, units, lines)
    asked = callees_first(ranked, shown, lines)[: max(0, max_questions)]
    if not asked:
        return details, 0
    fit = _Fit(llm, PRECISION_SYSTEM, task)
    version = content_version(text)
    questions = [_body_question(s, lines) for s in asked]
    judgment = run_binary_judgment(
        questions,
        llm=llm,
        system_prompt=PRECISION_SYSTEM,
        task_context=fit.task_context,
        format_item=lambda q: fit.item(f"File: {path}\n{q.shown}", q.ask),
        item_key=lambda q: q.key,
        stage=PRECISION_STAGE,
        default=False,
        version=lambda _: version,
    )
    details.update(
        {s.qualname: "full" if judgment.verdicts.get(s.qualname) else "omitted" for s in asked}
    )
    return details, len(asked)


def by_task_words(task: str, symbols: Sequence[Symbol], lines: Sequence[str]) -> list[Symbol]:
    """`symbols` ordered by the task's words in them, each weighted by how few of the file's
    definitions hold it (a word in every method says nothing), a word of the name counting
    twice; ties in line order."""
    wanted = set(terms(task))
    names = [wanted.intersection(terms(s.name)) for s in symbols]
    bodies = [
        wanted.intersection(terms(f"{s.doc}\n" + "\n".join(lines[s.start - 1 : s.end])))
        for s in symbols
    ]
    counts = Counter(word for found in bodies for word in found)
    weight = {word: math.log(1 + len(symbols) / n) for word, n in counts.items()}

    def score(i: int) -> float:
        return sum(weight.get(w, 0.0) for w in names[i]) * 2 + sum(weight[w] for w in bodies[i])

    order = sorted(range(len(symbols)), key=lambda i: (-score(i), symbols[i].start))
    return [symbols[i] for i in order]


def callees_first(
    ordered: Sequence[Symbol], shown: Sequence[Symbol], lines: Sequence[str]
) -> list[Symbol]:
    """`ordered` with the definitions that the bodies shown in full call (by name: `f(`,
    `self.f(`) moved to the front, in their order: a body the task names is read with the
    helpers it calls — the task's words are often in the one and the fix in the other."""
    called = {name for s in shown for name in _CALL.findall("\n".join(lines[s.start - 1 : s.end]))}
    callees = [s for s in ordered if s.name in called]
    return [*callees, *(s for s in ordered if s.name not in called)]


def _body_question(symbol: Symbol, lines: Sequence[str]) -> _Question:
    """ "Does the task need the full body of X?", showing the definition (cut to fit)."""
    body = "\n".join(lines[symbol.start - 1 : symbol.end])
    return _Question(
        symbol.qualname,
        f"Definition ({symbol.kind}) `{symbol.qualname}`:\n```\n{body}\n```",
        f"Does the task need the full body of `{symbol.qualname}` "
        "(to read it closely or to change it)?",
    )


class _Fit:
    """Cuts the task and each item so that every question fits the classifier's window."""

    def __init__(self, llm: LoggedLLMClient, system: str, task: str) -> None:
        room = prompt_limit(llm.config, llm.reserved_tokens) - estimate_tokens(system)
        # The instruction of a re-ask is the longer one; the question must fit both ways.
        room -= 2 * MESSAGE_OVERHEAD_TOKENS + estimate_tokens(REASK_INSTRUCTION) + 8
        self.task_context = "Task:\n" + cut(task, max(16, min(int(room * TASK_SHARE), TASK_TOKENS)))
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


def scope_summary(
    path: str, language: str, doc: str, symbols: Sequence[Symbol], line_count: int
) -> str:
    """What the classifier sees of a candidate file: path, docstring, definition signatures."""
    head = [f"File: {path} ({language}, {line_count} lines)"]
    if doc:
        head.append(f"Description: {doc}")
    if symbols:
        head.append("Definitions:")
        head += [("  " if s.parent else "") + s.signature for s in symbols]
    return "\n".join(head)
