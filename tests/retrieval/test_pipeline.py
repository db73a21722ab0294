"""retrieve and refine on the shop repository, with the classifier scripted over real HTTP."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent.config.files import RetrievalConfig
from agent.llm.logged import LoggedLLMClient
from agent.models import OVER_BUDGET, ContextPackage, RefinementRequest
from agent.retrieval.indexing.index import RepoIndex
from agent.retrieval.outline import MARK
from agent.retrieval.pipeline import ContextAsk, IndexedContext, IndexedTree, refine, retrieve
from agent.retrieval.ranking import rank
from agent.retrieval.seeds import ResolvedSeeds, Seeds
from tests.fakes.call_log import MemoryCallLog
from tests.fakes.model_server import ScriptedModelServer
from tests.retrieval.conftest import PRICING_PY, commit_all, make_repo

TASK = "The cart total must apply the discount code before adding tax."
NO_STAGES = RetrievalConfig(stages=[])


def run(
    index: RepoIndex,
    root: Path,
    *,
    budget: int = 4000,
    files: tuple[str, ...] = (),
    classifier: LoggedLLMClient | None = None,
    config: RetrievalConfig = NO_STAGES,
    task: str = TASK,
    mode: str = "implement",
    failure: str = "",
) -> ContextPackage:
    seeds = Seeds(files=list(files), text=failure)
    ask = ContextAsk(task, budget, mode, seeds)  # type: ignore[arg-type]
    return retrieve(IndexedTree(index, root, config), ask, classifier=classifier)


def paths(package: ContextPackage) -> list[str]:
    return [f.path for f in package.files]


def dropped(package: ContextPackage) -> dict[str, str]:
    return {d.path: d.reason for d in package.dropped}


def asked_files(server: ScriptedModelServer) -> list[str]:
    return [
        re.search(r"File: (\S+)", r.user_prompt)[1]  # type: ignore[index]
        for r in server.requests
        if r.stage == "retrieval_scope"
    ]


@pytest.fixture
def pricing_only(tmp_path: Path, index: RepoIndex) -> Path:
    """A repository holding only the pricing module (so precision asks about it alone)."""
    repo = make_repo(tmp_path / "pricing", {"shop/pricing.py": PRICING_PY})
    index.update(repo)
    return repo


def test_ranking_pulls_in_imports_and_tests_of_seeds(shop_index: RepoIndex) -> None:
    seeds = ResolvedSeeds(files=["shop/cart.py"], reasons={"shop/cart.py": "named"})
    ranked = {c.path: c.reasons for c in rank(TASK, shop_index, seeds, limit=20)}
    assert "imported by shop/cart.py" in ranked["shop/pricing.py"]
    assert "test of shop/cart.py" in ranked["tests/test_cart.py"]
    assert "shop/cart.py" not in ranked


def test_for_an_implement_step_sources_rank_above_tests(shop_index: RepoIndex) -> None:
    task = "test_total_applies_discount fails: the cart total applies the discount wrongly"
    plain = [c.path for c in rank(task, shop_index, ResolvedSeeds(), limit=20)]
    sources_first = [
        c.path for c in rank(task, shop_index, ResolvedSeeds(), limit=20, prefer_source=True)
    ]
    assert plain[0].startswith("tests/")
    first_test = next(i for i, p in enumerate(sources_first) if p.startswith("tests/"))
    assert all(p.startswith("shop/") for p in sources_first[:first_test])
    assert sorted(plain) == sorted(sources_first)


def test_the_first_hits_import_neighbours_are_credited(shop_index: RepoIndex) -> None:
    ranked = {c.path: c.reasons for c in rank("cart total", shop_index, ResolvedSeeds(), limit=20)}
    assert "imported by shop/cart.py (first hit)" in ranked["shop/pricing.py"]


def test_rank_only_makes_no_model_calls(
    shop: Path, shop_index: RepoIndex, classifier: LoggedLLMClient, server: ScriptedModelServer
) -> None:
    package = run(shop_index, shop, files=("shop/cart.py",), classifier=classifier)
    assert server.requests == []
    assert paths(package)[0] == "shop/cart.py"
    assert package.files[0].reason == "seed: named"
    assert "shop/pricing.py" in paths(package)
    assert package.used_tokens <= package.budget_tokens <= 4000


def test_an_implement_pass_holds_its_named_files_and_a_little_more(
    shop: Path,
    shop_index: RepoIndex,
) -> None:
    lean = run(
        shop_index,
        shop,
        files=("shop/cart.py",),
        config=RetrievalConfig(stages=[], implement_extra_tokens=0),
    )
    assert paths(lean)[0] == "shop/cart.py" and lean.files[0].detail == "full"
    assert lean.used_tokens <= lean.budget_tokens
    roomy = run(
        shop_index,
        shop,
        files=("shop/cart.py",),
        config=RetrievalConfig(stages=[], implement_extra_tokens=400),
    )
    assert len(roomy.files) > 1 and roomy.budget_tokens == lean.budget_tokens + 400
    planned = run(shop_index, shop, files=("shop/cart.py",), mode="plan")
    assert planned.budget_tokens == 4000  # a planner pass's budget is its caller's


def test_without_a_classifier_the_configured_stages_are_skipped(
    shop: Path, shop_index: RepoIndex
) -> None:
    package = run(shop_index, shop, files=("shop/cart.py",), config=RetrievalConfig())
    assert paths(package)[0] == "shop/cart.py"
    assert "shop/pricing.py" in paths(package)


def test_seeds_are_present_even_in_a_tight_budget(shop: Path, shop_index: RepoIndex) -> None:
    package = run(shop_index, shop, budget=300, files=("shop/cart.py", "shop/users.py"))
    assert paths(package)[:2] == ["shop/cart.py", "shop/users.py"]
    assert package.used_tokens <= 300
    assert {f.detail for f in package.files[:2]} <= {"full", "outline", "truncated"}


def test_a_seed_larger_than_the_budget_is_cut_short_not_dropped(
    shop: Path, shop_index: RepoIndex
) -> None:
    package = run(shop_index, shop, budget=120, files=("shop/cart.py",))
    [cart] = package.files
    assert (cart.path, cart.detail) == ("shop/cart.py", "truncated")
    assert cart.content.startswith('"""The shopping cart."""')
    assert cart.content.endswith("not shown")
    assert package.used_tokens <= 120


def test_plan_mode_shows_large_ranked_files_as_outlines(shop: Path, shop_index: RepoIndex) -> None:
    package = run(
        shop_index,
        shop,
        budget=4000,
        files=("shop/pricing.py",),
        mode="plan",
        config=RetrievalConfig(stages=[], whole_file_tokens=50),
    )
    details = {f.path: f.detail for f in package.files}
    assert details["shop/pricing.py"] == "full"  # a seed stays whole while it fits
    assert details["shop/cart.py"] == "outline"
    assert "def add_item(self, sku: str, quantity: int = 1) -> None:" in next(
        f.content for f in package.files if f.path == "shop/cart.py"
    )


def test_a_seed_that_does_not_exist_is_recorded(shop: Path, shop_index: RepoIndex) -> None:
    package = run(shop_index, shop, files=("shop/shipping.py",))
    assert dropped(package)["shop/shipping.py"].startswith("not in the repository")


def test_scope_no_puts_a_file_last_and_yes_keeps_one_first(
    shop: Path,
    shop_index: RepoIndex,
    classifier: LoggedLLMClient,
    server: ScriptedModelServer,
    call_log: MemoryCallLog,
) -> None:
    # Recall-first: the file ranked first that a small model says "no" to stays in the
    # context, after everything else, in the room left.
    server.script("retrieval_scope", "No.", "Yes")
    config = RetrievalConfig(stages=["scope"], top_k=3)
    package = run(shop_index, shop, files=("shop/cart.py",), classifier=classifier, config=config)
    refused, accepted = asked_files(server)
    shown = paths(package)
    assert shown[0] == "shop/cart.py" and shown[1] == accepted and shown[-1] == refused
    reason = next(f.reason for f in package.files if f.path == refused)
    assert reason.startswith("scope: not needed, kept last; rank:")
    assert "shop/cart.py" not in asked_files(server)  # seeds are never questioned
    assert [r.stage for r in call_log.records] == ["retrieval_scope"] * 2
    # with room for all but one, the file judged not needed is the one left out
    room = sum(f.tokens for f in package.files if f.path != refused)
    server.script("retrieval_scope", "No.", "Yes")
    tight = run(
        shop_index,
        shop,
        budget=room,
        files=("shop/cart.py",),
        classifier=classifier,
        config=config,
    )
    assert refused not in paths(tight) and accepted in paths(tight)
    assert dropped(tight)[refused].startswith(OVER_BUDGET)


def test_an_unparseable_scope_answer_counts_as_no(
    shop: Path, shop_index: RepoIndex, classifier: LoggedLLMClient, server: ScriptedModelServer
) -> None:
    server.script("retrieval_scope", "It might be useful, hard to say.")
    server.script("retrieval_scope_reask", "Hard to say.")
    package = run(
        shop_index,
        shop,
        files=("shop/cart.py",),
        classifier=classifier,
        config=RetrievalConfig(stages=["scope"], top_k=1),
    )
    [asked] = asked_files(server)
    assert paths(package) == ["shop/cart.py", asked]
    assert package.files[-1].reason.startswith("scope: unparseable answer, kept last")


def test_scope_questions_stop_at_the_call_cap_and_the_rest_are_shown_unasked(
    shop: Path,
    shop_index: RepoIndex,
    classifier: LoggedLLMClient,
    server: ScriptedModelServer,
) -> None:
    server.script("retrieval_scope", "yes")
    config = RetrievalConfig(stages=["scope"], top_k=3, max_classifier_calls=1)
    package = run(shop_index, shop, files=("shop/cart.py",), classifier=classifier, config=config)
    assert len(asked_files(server)) == 1
    reasons = [f.reason for f in package.files]
    assert sum(r.startswith("scope: needed") for r in reasons) == 1
    assert sum(r.startswith("scope: not asked") for r in reasons) == 2


def test_only_the_first_ranked_files_are_asked_about(
    shop: Path,
    shop_index: RepoIndex,
    classifier: LoggedLLMClient,
    server: ScriptedModelServer,
) -> None:
    server.script("retrieval_scope", "no")
    config = RetrievalConfig(stages=["scope"], top_k=4, scope_questions=1)
    package = run(shop_index, shop, files=("shop/cart.py",), classifier=classifier, config=config)
    [refused] = asked_files(server)
    assert paths(package)[-1] == refused
    assert len([f for f in package.files if f.reason.startswith("scope: not asked")]) == 3


def test_precision_shows_the_chosen_body_and_omits_the_rest(
    pricing_only: Path,
    index: RepoIndex,
    classifier: LoggedLLMClient,
    server: ScriptedModelServer,
    call_log: MemoryCallLog,
) -> None:
    # tax_rate shares the task's words, so it is asked about first (yes), then apply_discount
    # (no): one question each.
    server.script("retrieval_precision", "yes", "no")
    config = RetrievalConfig(stages=["precision"], whole_file_tokens=10)
    package = run(
        index,
        pricing_only,
        files=("shop/pricing.py",),
        classifier=classifier,
        config=config,
        task="The tax rate must be 25 percent.",
        budget=90,
    )
    [pricing] = [f for f in package.files if f.path == "shop/pricing.py"]
    assert pricing.detail == "outline"
    assert pricing.symbols == {"apply_discount": "omitted", "tax_rate": "full"}
    assert (
        'def tax_rate() -> float:\n    """The sales tax rate."""\n    return 0.2' in pricing.content
    )
    assert "def apply_discount" not in pricing.content and MARK in pricing.content
    assert 'DISCOUNTS = {"SAVE10": 0.10, "HALF": 0.50}' in pricing.content
    assert "full body of `tax_rate`" in server.requests[0].user_prompt
    assert "return 0.2" in server.requests[0].user_prompt  # the question shows the body
    assert [r.stage for r in call_log.records] == ["retrieval_precision"] * 2


def _method(name: str, words: str) -> str:
    return (
        f'    def {name}(self, value):\n        """{words}."""\n'
        + "".join(f"        value = value + {n}\n" for n in range(12))
        + "        return value\n\n"
    )


def ask_once(
    root: Path,
    path: str,
    source: str,
    index: RepoIndex,
    classifier: LoggedLLMClient,
    server: ScriptedModelServer,
    *,
    task: str,
    budget: int,
    failure: str = "",
) -> tuple[str, ContextPackage]:
    """Retrieval for an implement pass naming `path`, the one file of a repository at `root`,
    with one precision question allowed and answered yes: that question's prompt, and the
    package."""
    repo = make_repo(root, {path: source})
    index.update(repo)
    server.script("retrieval_precision", "yes")
    config = RetrievalConfig(stages=["precision"], whole_file_tokens=10, precision_max_questions=1)
    package = run(
        index,
        repo,
        files=(path,),
        classifier=classifier,
        config=config,
        task=task,
        budget=budget,
        failure=failure,
    )
    [request] = server.requests
    return request.user_prompt, package


def test_precision_asks_first_about_the_method_holding_the_tasks_words_in_a_file_of_classes(
    tmp_path: Path,
    index: RepoIndex,
    classifier: LoggedLLMClient,
    server: ScriptedModelServer,
) -> None:
    # the words of the task are in one method of the second class; questions about the
    # classes themselves would be spent before reaching it
    first = "class Reader:\n" + "".join(_method(f"read_{n}", f"Read part {n}") for n in range(8))
    second = "class Writer:\n" + "".join(_method(f"write_{n}", f"Write part {n}") for n in range(7))
    second += _method("help_option_names", "The help option names, in declaration order")
    asked, package = ask_once(
        tmp_path / "io",
        "pkg/io.py",
        f"{first}\n{second}",
        index,
        classifier,
        server,
        budget=600,
        task="Keep the declaration order of help option names",
    )
    assert "full body of `Writer.help_option_names`" in asked
    [io] = package.files
    assert io.symbols["Writer.help_option_names"] == "full"
    assert "class Writer:" in io.content and "def help_option_names(self, value):" in io.content
    assert "        value = value + 11" in io.content


def test_on_a_retry_precision_asks_first_about_what_the_failure_speaks_of(
    tmp_path: Path,
    index: RepoIndex,
    classifier: LoggedLLMClient,
    server: ScriptedModelServer,
) -> None:
    # the task's words are in every parse method; the failing test's name speaks of the
    # subcommand, and only the method that dispatches one holds that word
    source = "class Command:\n" + "".join(
        _method(f"parse_{n}", f"Parse the options again, part {n}") for n in range(8)
    )
    source += _method("dispatch_subcommand", "Hand the rest over to the subcommand")
    asked, _ = ask_once(
        tmp_path / "cmd",
        "pkg/command.py",
        source,
        index,
        classifier,
        server,
        budget=600,
        task="Allow calling parse again: reset the options",
        failure="FAILED when call subcommand then option values reset",
    )
    assert "full body of `Command.dispatch_subcommand`" in asked


def test_precision_asks_first_about_what_the_named_definitions_body_calls(
    tmp_path: Path,
    index: RepoIndex,
    classifier: LoggedLLMClient,
    server: ScriptedModelServer,
) -> None:
    # the task names `style`, shown in full unasked; the helper it calls holds none of the
    # task's words, the decoys hold them all — the helper is still asked about first
    def function(name: str, doc: str, call: str = "") -> str:
        return (
            f'def {name}(value):\n    """{doc}."""\n'
            + "".join(f"    value = value + {n}\n" for n in range(12))
            + (f"    value = {call}(value)\n" if call else "")
            + "    return value\n\n\n"
        )

    decoys = "".join(
        function(f"black_colour_{n}", "Validate a black colour value") for n in range(4)
    )
    source = (
        decoys
        + function("_code", "A number for the terminal")
        + function("style", "Style the text", call="_code")
    )
    asked, package = ask_once(
        tmp_path / "term",
        "pkg/term.py",
        source,
        index,
        classifier,
        server,
        budget=600,
        task="`style` must validate a black colour value",
    )
    assert "full body of `_code`" in asked
    assert package.files[0].symbols["_code"] == "full"


def test_a_named_file_that_fits_its_share_stays_whole_without_questions(
    pricing_only: Path,
    index: RepoIndex,
    classifier: LoggedLLMClient,
    server: ScriptedModelServer,
) -> None:
    config = RetrievalConfig(stages=["precision"], whole_file_tokens=10)
    package = run(
        index,
        pricing_only,
        files=("shop/pricing.py",),
        classifier=classifier,
        config=config,
        budget=4000,
    )
    assert server.requests == []
    assert package.files[0].detail == "full"


def test_plan_passes_ask_no_precision_question(
    pricing_only: Path,
    index: RepoIndex,
    classifier: LoggedLLMClient,
    server: ScriptedModelServer,
) -> None:
    config = RetrievalConfig(stages=["precision"], whole_file_tokens=10)
    run(
        index,
        pricing_only,
        files=("shop/pricing.py",),
        classifier=classifier,
        config=config,
        budget=90,
        mode="plan",
    )
    assert server.requests == []


def test_small_files_stay_whole_without_questions(
    shop: Path, shop_index: RepoIndex, classifier: LoggedLLMClient, server: ScriptedModelServer
) -> None:
    config = RetrievalConfig(stages=["precision"], top_k=1)
    package = run(
        shop_index, shop, files=("shop/pricing.py",), classifier=classifier, config=config
    )
    assert server.requests == []
    assert package.files[0].detail == "full"
    assert package.files[0].content == PRICING_PY


def test_a_seeded_symbol_is_shown_in_full_without_a_question(
    pricing_only: Path,
    index: RepoIndex,
    classifier: LoggedLLMClient,
    server: ScriptedModelServer,
) -> None:
    server.script("retrieval_precision", "no")
    config = RetrievalConfig(stages=["precision"], whole_file_tokens=10)
    package = run(
        index,
        pricing_only,
        files=("shop/pricing.py",),
        classifier=classifier,
        config=config,
        task="`apply_discount` ignores lower-case codes",
        budget=100,
    )
    assert package.files[0].symbols == {"apply_discount": "full", "tax_rate": "omitted"}
    assert len(server.requests) == 1


def test_the_same_inputs_give_the_same_package(shop: Path, shop_index: RepoIndex) -> None:
    first = run(shop_index, shop, files=("shop/cart.py",))
    assert run(shop_index, shop, files=("shop/cart.py",)) == first


def test_refinement_brings_in_a_missing_file_within_the_same_budget(
    shop: Path,
    shop_index: RepoIndex,
) -> None:
    package = run(
        shop_index,
        shop,
        budget=1500,
        files=("shop/cart.py",),
        config=RetrievalConfig(stages=[], top_k=1),
    )
    assert "shop/users.py" not in paths(package)
    request = RefinementRequest(reason="needs the user model", missing_files=["shop/users.py"])
    tree = IndexedTree(shop_index, shop, RetrievalConfig(stages=[], top_k=1))
    refined = refine(package, request, tree, classifier=None)
    assert paths(refined)[:2] == ["shop/cart.py", "shop/users.py"]
    assert refined.budget_tokens == 1500 and refined.used_tokens <= 1500
    assert refined.seed_files == ["shop/cart.py", "shop/users.py"]


def test_a_file_asked_for_grows_the_package_within_the_passs_room(
    shop: Path, shop_index: RepoIndex
) -> None:
    """The first package is sized to the file the step names; the file the model asks for
    is sized in again, whole, never beyond the room the pass allows."""
    config = RetrievalConfig(stages=[], top_k=1, implement_extra_tokens=20)
    package = run(shop_index, shop, budget=4000, files=("shop/cart.py",), config=config)
    assert package.budget_tokens < 1000 and package.room_tokens == 4000
    request = RefinementRequest(reason="needs the pricing rules", missing_files=["shop/pricing.py"])
    refined = refine(package, request, IndexedTree(shop_index, shop, config), classifier=None)
    shown = {f.path: f.detail for f in refined.files}
    assert shown["shop/pricing.py"] == "full"
    assert package.budget_tokens < refined.budget_tokens <= 4000
    assert refined.room_tokens == 4000


def test_refinement_does_not_ask_again_about_files_already_judged(
    shop: Path,
    shop_index: RepoIndex,
    classifier: LoggedLLMClient,
    server: ScriptedModelServer,
) -> None:
    server.script("retrieval_scope", "yes", "no")
    config = RetrievalConfig(stages=["scope"], top_k=1)
    package = run(shop_index, shop, files=("shop/cart.py",), classifier=classifier, config=config)
    [kept] = asked_files(server)
    request = RefinementRequest(reason="NameError", missing_symbols=["hash_password"])
    refined = refine(package, request, IndexedTree(shop_index, shop, config), classifier=classifier)
    assert "shop/users.py" in paths(refined) and kept in paths(refined)
    assert asked_files(server).count(kept) == 1
    assert len(asked_files(server)) == 2


def test_indexed_context_refreshes_after_a_commit(shop: Path, shop_index: RepoIndex) -> None:
    source = IndexedContext(shop_index, shop, NO_STAGES)
    (shop / "shop" / "shipping.py").write_text("def shipping_cost():\n    return 5\n")
    commit_all(shop, "shipping")
    source.refresh()
    package = source.gather(
        "`shipping_cost` is too high",
        mode="implement",
        files=(),
        failure=None,
        budget_tokens=2000,
        classifier=None,
    )
    assert paths(package)[0] == "shop/shipping.py"


def test_the_method_asked_about_in_a_class_the_task_names_keeps_its_body(
    tmp_path: Path,
    index: RepoIndex,
    classifier: LoggedLLMClient,
    server: ScriptedModelServer,
) -> None:
    # the task names the class: its members are asked about, and the body judged needed is
    # shown with the class's header even when the other members' signatures do not fit
    body = "class Writer:\n" + "".join(_method(f"write_{n}", f"Write part {n}") for n in range(20))
    body += _method("write_trailer", "Write the trailer")
    asked, package = ask_once(
        tmp_path / "io",
        "pkg/io.py",
        body,
        index,
        classifier,
        server,
        budget=250,
        task="`Writer` writes the trailer twice",
    )
    assert "full body of `Writer.write_trailer`" in asked
    [io] = package.files
    assert io.symbols["Writer.write_trailer"] == "full" and io.symbols["Writer"] != "full"
    assert io.content.startswith("class Writer:")
    assert "    def write_trailer(self, value):" in io.content
    assert "        value = value + 11" in io.content


def test_a_named_class_in_a_large_named_file_is_shown_by_its_members(
    tmp_path: Path,
    index: RepoIndex,
    classifier: LoggedLLMClient,
    server: ScriptedModelServer,
) -> None:
    # the task names the class and one of its methods: the method is shown whole without a
    # question, the class by its header, not its every member
    body = "class Writer:\n" + "".join(_method(f"write_{n}", f"Write part {n}") for n in range(20))
    repo = make_repo(tmp_path / "io", {"pkg/io.py": body})
    index.update(repo)
    config = RetrievalConfig(stages=["precision"], whole_file_tokens=10, precision_max_questions=0)
    package = run(
        index,
        repo,
        files=("pkg/io.py",),
        classifier=classifier,
        config=config,
        task="`Writer.write_3` writes part 3 twice (see `Writer`)",
        budget=500,
    )
    [io] = package.files
    assert io.symbols["Writer.write_3"] == "full" and io.symbols["Writer.write_4"] != "full"
    assert "        value = value + 11" in io.content and "def write_5" not in io.content
    assert server.requests == []


def test_a_plan_pass_records_the_files_ranked_below_those_it_considered(
    shop: Path,
    shop_index: RepoIndex,
) -> None:
    config = RetrievalConfig(stages=[], top_k=1)
    plan = run(shop_index, shop, config=config, mode="plan")
    below = [d for d in plan.dropped if "ranked below the 1 files considered" in d.reason]
    assert below and all(d.reason.startswith("over budget") for d in below)
    assert plan.dropped[-len(below) :] == below  # after the files that did not fit
    implement = run(shop_index, shop, config=config)
    assert not [d for d in implement.dropped if "ranked below" in d.reason]


def _snapshot_entry(key: str, out: str) -> str:
    body = f'Object {{\n  "out": "{out}",\n}}'
    return f"exports[`test/bin/semver.js TAP sorting > {key} 1`] = `\n{body}\n`\n"


@pytest.fixture
def cli(tmp_path: Path, index: RepoIndex) -> Path:
    """A node-tap project: a CLI, its test, and the snapshot that records the test's output."""
    entries = [_snapshot_entry(f"{n}.0.0 case{n}", f"{n}.0.0") for n in range(1, 40)]
    entries.insert(20, _snapshot_entry("1.2.3foo 1.2.3-bar -l", "1.2.3-bar"))
    repo = make_repo(
        tmp_path / "cli",
        {
            "bin/semver.js": "const main = (argv) => argv.sort().join(' ')\nmain()\n",
            "test/bin/semver.js": "const t = require('tap')\nt.test('sorting', t => t.end())\n",
            "tap-snapshots/test/bin/semver.js.test.cjs": "\n".join(entries),
            "test/index.js": "t.ok(true)\n",
            "tap-snapshots/test/index.js.test.cjs": "exports[`other`] = ``\n",
        },
    )
    index.update(repo)
    return repo


@pytest.mark.parametrize(("mode", "top_k"), [("plan", 8), ("implement", 8), ("implement", 1)])
def test_a_test_file_brings_its_snapshot_right_after_it_with_the_failing_entry_whole(
    cli: Path, index: RepoIndex, mode: str, top_k: int
) -> None:
    """Ranked on its own (top_k 8) or not ranked at all (top_k 1), the snapshot follows."""
    failure = "not ok 6 - 1.2.3foo 1.2.3-bar -l\n  --- test/bin/semver.js must match snapshot"
    config = RetrievalConfig(stages=[], top_k=top_k)
    package = run(index, cli, task="sort loose", failure=failure, mode=mode, config=config)
    names = paths(package)
    at = names.index("test/bin/semver.js")
    assert names[at + 1] == "tap-snapshots/test/bin/semver.js.test.cjs"
    snapshot = package.files[at + 1]
    assert snapshot.reason.startswith("snapshot of test/bin/semver.js")
    assert (snapshot.reason == "snapshot of test/bin/semver.js") == (top_k == 1)
    assert snapshot.detail == "outline"
    assert '"out": "1.2.3-bar",' in snapshot.content  # the entry the failure names, whole
    assert "exports[`test/bin/semver.js TAP sorting > 7.0.0 case7 1`] = `" in snapshot.content
    assert '"out": "7.0.0",' not in snapshot.content  # the others by their keys


def test_the_test_files_a_reproduction_may_write_to_leave_the_snapshots_out(
    cli: Path, index: RepoIndex
) -> None:
    found = IndexedContext(index, cli, NO_STAGES).test_files("sort 1.2.3foo -l", limit=10)
    assert set(found) == {"test/bin/semver.js", "test/index.js"}
