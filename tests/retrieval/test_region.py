"""A file too large to show whole, asked for again: the refined context shows the definitions
the task speaks of in full, not the same outline (agent.retrieval.region)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.config.files import RetrievalConfig
from agent.models import RefinementRequest
from agent.retrieval.indexing.index import RepoIndex
from agent.retrieval.indexing.parsing import parse_source
from agent.retrieval.pipeline import ContextAsk, IndexedContext, IndexedTree, refine, retrieve
from agent.retrieval.region import region
from agent.retrieval.seeds import Seeds
from tests.retrieval.conftest import make_repo

FILLER = "".join(
    f"def helper_{n}(value):\n    total = value + {n}\n    return total * {n}\n\n\n"
    for n in range(120)
)
BIG = (
    FILLER
    + "def collide_names(params):\n"
    + "    seen = set()\n"
    + "    for param in params:\n"
    + "        if param.name in seen:\n"
    + "            pass  # the warning about colliding argument names belongs here\n"
    + "        seen.add(param.name)\n"
    + "    return params\n"
)
TASK = "Warn when an argument name collides with another parameter's name."


def asked_again(
    root: Path, index: RepoIndex, files: dict[str, str], task: str, path: str, *, focus: str = ""
) -> tuple[str, str]:
    """What a pass is shown of `path` (a seed of an implement pass in 1,500 tokens) at first,
    and once it asks for the file again (its step's words: `focus`)."""
    repo = make_repo(root, files)
    index.update(repo)
    tree = IndexedTree(index, repo, RetrievalConfig(stages=[]))
    first = retrieve(
        tree, ContextAsk(task, 1500, "implement", Seeds(files=[path])), classifier=None
    )
    asked = RefinementRequest(
        reason="the implementer asked for context", missing_files=[path], focus=focus
    )
    again = refine(first, asked, tree, classifier=None)
    [before] = [f for f in first.files if f.path == path]
    [after] = [f for f in again.files if f.path == path]
    return before.content, after.content


def test_region_finds_the_definition_whose_body_holds_the_task_s_words() -> None:
    symbols = parse_source("big.py", BIG).symbols
    assert region(TASK, symbols, BIG, shown=set())[0] == "collide_names"
    assert "collide_names" not in region(TASK, symbols, BIG, shown={"collide_names"})


def test_asking_again_for_a_file_shown_in_outline_shows_the_region(
    tmp_path: Path, index: RepoIndex
) -> None:
    before, after = asked_again(tmp_path / "big", index, {"pkg/big.py": BIG}, TASK, "pkg/big.py")
    assert "param.name in seen" not in before
    assert "param.name in seen" in after


def test_a_javascript_file_of_documented_methods_asked_for_again_shows_the_region(
    tmp_path: Path, index: RepoIndex
) -> None:
    """commander's lib/command.js: every method under a long JSDoc and a blank line. The
    comments of the methods left out are left out with them, so the region fits; before, the
    outline of comments did not fit and the file was cut short above the region."""
    pytest.importorskip("tree_sitter_javascript")
    doc = "".join(f"   * Line {n} of the documentation, with an example.\n" for n in range(12))
    methods = "".join(
        f"  /**\n{doc}   */\n\n  option{n}(value) {{\n    this._values[{n}] = value;\n"
        "    return this;\n  }\n\n"
        for n in range(60)
    )
    excess = (
        "  _excessArguments(received) {\n"
        "    if (this._allowExcessArguments) return;\n"
        "    const s = this.registeredArguments.length === 1 ? '' : 's';\n"
        "    this.error(`too many arguments. Expected ${this.registeredArguments.length}`);\n"
        "  }\n"
    )
    source = f"class Command {{\n{methods}{excess}}}\n\nexports.Command = Command;\n"
    task = "Report how many arguments were expected when too many arguments are given."
    _, after = asked_again(
        tmp_path / "js", index, {"lib/command.js": source}, task, "lib/command.js"
    )
    assert excess.rstrip("\n") in after


def test_the_words_of_the_comment_above_a_definition_rank_it() -> None:
    """commander's fix of an `@example` in `option()`'s JSDoc: the comment is shown with its
    definition, so its words are the definition's."""
    pytest.importorskip("tree_sitter_javascript")
    source = (
        "class Command {\n"
        "  /**\n   * Define option with `flags`.\n   *\n   * @example\n"
        "   *     .option('--pt, --pizza-type <TYPE>', 'type of pizza')\n   */\n\n"
        "  option(flags, description) {\n    return this._optionEx({}, flags, description);\n"
        "  }\n\n"
        "  parse(argv) {\n    return this._parse(argv);\n  }\n}\n"
    )
    symbols = parse_source("lib/command.js", source).symbols
    assert region("the pizza type example", symbols, source, shown=set()) == ["Command.option"]


def test_the_region_takes_more_definitions_while_they_fit_the_room() -> None:
    """A fix spread over several methods (commander's save/restore of the parse state touched
    the constructor, parse, parseAsync and two new methods): the best three always, more while
    they fit, none past the room."""
    methods = "".join(
        f"def restore_state_{n}(state):\n    state.saved = state.parse_state\n    return {n}\n\n\n"
        for n in range(6)
    )
    source = FILLER + methods
    symbols = parse_source("big.py", source).symbols
    task = "Restore the saved parse state."
    assert len(region(task, symbols, source, shown=set())) == 3
    found = region(task, symbols, source, shown=set(), room=1000)
    assert sorted(found) == [f"restore_state_{n}" for n in range(6)]
    assert len(region(task, symbols, source, shown=set(), room=110)) == 4


def test_a_fix_spread_over_several_definitions_is_shown_whole_when_asked_for_again(
    tmp_path: Path, index: RepoIndex
) -> None:
    methods = "".join(
        f"def restore_state_{n}(state):\n    state.saved = state.parse_state\n    return {n}\n\n\n"
        for n in range(5)
    )
    files = {"pkg/big.py": FILLER + methods}
    _, after = asked_again(
        tmp_path / "big", index, files, "Restore the saved parse state.", "pkg/big.py"
    )
    assert all(f"    return {n}\n" in after for n in range(5))


def test_the_step_s_words_find_the_region_the_task_does_not_name(
    tmp_path: Path, index: RepoIndex
) -> None:
    """A plan's step says where the change goes ("warn in collide_names"), though the task
    speaks only of what a user sees."""
    task = "A user sees no message for a value given twice."
    files = {"pkg/big.py": BIG}
    _, plain = asked_again(tmp_path / "plain", index, files, task, "pkg/big.py")
    _, focused = asked_again(
        tmp_path / "focused",
        index,
        files,
        task,
        "pkg/big.py",
        focus="Warn in collide_names when the names collide",
    )

    assert "param.name in seen" not in plain
    assert "param.name in seen" in focused


def test_a_step_s_target_symbols_are_shown_whole_and_add_no_file(
    tmp_path: Path, index: RepoIndex
) -> None:
    """A planner names the definitions its step changes: the implement pass shows them whole
    in a file too large to show whole, at first, and brings in no other file that defines
    the same name."""
    other = "def collide_names(params):\n    return sorted(params)\n"
    repo = make_repo(tmp_path / "big", {"pkg/big.py": BIG, "pkg/other.py": other})
    index.update(repo)
    source = IndexedContext(index, repo, RetrievalConfig(stages=[]))
    asked = {"mode": "implement", "files": ["pkg/big.py"], "failure": None}
    plain = source.gather("Fix it", budget_tokens=1500, classifier=None, **asked)
    named = source.gather(
        "Fix it", budget_tokens=1500, classifier=None, symbols=["collide_names"], **asked
    )

    [before] = [f for f in plain.files if f.path == "pkg/big.py"]
    [after] = [f for f in named.files if f.path == "pkg/big.py"]
    assert "param.name in seen" not in before.content
    assert "param.name in seen" in after.content
    assert "pkg/other.py" not in named.seed_files
