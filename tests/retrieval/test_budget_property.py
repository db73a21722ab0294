"""The budget is never exceeded: random repositories, random budgets, random precision choices."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.config.files import RetrievalConfig
from agent.llm.budget import estimate_tokens
from agent.models import ContextPackage
from agent.retrieval.indexing.index import RepoIndex
from agent.retrieval.indexing.parsing import parse_source
from agent.retrieval.indexing.scan import is_test_path
from agent.retrieval.packing import Entry, pack
from agent.retrieval.pipeline import ContextAsk, IndexedTree, retrieve
from agent.retrieval.seeds import Seeds
from tests.retrieval.conftest import CART_PY, PRICING_PY, USERS_PY, make_repo

NAMES = st.sampled_from(["cart", "price", "user", "stock", "order", "tax", "ship", "auth"])


@st.composite
def python_module(draw: st.DrawFn) -> str:
    """A module of a few functions with bodies of random length (sometimes not valid Python)."""
    parts = ['"""A module."""\n']
    for n in range(draw(st.integers(0, 5))):
        name = f"{draw(NAMES)}_{n}"
        body = "".join(f"    x{i} = {i} * 2\n" for i in range(draw(st.integers(0, 60))))
        doc = f'    """Do {name}."""\n'
        parts.append(f"\n\ndef {name}(value):\n{doc}{body}    return value\n")
    if draw(st.booleans()) and draw(st.booleans()):
        parts.append("\ndef broken(:\n")
    return "".join(parts)


@st.composite
def repository(draw: st.DrawFn) -> dict[str, str]:
    """2–6 files: Python modules under a package, a test, sometimes prose."""
    files: dict[str, str] = {}
    for n in range(draw(st.integers(2, 6))):
        folder = draw(st.sampled_from(["app", "app/core", "tests", "docs"]))
        stem = f"{draw(NAMES)}{n}"
        if folder == "docs":
            files[f"{folder}/{stem}.md"] = "# notes\n" + "cart price tax\n" * draw(
                st.integers(0, 200)
            )
        else:
            prefix = "test_" if folder == "tests" else ""
            files[f"{folder}/{prefix}{stem}.py"] = draw(python_module())
    return files


def assert_within(package: ContextPackage, budget: int) -> None:
    assert package.used_tokens == sum(f.tokens for f in package.files)
    assert package.used_tokens <= budget
    assert estimate_tokens(package.to_prompt_text()) <= budget
    assert len({f.path for f in package.files}) == len(package.files)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    files=repository(),
    budget=st.integers(0, 4000),
    seed_count=st.integers(0, 3),
    mode=st.sampled_from(["plan", "implement"]),
)
def test_retrieve_never_exceeds_the_budget(
    files: dict[str, str], budget: int, seed_count: int, mode: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo = make_repo(Path(tmp) / "repo", files)
        seeds = sorted(files)[:seed_count]
        with RepoIndex.open(Path(tmp) / "index.sqlite") as index:
            index.update(repo)
            tree = IndexedTree(index, repo, RetrievalConfig(whole_file_tokens=100))
            task = "the cart price ignores tax"
            ask = ContextAsk(task, budget, mode, Seeds(files=seeds))  # type: ignore[arg-type]
            package = retrieve(tree, ask, classifier=None)
    assert_within(package, budget)
    kept = {f.path for f in package.files}
    reasons = {d.path: d.reason for d in package.dropped}
    for seed in seeds:
        assert seed in kept or reasons[seed].startswith("over budget")
        # a plan pass keeps no room for the tests it names: they come after the sources
        assert seed in kept or budget < 80 * len(seeds) or (mode == "plan" and is_test_path(seed))


DETAILS = st.sampled_from(["full", "signature", "omitted"])
SOURCES = {"shop/cart.py": CART_PY, "shop/pricing.py": PRICING_PY, "shop/users.py": USERS_PY}


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(0, 2500),
    picks=st.lists(
        st.tuples(st.sampled_from(sorted(SOURCES)), st.booleans(), DETAILS),
        max_size=3,
        unique_by=lambda t: t[0],
    ),
    whole=st.integers(0, 800),
)
def test_packing_never_exceeds_the_budget_whatever_the_chosen_details(
    budget: int,
    picks: list[tuple[str, bool, str]],
    whole: int,
) -> None:
    entries = []
    for path, seed, detail in sorted(picks, key=lambda p: not p[1]):
        symbols = parse_source(path, SOURCES[path]).symbols
        details = {s.qualname: detail for s in symbols}
        entries.append(
            Entry(
                path=path,
                text=SOURCES[path],
                symbols=symbols,
                reason="test",
                seed=seed,
                details=details,
            )
        )  # type: ignore[misc]
    files, dropped = pack(entries, budget, whole_file_tokens=whole, seed_symbols=[])
    package = ContextPackage(
        task="t",
        files=files,
        dropped=dropped,
        budget_tokens=budget,
        used_tokens=sum(f.tokens for f in files),
    )
    assert_within(package, budget)
    assert {f.path for f in files} | {d.path for d in dropped} == {p[0] for p in picks}
