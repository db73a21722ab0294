"""Snapshot files as companions of their test files in a context: each comes right after the
test file it records, showing whole the entries the task and the failure name and the key of
every other — a test that fails on its snapshot is fixed there, a test written for an issue
records its expectation there, and a model shown the test alone can do neither."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence

from agent.models import SymbolDetail
from agent.retrieval.indexing.parsing import terms
from agent.retrieval.indexing.scan import is_test_path
from agent.retrieval.indexing.snapshots import SNAPSHOT_KIND, recorded_test_file
from agent.retrieval.indexing.symbols import Symbol
from agent.retrieval.packing import Entry

SNAPSHOT_ENTRIES = 6  # the entries of a snapshot file shown whole, the best named first
MIN_CASE = 4  # a shorter case name (`-h`) is found in any text
_SEPARATORS = re.compile(r"\s+[>›]\s+")


def with_snapshots(
    entries: Sequence[Entry],
    *,
    known: Callable[[], Iterable[str]],
    words: str,
    load: Callable[[str, str], Entry | None],
) -> list[Entry]:
    """`entries` with each test file's snapshot files right after it (ranked there or not; a
    seed's as seeds), every snapshot file's entries chosen by `words` (snapshot_details).
    `known` lists the repository's files, read only when a test file is among the entries;
    `load` reads a snapshot file not among them (its path, the reason it is shown)."""
    tests = [e.path for e in entries if is_test_path(e.path)]
    recorded = snapshot_files(tests, known()) if tests else {}
    following = {p for paths in recorded.values() for p in paths}
    present = {e.path: e for e in entries}
    out: list[Entry] = []
    for entry in entries:
        if entry.path in following:
            continue  # shown after its test file
        out.append(entry)
        for path in recorded.get(entry.path, []):
            reason = f"snapshot of {entry.path}"
            snapshot = present.get(path) or load(path, reason)
            if snapshot is not None:
                if snapshot.reason != reason:
                    snapshot.reason = f"{reason}; {snapshot.reason}"
                snapshot.seed = snapshot.seed or entry.seed
                out.append(snapshot)
    for entry in out:
        if entry.details is None and recorded_test_file(entry.path) is not None:
            entry.details = snapshot_details(entry.symbols, words)
    return out


def snapshot_files(tests: Iterable[str], known: Iterable[str]) -> dict[str, list[str]]:
    """For each of `tests`, the files among `known` that record its output, in path order."""
    wanted = set(tests)
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(known):
        recorded = recorded_test_file(path)
        if recorded in wanted:
            found[recorded].append(path)
    return dict(found)


def snapshot_details(
    symbols: Sequence[Symbol], words: str, *, shown: int = SNAPSHOT_ENTRIES
) -> dict[str, SymbolDetail]:
    """The entries of a snapshot file that `words` name, in full, at most `shown`: first those
    whose case the text quotes (a failing test's name: `not ok 6 - 1.2.3foo -l`, `● help ›
    lists commands`), the longest first; when it quotes none, those whose keys hold its rarer
    words (a word in every key, the test file's or the suite's, says nothing). Every other
    entry by its key line."""
    entries = [s for s in symbols if s.kind == SNAPSHOT_KIND]
    text = _flat(words)
    keys = [set(terms(s.name)) for s in entries]
    counts = Counter(word for key in keys for word in key)
    weight = {word: math.log(len(entries) / n) for word, n in counts.items()}
    wanted = set(terms(words))

    def score(i: int) -> tuple[int, float]:
        quoted = max((len(c) for c in _cases(entries[i].name) if c in text), default=0)
        return quoted, sum(weight[w] for w in keys[i] & wanted)

    scores = {i: score(i) for i in range(len(entries))}
    floor = (1, 0.0) if any(quoted for quoted, _ in scores.values()) else (0, 0.0)
    best = sorted((i for i, s in scores.items() if s > floor), key=lambda i: scores[i])[::-1]
    full = {entries[i].qualname for i in best[:shown]}
    return {s.qualname: "full" if s.qualname in full else "signature" for s in entries}


def _flat(text: str) -> str:
    """`text` with the separators runners put between a test's names (`>`, `›`) and runs of
    spaces as one space, to find a snapshot's case in it."""
    return " ".join(_SEPARATORS.sub(" ", text).split())


def _cases(key: str) -> list[str]:
    """What a failure may quote of an entry's key: the key without its counter (`… 1`), and
    its last name (node-tap's `file TAP suite > case`), each of at least MIN_CASE chars."""
    whole = _flat(re.sub(r"\s+\d+$", "", key))
    last = _flat(re.sub(r"\s+\d+$", "", key.rpartition(" > ")[2]))
    return [c for c in dict.fromkeys([whole, last]) if len(c) >= MIN_CASE]
