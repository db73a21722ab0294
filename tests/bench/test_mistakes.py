"""The substantive mistakes as spoilers of the gold answer: each wrong edit still applies to the
file before the fix through the real edit engine and differs from the fix; a partial fix leaves
a place out; a wrong plan names a shown file near the fix; a wrong test checks the wrong thing."""

from __future__ import annotations

import difflib

import pytest

from agent.bench.oracle.mistakes import (
    left_out,
    negated_guard,
    off_by_one,
    partial_hunk,
    sibling,
    spoiled_test,
    wrong_edit,
    wrong_plan,
    wrong_test,
)
from agent.bench.patches import FilePatch, after_patch, oracle_edits, parse_patch
from agent.execute.edits.matching import replace_once
from agent.execute.parsers import parse_implement_response

BEFORE = """def clamp(x, limit):
    if x > limit:
        return limit
    return x


def scale(x):
    return x * 3


def triple(x):
    return x * 3


def label(x):
    kind = "small"
    size = 1
    name = "x"
    return f"{name}:{kind}:{size}"
"""
FIXES = {
    "constant": BEFORE.replace(
        "def scale(x):\n    return x * 3", "def scale(x):\n    return x * 2"
    ),
    "guard": BEFORE.replace(
        "def clamp(x, limit):\n", "def clamp(x, limit):\n    if x < 0:\n        return 0\n"
    ),
    "two changes": BEFORE.replace('"small"', '"big"').replace('"x"', '"y"'),
    "boolean": BEFORE.replace("    return x\n", "    return x and limit\n"),
}


def patch_of(before: str, after: str, path: str = "pkg/mod.py") -> FilePatch:
    diff = difflib.unified_diff(
        before.splitlines(), after.splitlines(), f"a/{path}", f"b/{path}", lineterm=""
    )
    [file] = parse_patch("\n".join(diff) + "\n")
    return file


def applied(before: str, answer: str) -> str:
    """The file after an answer's edit blocks, through the real parser and matcher."""
    text = before
    for edit in parse_implement_response(answer):
        text = replace_once(text, edit.search, edit.replacement)
    return text


def spoiled_answers(before: str, gold: FilePatch) -> list[str]:
    """Every answer wrong_edit gives for the fix's first hunk, over many picks."""
    start, old, new = gold.hunks[0]
    found = [wrong_edit(before, (start, old, new), pick) for pick in range(40)]
    return sorted(
        {oracle_edits(before, FilePatch(path=gold.path, hunks=[h])) for h in found if h is not None}
    )


@pytest.mark.parametrize("fix", sorted(FIXES))
def test_every_wrong_edit_applies_and_differs_from_the_fix_and_from_no_fix(fix: str) -> None:
    gold = patch_of(BEFORE, FIXES[fix])
    answers = spoiled_answers(BEFORE, gold)
    assert answers
    gold_search = [e.search for e in parse_implement_response(oracle_edits(BEFORE, gold))]
    searches = []
    for answer in answers:
        after = applied(BEFORE, answer)
        assert after.rstrip("\n") != after_patch(BEFORE, gold)
        assert after != BEFORE
        searches += [e.search for e in parse_implement_response(answer)]
    assert all(BEFORE.count(search) == 1 for search in searches)
    assert gold_search[0] in searches  # most variants keep the fix's own search text


def test_a_constant_the_fix_adds_is_off_by_one_never_back_to_the_old_value() -> None:
    gold = patch_of(BEFORE, FIXES["constant"])
    afters = {applied(BEFORE, a) for a in spoiled_answers(BEFORE, gold)}
    assert (
        BEFORE.replace("def scale(x):\n    return x * 3", "def scale(x):\n    return x * 1")
        in afters
    )
    assert off_by_one("    if x < 0:") == ["    if x < 1:", "    if x <= 0:"]
    assert off_by_one("    return a >= b") == ["    return a > b"]
    assert off_by_one("def f(x) -> int:") == []


def test_the_right_change_lands_in_the_sibling_function() -> None:
    gold = patch_of(BEFORE, FIXES["constant"])
    [elsewhere] = sibling(BEFORE, gold.hunks[0])
    answer = oracle_edits(BEFORE, FilePatch(path=gold.path, hunks=[elsewhere]))
    after = applied(BEFORE, answer)
    assert "def scale(x):\n    return x * 3" in after
    assert "def triple(x):\n    return x * 2" in after


def test_a_guard_the_fix_adds_is_negated_or_lands_after_another_def() -> None:
    gold = patch_of(BEFORE, FIXES["guard"])
    assert negated_guard("    if x < 0:") == ["    if not (x < 0):"]
    assert negated_guard("    if not ready:  # wait") == ["    if ready:  # wait"]
    assert negated_guard("  } else if (n < 0) {") == ["  } else if (!(n < 0)) {"]
    afters = {applied(BEFORE, a) for a in spoiled_answers(BEFORE, gold)}
    assert (
        BEFORE.replace(
            "def clamp(x, limit):\n",
            "def clamp(x, limit):\n    if not (x < 0):\n        return 0\n",
        )
        in afters
    )
    assert any("def scale(x):\n    if x < 0:\n        return 0\n" in a for a in afters)


def test_a_hunk_of_several_changes_is_made_in_part() -> None:
    gold = patch_of(BEFORE, FIXES["two changes"])
    [hunk] = gold.hunks
    parts = partial_hunk(hunk)
    assert len(parts) == 2
    afters = {
        applied(BEFORE, oracle_edits(BEFORE, FilePatch(path=gold.path, hunks=[h]))) for h in parts
    }
    assert afters == {BEFORE.replace('"small"', '"big"'), BEFORE.replace('"x"', '"y"')}


def test_an_operator_is_swapped_only_when_no_subtler_mistake_fits() -> None:
    gold = patch_of(BEFORE, FIXES["boolean"])
    afters = {applied(BEFORE, a) for a in spoiled_answers(BEFORE, gold)}
    assert afters == {BEFORE.replace("    return x\n", "    return x or limit\n")}
    constant = patch_of(BEFORE, FIXES["constant"])
    assert not any("return x / 2" in a for a in spoiled_answers(BEFORE, constant))


def test_a_hunk_offering_no_mistake_gives_none() -> None:
    gold = patch_of(BEFORE, BEFORE.replace('    name = "x"\n', '    name = "x"  # the name\n'))
    assert all(wrong_edit(BEFORE, gold.hunks[0], pick) is None for pick in range(10))


def test_a_partial_fix_leaves_one_of_several_places_out() -> None:
    one = patch_of(BEFORE, FIXES["constant"])
    other = patch_of("a = 1\n", "a = 2\n", "pkg/other.py")
    assert left_out([one], 3) is None
    assert {left_out([one, other], pick) for pick in range(4)} == {
        ("pkg/mod.py", 0),
        ("pkg/other.py", 0),
    }


def test_a_wrong_plan_names_the_shown_file_closest_to_the_fix() -> None:
    shown = ["docs/guide.md", "pkg/util.py", "pkg/mod.py"]
    assert wrong_plan(["pkg/mod.py"], ["pkg/mod.py"], shown, 0) == ["pkg/util.py"]
    assert wrong_plan(["pkg/mod.py"], ["pkg/mod.py"], ["pkg/mod.py"], 0) is None


def test_a_wrong_plan_of_several_files_swaps_one_or_leaves_one_out() -> None:
    fix = ["pkg/a.py", "pkg/b.py"]
    plans = {tuple(wrong_plan(fix, fix, ["lib/c.py", *fix], pick) or []) for pick in range(8)}
    assert plans == {("lib/c.py", "pkg/b.py"), ("pkg/a.py",), ("pkg/b.py",)}


TEST = "from pkg.mod import scale\n\n\ndef test_scale():\n    assert scale(4) == 8\n"


def test_a_wrong_test_expects_the_wrong_value_or_the_opposite_or_nothing() -> None:
    spoiled = {wrong_test(TEST, pick) for pick in range(3)}
    assert spoiled == {
        TEST.replace("== 8", "== 9"),
        TEST.replace("assert scale(4) == 8", "assert not (scale(4) == 8)"),
        TEST.replace("== 8", "== 8 or True"),
    }
    assert wrong_test("def test_nothing():\n    pass\n", 0) is None


def test_a_spoiled_test_file_still_applies_and_asserts_otherwise() -> None:
    before = "def test_old():\n    assert True\n"
    gold = patch_of(before, before + "\n\n" + TEST.split("\n\n\n", 1)[1])
    answer = oracle_edits(before, spoiled_test(gold, 0))
    assert applied(before, answer) == before + "\n\ndef test_scale():\n    assert scale(4) == 9\n"
