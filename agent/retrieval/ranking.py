"""Ranking without a model: bm25 over the index, import neighbours of seeds, source↔test pairs."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agent.retrieval.indexing.index import RepoIndex
from agent.retrieval.indexing.index_records import FileInfo
from agent.retrieval.indexing.parsing import CODE_LANGUAGES, terms
from agent.retrieval.indexing.scan import is_test_path, test_subject
from agent.retrieval.seeds import ResolvedSeeds

MAX_QUERY_TERMS = 48
IMPORTED_BY_SEED, IMPORTS_SEED = 0.6, 0.4  # a seed's own imports matter more than its importers
TEST_OF_SEED, TEST_OF_HIT = 0.7, 0.3
NEIGHBOUR_OF_HIT = 0.25  # the first hit's import neighbours, damped well below a seed's
NEIGHBOUR_GAP = 1e-3
NON_CODE_SEARCH = 0.5  # data and prose files match many words but are seldom what a task edits
TEST_PAIR_HITS = 3  # the best search hits whose tests are pulled up too
MAX_TESTS_PER_FILE = 3
_STOPWORD_TEXT = """
a about above after again against all also an and any are as at be because been before being
below between both but by can could did do does doing done down during each else few for from
further had has have having he her here hers him his how i if in into is it its itself just
let like may me might more most must my no nor not now of off on once only or other our out
over own please same she should so some such than that the their them then there these they
this those through to too under until up very via was we were what when where which while who
whom why will with would you your yours
fix fixes fixed fixing bug bugs issue issues closes close resolve resolves see use used using
make makes made add adds added new change changes changed update updates updated instead
work works wrong correct correctly properly case cases
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@dataclass(frozen=True)
class Candidate:
    """A ranked file: its score and what put it there."""

    path: str
    score: float
    reasons: tuple[str, ...]


def query_terms(text: str) -> list[str]:
    """The search terms of a task: identifier parts and compounds, stopwords and digits out."""
    kept = (t for t in terms(text) if len(t) > 1 and not t.isdigit() and t not in STOPWORDS)
    return list(dict.fromkeys(kept))[:MAX_QUERY_TERMS]


def rank(
    text: str, index: RepoIndex, seeds: ResolvedSeeds, *, limit: int, prefer_source: bool = False
) -> list[Candidate]:
    """Files other than the seeds, best first; equal scores in path order. `prefer_source`
    (an implement step that targets no test): every source file above every test file."""
    scores: dict[str, float] = defaultdict(float)
    reasons: dict[str, list[str]] = defaultdict(list)

    def credit(path: str, amount: float, reason: str) -> None:
        if amount > 0:
            scores[path] += amount
            reasons[path].append(reason)

    infos = index.files()
    code = {f.path for f in infos if f.language in CODE_LANGUAGES}
    hits = index.search(query_terms(text), limit=limit)
    top = hits[0][1] if hits else 1.0
    for path, score in hits:
        credit(path, score / top * (1.0 if path in code else NON_CODE_SEARCH), "search")
    for path, amount, reason in _import_neighbours(index, seeds.files):
        credit(path, amount, reason)
    best_hits = [p for p, _ in hits[:TEST_PAIR_HITS]]
    for path, amount, reason in _test_pairs(infos, seeds.files, best_hits, dict(hits), top):
        credit(path, amount, reason)
    first = next((p for p, _ in hits if p in code and not is_test_path(p)), None)
    if first is not None:  # a fix over several files: keep the first hit's neighbours near it
        for path, amount, reason in _import_neighbours(index, [first]):
            # below the first hit, never above it: the lift must not cost the top place
            room = scores[first] - scores.get(path, 0.0) - NEIGHBOUR_GAP
            credit(path, min(amount * NEIGHBOUR_OF_HIT, room), f"{reason} (first hit)")
    ranked = [
        Candidate(p, round(s, 6), tuple(dict.fromkeys(reasons[p])))
        for p, s in scores.items()
        if p not in seeds.reasons
    ]
    if prefer_source:
        return sorted(
            ranked, key=lambda c: (c.path not in code or is_test_path(c.path), -c.score, c.path)
        )
    return sorted(ranked, key=lambda c: (-c.score, c.path))


def _import_neighbours(index: RepoIndex, seeds: Sequence[str]) -> Iterable[tuple[str, float, str]]:
    """Files a seed imports, and files importing a seed (damped when there are many)."""
    seed_set = set(seeds)
    importers: dict[str, list[str]] = defaultdict(list)
    for src, dst in index.import_edges(seeds):
        if src in seed_set:
            yield dst, IMPORTED_BY_SEED, f"imported by {src}"
        if dst in seed_set:
            importers[dst].append(src)
    for seed, found in importers.items():
        damping = min(1.0, math.sqrt(5 / len(found)))
        for src in found:
            yield src, IMPORTS_SEED * damping, f"imports {seed}"


def _test_pairs(
    infos: Sequence[FileInfo],
    seeds: Sequence[str],
    best_hits: Sequence[str],
    hit_scores: dict[str, float],
    top: float,
) -> Iterable[tuple[str, float, str]]:
    """Tests of seeds and of the best hits; sources of seeded tests."""
    tests: dict[str, list[str]] = defaultdict(list)
    sources: dict[str, list[str]] = defaultdict(list)
    test_paths = {f.path for f in infos if f.is_test}
    for info in infos:
        bucket = tests if info.is_test else sources
        bucket[test_subject(info.path)].append(info.path)
    for seed in seeds:
        subject = test_subject(seed)
        others = sources if seed in test_paths else tests
        for path in _closest(seed, others.get(subject, [])):
            yield path, TEST_OF_SEED, f"{'source' if seed in test_paths else 'test'} of {seed}"
    for hit in best_hits:
        if hit in test_paths:
            continue
        for path in _closest(hit, tests.get(test_subject(hit), [])):
            yield path, TEST_OF_HIT * hit_scores[hit] / top, f"test of {hit}"


def _closest(anchor: str, paths: Sequence[str]) -> list[str]:
    """The paths sharing the longest folder prefix with `anchor` (stable, at most a few)."""

    def shared(path: str) -> int:
        a, b = anchor.split("/"), path.split("/")
        return next(
            (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
        )

    ordered = sorted((p for p in paths if p != anchor), key=lambda p: (-shared(p), p))
    return ordered[:MAX_TESTS_PER_FILE]
