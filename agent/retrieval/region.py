"""The region of a large file a pass asked for: when a model answers "I need this file" for a file
it was shown only in outline (too large to show whole), it gets the definitions the task and the
failure name or speak of — found by search over the file's definitions — in full, not the same
outline again: the best few always, more while they fit the room the pass gives the file
(recall first: a fix spread over several methods is seen whole). Pure."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

from agent.llm.budget import estimate_tokens
from agent.retrieval.indexing.parsing import terms
from agent.retrieval.indexing.symbols import Symbol
from agent.retrieval.ranking import query_terms

REGION_DEFINITIONS = 3  # definitions shown in full per file asked for again
NAMED = 10.0  # a definition whose own name the text names outranks any body match


def region(
    text: str,
    symbols: Sequence[Symbol],
    source: str,
    shown: Collection[str],
    *,
    limit: int = REGION_DEFINITIONS,
    room: int = 0,
) -> list[str]:
    """The qualnames of the innermost definitions of a file (`source`) not yet shown in full
    (`shown`) that `text` names or whose bodies hold the most of its rarer words, best first:
    the best `limit`, then more while their text (their comments with them) fits in `room`
    tokens."""
    wanted = query_terms(text)
    if not wanted:
        return []
    parents = {s.parent for s in symbols if s.parent}
    leaves = [s for s in symbols if s.qualname not in parents and s.qualname not in shown]
    lines = source.split("\n")
    texts = {s.qualname: "\n".join(lines[s.first - 1 : s.end]) for s in leaves}
    bodies = {q: set(terms(t)) for q, t in texts.items()}
    named = set(terms(text))
    df = {t: sum(t in body for body in bodies.values()) for t in wanted}
    scores = []
    for s in leaves:
        body = bodies[s.qualname]
        score = sum(math.log(1 + len(leaves) / df[t]) for t in wanted if df[t] and t in body)
        score += NAMED * (s.name.lower() in named)
        if score > 0:
            scores.append((-score, s.start, s.qualname))
    chosen: list[str] = []
    used = 0
    for _, _, qualname in sorted(scores):
        size = estimate_tokens(texts[qualname])
        if len(chosen) >= limit and used + size > room:
            break
        chosen.append(qualname)
        used += size
    return chosen
