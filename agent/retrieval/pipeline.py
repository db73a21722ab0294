"""The per-pass context pipeline: seeds → ranking → scope → precision → packing into a budget.

`retrieve` builds a fresh ContextPackage for one pass, `refine` re-enters with the evidence of
a RefinementRequest under the same budget; `IndexedContext` is the context source over the index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agent.config.files import RetrievalConfig
from agent.git.treefiles import read_in_tree
from agent.llm.budget import estimate_tokens
from agent.llm.logged import LoggedLLMClient
from agent.models import (
    OVER_BUDGET,
    ContextFile,
    ContextPackage,
    DroppedFile,
    RefinementRequest,
    SymbolDetail,
)
from agent.retrieval.companions import with_snapshots
from agent.retrieval.indexing.index import RepoIndex
from agent.retrieval.indexing.parsing import language_of, parse_source
from agent.retrieval.indexing.scan import BINARY_SNIFF_BYTES, is_test_path
from agent.retrieval.indexing.snapshots import recorded_test_file
from agent.retrieval.packing import Entry, block_tokens, pack
from agent.retrieval.ranking import rank
from agent.retrieval.region import region
from agent.retrieval.seeds import ResolvedSeeds, Seeds, resolve_seeds
from agent.retrieval.stages import (
    ScopeItem,
    choose_details,
    content_version,
    judge_scope,
    scope_summary,
)

Mode = Literal["plan", "implement"]
NOT_IN_REPOSITORY = "not in the repository (a step may create it)"
RANKED_BELOW = OVER_BUDGET + " (ranked below the {} files considered)"
MORE_RANKED = 12  # files ranked below those considered that a plan pass still names
REGION_SHARE = 0.5  # of a refined package's budget, the most the regions asked for take


@dataclass
class _Run:
    """What one retrieval knows while it works."""

    task: str
    root: Path
    mode: Mode
    config: RetrievalConfig
    classifier: LoggedLLMClient | None
    seeds: ResolvedSeeds
    dropped: list[DroppedFile] = field(default_factory=list)
    calls_left: int = 0
    budget: int = 0  # the package's tokens
    failure: str = ""  # what the pass's texts add to the task (a failure's output, a request)

    def stage_on(self, name: str) -> bool:
        """True when the model stage `name` runs."""
        return self.classifier is not None and name in self.config.stages


@dataclass(frozen=True)
class IndexedTree:
    """Where a retrieval looks: a worktree, the repository's index of it, the retrieval config."""

    index: RepoIndex
    root: Path
    config: RetrievalConfig


@dataclass(frozen=True)
class ContextAsk:
    """What one pass asks for: the context of `task` for a pass of `mode`, from `seeds`, within
    `budget_tokens`."""

    task: str
    budget_tokens: int
    mode: Mode
    seeds: Seeds


def retrieve(
    tree: IndexedTree, ask: ContextAsk, *, classifier: LoggedLLMClient | None
) -> ContextPackage:
    """The context of one pass within its budget; seeds are always in it (cut short if they
    must be). Without a classifier or with no stages configured: ranking and packing only."""
    return _retrieve(tree, ask, classifier, carried={})


def refine(
    package: ContextPackage,
    request: RefinementRequest,
    tree: IndexedTree,
    *,
    classifier: LoggedLLMClient | None,
) -> ContextPackage:
    """The package again, with the request's missing files, symbols, tests and error signatures
    as new seeds, within the pass's room (an implement pass's budget is sized again to the
    files it now names: a file asked for is shown, not squeezed into the room its first
    package left); files already judged needed keep their place."""
    seeds = Seeds(
        files=[*package.seed_files, *request.missing_files],
        symbols=[
            *package.seed_symbols,
            *request.missing_symbols,
            *_regions(package, request, tree.root),
        ],
        tests=list(request.missing_tests),
        text="\n".join([request.reason, *request.error_signatures]),
    )
    carried = {f.path: f for f in package.files if f.path not in package.seed_files}
    room = package.room_tokens or package.budget_tokens
    ask = ContextAsk(package.task, room, package.mode, seeds)
    return _retrieve(tree, ask, classifier, carried=carried)


def _regions(package: ContextPackage, request: RefinementRequest, root: Path) -> list[str]:
    """For each file asked for that the package showed only in part (too large to show whole):
    the definitions of it that the step, the task and the failure speak of, not the same part
    again."""
    text = "\n".join([request.focus, package.task, request.reason, *request.error_signatures])
    again = [f for f in package.files if f.path in request.missing_files and f.detail != "full"]
    room = int(package.budget_tokens * REGION_SHARE) // max(1, len(again))
    found: list[str] = []
    for shown in again:
        try:
            source = read_in_tree(root, shown.path).decode("utf-8", "replace")
        except OSError:
            continue
        full = {q for q, d in shown.symbols.items() if d == "full"}
        found += region(text, parse_source(shown.path, source).symbols, source, full, room=room)
    return found


def _retrieve(
    tree: IndexedTree,
    ask: ContextAsk,
    classifier: LoggedLLMClient | None,
    *,
    carried: Mapping[str, ContextFile],
) -> ContextPackage:
    """Seeds, then files carried over from a refined package, then ranked files that pass
    scope; each file's detail chosen, all packed into the budget."""
    task, mode, seeds = ask.task, ask.mode, ask.seeds
    index, root, config = tree.index, tree.root, tree.config
    resolved = resolve_seeds(task, seeds, index, root=root)
    budget_tokens = _needed(ask.budget_tokens, root, mode, resolved, config)
    run = _Run(
        task,
        root,
        mode,
        config,
        classifier,
        resolved,
        [DroppedFile(path=p, reason=NOT_IN_REPOSITORY) for p in resolved.missing],
        calls_left=config.max_classifier_calls,
        budget=budget_tokens,
        failure=seeds.text,
    )
    # A step edits sources unless it targets a test, and a plan is made of source changes:
    # tests must not crowd the sources out.
    prefer_source = mode == "plan" or not any(is_test_path(f) for f in seeds.files)
    ranked = rank(
        f"{task}\n{seeds.text}",
        index,
        resolved,
        limit=config.search_limit,
        prefer_source=prefer_source,
    )
    why = {c.path: "rank: " + ", ".join(c.reasons) for c in ranked}
    order = [c.path for c in ranked if c.path not in carried]
    pool = order[: config.top_k]
    # named to a planner by path after the files that did not fit (a path costs little)
    more = order[config.top_k : config.top_k + MORE_RANKED] if mode == "plan" else []
    below = [DroppedFile(path=p, reason=RANKED_BELOW.format(config.top_k)) for p in more]
    # Only the files the pass names are shown whole whatever their size (cut short before
    # they are dropped); what the texts mention comes next, whole only when small.
    first, tests_last = _seed_order(resolved, mode)
    entries = [
        e
        for p in first
        if (e := _load(run, p, "seed: " + resolved.reasons[p], seed=_named(resolved, p)))
        is not None
    ]
    entries += [
        e
        for p in carried
        if p not in resolved.reasons
        and (e := _load(run, p, carried[p].reason, carry=carried[p])) is not None
    ]
    candidates = [e for p in pool if (e := _load(run, p, why[p])) is not None]
    entries += _scope(run, candidates)
    entries += [
        e
        for p in tests_last  # in the room left: nothing is kept for them
        if (e := _load(run, p, "seed: " + resolved.reasons[p])) is not None
    ]
    entries = with_snapshots(
        entries,
        known=lambda: [f.path for f in index.files()],
        words=f"{run.task}\n{run.failure}",
        load=lambda path, reason: _load(run, path, reason),
    )
    for entry in entries:
        _precision(run, entry)
    files, over = pack(
        entries,
        budget_tokens,
        whole_file_tokens=config.whole_file_tokens,
        seed_symbols=resolved.symbols,
    )
    return ContextPackage(
        task=task,
        files=files,
        dropped=run.dropped + over + below,
        budget_tokens=budget_tokens,
        room_tokens=ask.budget_tokens,
        used_tokens=sum(f.tokens for f in files),
        mode=mode,
        seed_files=resolved.files,
        seed_symbols=resolved.symbols,
    )


def _needed(
    budget: int, root: Path, mode: Mode, seeds: ResolvedSeeds, config: RetrievalConfig
) -> int:
    """What an implement pass's context needs: the files it names, whole, and
    retrieval.implement_extra_tokens of what they use — never more than `budget`. A plan
    pass's budget is sized by its caller."""
    if mode != "implement":
        return budget
    named = 0
    for path in seeds.files:
        if _named(seeds, path):
            try:
                text = read_in_tree(root, path).decode("utf-8", "replace")
            except OSError:
                continue
            named += block_tokens(ContextFile(path=path, content=text))
    return min(budget, named + config.implement_extra_tokens)


def _seed_order(seeds: ResolvedSeeds, mode: Mode) -> tuple[list[str], list[str]]:
    """The seeds shown before the ranked files, and those after them. A plan pass is shown the
    sources first: the tests its task names, or its failure output points at, are known to it
    by name, and their outlines would fill a planner's small room before the code to change
    (sqlparse: the failing test file and the test files of unrelated failures in the output
    left no room for the module the fix changes)."""
    if mode != "plan":
        return list(seeds.files), []
    tests = [p for p in seeds.files if is_test_path(p)]
    return [p for p in seeds.files if p not in tests], tests


def _named(seeds: ResolvedSeeds, path: str) -> bool:
    """Whether the pass named the file (a step's target, a test it names), rather than a text
    mentioning it."""
    return seeds.reasons.get(path, "").startswith("named")


def _load(
    run: _Run, path: str, reason: str, *, seed: bool = False, carry: ContextFile | None = None
) -> Entry | None:
    """A file read from the worktree and parsed afresh (it may hold uncommitted edits)."""
    try:
        data = read_in_tree(run.root, path)
    except OSError:
        run.dropped.append(DroppedFile(path=path, reason="not readable in the worktree"))
        return None
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        run.dropped.append(DroppedFile(path=path, reason="binary file"))
        return None
    text = data.decode("utf-8", errors="replace")
    parsed = parse_source(path, text) if len(data) <= run.config.max_file_bytes else None
    details = dict(carry.symbols) if carry is not None and carry.detail == "outline" else None
    return Entry(
        path=path,
        text=text,
        symbols=parsed.symbols if parsed else [],
        doc=parsed.doc if parsed else "",
        reason=reason,
        seed=seed,
        details=details,
    )


def _scope(run: _Run, candidates: Sequence[Entry]) -> list[Entry]:
    """The ranked candidates in the order they are shown: the first few asked about
    (retrieval.scope_questions, within the call cap), those judged needed first; the rest
    unasked after them, as outlines at most — a question is asked where it can change what
    the pass sees most. Recall-first: a file judged not needed is not dropped for it, only
    put last, in the room left; a small model says "no" to a file the fix changes one time
    in five, and the ranking that put it first is cheap and seldom that wrong. Packed out,
    it is still named to a planner among the files that did not fit."""
    if not run.stage_on("scope") or not candidates or run.classifier is None:
        return list(candidates)
    limit = max(0, min(run.calls_left, run.config.scope_questions))
    asked, unasked = candidates[:limit], candidates[limit:]
    run.calls_left -= len(asked)
    items = [
        ScopeItem(
            e.path,
            scope_summary(e.path, language_of(e.path), e.doc, e.symbols, e.text.count("\n") + 1),
            content_version(e.text),
        )
        for e in asked
    ]
    kept, judged_out = judge_scope(run.task, items, run.classifier) if items else ([], [])
    keep = set(kept)
    chosen = [e for e in asked if e.path in keep]
    for entry in chosen:
        entry.reason = entry.reason.replace("rank:", "scope: needed; rank:", 1)
    for entry in unasked:
        entry.reason = entry.reason.replace("rank:", "scope: not asked; rank:", 1)
    said = {d.path: d.reason for d in judged_out}  # "scope: not needed" (or unparseable)
    last = [e for e in asked if e.path in said]
    for entry in last:
        entry.reason = entry.reason.replace("rank:", f"{said[entry.path]}, kept last; rank:", 1)
    return [*chosen, *unasked, *last]


def _precision(run: _Run, entry: Entry) -> None:
    """Choose the detail per definition of a large file an implement pass names (asked, or
    carried over): a named file too large to show whole in its share of the budget. Other
    files are shown whole when small (a seed while it fits), else as outlines, unasked."""
    parents = {s.parent for s in entry.symbols if s.parent}
    wanted: dict[str, SymbolDetail] = {  # a named class: its members are chosen, not it whole
        s.qualname: "full"
        for s in entry.symbols
        if (s.name in run.seeds.symbols or s.qualname in run.seeds.symbols)
        and s.qualname not in parents
    }
    if entry.details is not None:
        entry.details.update(wanted)
        return
    named = [p for p in run.seeds.files if _named(run.seeds, p)]
    tokens = estimate_tokens(entry.text)
    large = tokens > run.config.whole_file_tokens and tokens > run.budget // max(1, len(named))
    if not (
        large
        and entry.path in named
        and run.mode == "implement"
        and entry.symbols
        and run.stage_on("precision")
        and run.classifier
        and run.calls_left > 0
    ):
        return
    entry.details, asked = choose_details(
        run.task,
        entry,
        run.classifier,
        max_questions=min(run.config.precision_max_questions, run.calls_left),
        seed_symbols=list(wanted),
        words=f"{run.task}\n{run.failure}",
    )
    run.calls_left -= asked


class IndexedContext:
    """A context source over a repository index (the shape of agent.run.sources.ContextSource)."""

    def __init__(self, index: RepoIndex, root: Path, config: RetrievalConfig) -> None:
        self._tree = IndexedTree(index, root, config)

    def gather(
        self,
        task: str,
        *,
        mode: Mode,
        files: Sequence[str],
        failure: str | None,
        budget_tokens: int,
        classifier: LoggedLLMClient | None,
        symbols: Sequence[str] = (),
    ) -> ContextPackage:
        """A fresh package: `files` and `symbols` are seeds, `failure` is mined for more."""
        seeds = Seeds(files=list(files), whole=list(symbols), text=failure or "")
        ask = ContextAsk(task, budget_tokens, mode, seeds)
        return retrieve(self._tree, ask, classifier=classifier)

    def refine(
        self,
        package: ContextPackage,
        request: RefinementRequest,
        *,
        classifier: LoggedLLMClient | None,
    ) -> ContextPackage:
        """The package widened by what the request says is missing, in the same budget."""
        return refine(package, request, self._tree, classifier=classifier)

    def test_files(self, task: str, *, limit: int) -> list[str]:
        """The repository's test files nearest `task`, best first, without a model call: the
        tests it names, then tests ranked by its words and as the tests of the sources it
        points at. Not a snapshot: no test is written there (it follows its test file)."""
        tree = self._tree
        seeds = resolve_seeds(task, Seeds(), tree.index, root=tree.root)
        ranked = rank(task, tree.index, seeds, limit=tree.config.search_limit)
        named = [p for p in seeds.files if is_test_path(p)]
        found = [c.path for c in ranked if is_test_path(c.path)]
        every = [f.path for f in tree.index.files() if f.is_test]
        tests = dict.fromkeys([*named, *found, *sorted(every)])
        return [p for p in tests if recorded_test_file(p) is None][:limit]

    def refresh(self) -> None:
        """Re-index what changed in the worktree (after a commit)."""
        self._tree.index.update(self._tree.root)

    def close(self) -> None:
        """Release the index."""
        self._tree.index.close()
