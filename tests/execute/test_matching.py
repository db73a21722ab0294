"""The forgiving matcher: every shape of small-model search it accepts, and what it refuses."""

from __future__ import annotations

import pytest

from agent.errors import PatchRejected
from agent.execute.edits.lines import is_elision
from agent.execute.edits.matching import replace_once

LOOP = """\
def count(n):
    count = 0
    while n:
        n //= 10
        count += 1
    return count
"""

TWICE = """\
class A:
    def size(self):
        if self.items:
            return len(self.items)
        return 0


def size(obj):
    if self.items:
        return len(self.items)
    return 0
"""


# --- blank lines -----------------------------------------------------------------------------


def test_a_search_opening_with_a_blank_line_the_file_lacks_never_glues_two_lines() -> None:
    search, replacement = "\n    while n:\n        n //= 10", "    while n > 0:\n        n //= 10"
    result = replace_once(LOOP, search, replacement)
    assert result == LOOP.replace("    while n:", "    while n > 0:")


def test_a_search_closing_with_a_blank_line_the_file_lacks_never_glues_two_lines() -> None:
    result = replace_once(LOOP, "    count = 0\n", "    count = 1")
    assert result == LOOP.replace("count = 0", "count = 1")


def test_a_blank_line_the_file_has_before_the_search_can_still_be_deleted() -> None:
    text = "a = 1\n\nb = 2\n"
    assert replace_once(text, "\nb = 2", "b = 3") == "a = 1\nb = 3\n"


def test_a_stray_blank_line_inside_the_search_is_forgiven() -> None:
    search = "    count = 0\n\n    while n:\n        n //= 10"
    replacement = "    count = 0\n\n    while n > 0:\n        n //= 10"
    assert replace_once(LOOP, search, replacement) == LOOP.replace("while n:", "while n > 0:")


def test_a_blank_line_the_search_leaves_out_stays_in_the_file() -> None:
    text = "def f():\n    a = 1\n\n    return a\n"
    result = replace_once(text, "    a = 1\n    return a", "    a = 2\n    return a")
    assert result == "def f():\n    a = 2\n\n    return a\n"


def test_a_replacement_ending_in_a_blank_line_keeps_it() -> None:
    text = "x = 1\n\ny = 2\nz = 3\n"
    assert replace_once(text, "x = 1\n\ny = 2", "x = 1\n") == "x = 1\n\nz = 3\n"


def test_a_stray_blank_opening_the_search_only_never_costs_the_replacement_a_blank_line() -> None:
    search, replacement = "\n    count = 0\n    while n:", "    count = 0\n\n    while n:"
    assert replace_once(LOOP, search, replacement) == LOOP.replace(
        "    count = 0\n", "    count = 0\n\n"
    )


def test_a_stray_blank_closing_the_search_only_never_costs_the_replacement_a_blank_line() -> None:
    search, replacement = "    while n:\n        n //= 10\n", "    while n:\n\n        n //= 5"
    assert replace_once(LOOP, search, replacement) == LOOP.replace(
        "    while n:\n        n //= 10", "    while n:\n\n        n //= 5"
    )


def test_stray_blanks_around_search_and_replacement_are_dropped_from_both() -> None:
    search = "\n    while n:\n        n //= 10\n"
    replacement = "\n    while n:\n\n        n //= 5\n"
    assert replace_once(LOOP, search, replacement) == LOOP.replace(
        "    while n:\n        n //= 10", "    while n:\n\n        n //= 5"
    )


def test_a_stray_closing_blank_in_both_keeps_a_line_added_after_a_new_blank_in_place() -> None:
    search = "        n //= 10\n        count += 1\n"
    replacement = "        n //= 10\n        count += 1\n\n    assert n == 0\n"
    assert replace_once(LOOP, search, replacement) == LOOP.replace(
        "        count += 1\n", "        count += 1\n\n    assert n == 0\n"
    )


def test_a_blank_the_file_has_where_a_forgiven_search_opens_is_the_files_to_delete() -> None:
    text = "a = 1\n\nb = 2  \nc = 3\n"  # trailing spaces: the forgiving matcher, not the exact one
    assert replace_once(text, "\nb = 2", "b = 3") == "a = 1\nb = 3\nc = 3\n"


# --- indentation -----------------------------------------------------------------------------


def test_a_search_in_tabs_matches_a_file_indented_with_spaces() -> None:
    result = replace_once(LOOP, "\twhile n:\n\t\tn //= 10", "\twhile n:\n\t\tn //= 10\n\t\tn -= 0")
    assert result == LOOP.replace("        n //= 10\n", "        n //= 10\n        n -= 0\n")


def test_a_search_in_spaces_matches_a_file_indented_with_tabs() -> None:
    text = "func f() {\n\tif x {\n\t\treturn 1\n\t}\n}\n"
    result = replace_once(text, "    if x {\n        return 1", "    if x {\n        return 2")
    assert result == "func f() {\n\tif x {\n\t\treturn 2\n\t}\n}\n"


def test_two_spaces_per_tab_are_recognised() -> None:
    text = "if a:\n\tif b:\n\t\tc()\n"
    assert replace_once(text, "  if b:\n    c()", "  if b:\n    d()") == "if a:\n\tif b:\n\t\td()\n"


def test_tabs_that_match_two_places_are_refused_with_both() -> None:
    search = "\tif self.items:\n\t\treturn len(self.items)"
    with pytest.raises(PatchRejected, match="matches 2 times when whitespace is ignored") as caught:
        replace_once(TWICE, search, "\tif self.items is not None:\n\t\treturn len(self.items)")
    assert caught.value.hint.splitlines()[1:] == [
        "line 3:         if self.items:",
        "line 9:     if self.items:",
    ]


def test_the_lines_the_model_kept_keep_the_files_trailing_whitespace() -> None:
    text = "def f():  \n    return 1\n"
    assert replace_once(text, "def f():\n    return 1", "def f():\n    return 2") == (
        "def f():  \n    return 2\n"
    )


def test_a_rewritten_last_line_loses_the_files_trailing_whitespace() -> None:
    assert replace_once("x = 1   \ny = 2\n", "x = 1", "x = 3") == "x = 3\ny = 2\n"


def test_a_replacement_that_would_go_left_of_column_zero_is_refused() -> None:
    text = "def f():\n    return 1\n"
    with pytest.raises(PatchRejected, match="indentation cannot be mapped"):
        replace_once(text, "        return 1", "return 2")


# --- word boundaries -------------------------------------------------------------------------


def test_a_search_ending_inside_a_word_is_not_that_word() -> None:
    text = "total_count = 0\ntotal = 1\n"
    assert replace_once(text, "total", "grand") == "total_count = 0\ngrand = 1\n"


# --- elisions --------------------------------------------------------------------------------


ELIDED = """\
def parse(text):
    result = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        key = key.strip()
        value = value.strip()
        result[key] = value
    return result
"""


def test_an_elided_search_applies_when_each_piece_is_unique_and_in_order() -> None:
    search = "    result = {}\n    ...\n    return result"
    replacement = "    result: dict[str, str] = {}\n    ...\n    return result"
    assert replace_once(ELIDED, search, replacement) == ELIDED.replace(
        "result = {}", "result: dict[str, str] = {}"
    )


def test_a_comment_elision_with_words_is_recognised() -> None:
    search = "def parse(text):\n    # ... existing code ...\n        result[key] = value"
    replacement = (
        "def parse(text):\n    # ... existing code ...\n        result[key] = value\n"
        "        print(key)"
    )
    result = replace_once(ELIDED, search, replacement)
    assert result == ELIDED.replace(
        "result[key] = value\n", "result[key] = value\n        print(key)\n"
    )


def test_a_comment_elision_with_its_words_against_the_dots_is_recognised() -> None:
    search = "    result = {}\n    # ...existing code...\n    return result"
    replacement = "    result: dict[str, str] = {}\n    # ...existing code...\n    return result"
    assert replace_once(ELIDED, search, replacement) == ELIDED.replace(
        "result = {}", "result: dict[str, str] = {}"
    )


def test_an_elision_closing_the_search_only_is_refused_as_it_may_stand_for_a_deletion() -> None:
    with pytest.raises(PatchRejected, match="does not leave out the same places"):
        replace_once(ELIDED, "def parse(text):\n    ...", "def parse(text: str):\n    return {}")


def test_an_elision_the_replacement_drops_is_refused() -> None:
    with pytest.raises(PatchRejected, match="does not leave out the same places"):
        replace_once(ELIDED, "    result = {}\n    ...\n    return result", "    return {}")


def test_elided_pieces_out_of_order_are_refused() -> None:
    with pytest.raises(PatchRejected, match="not found"):
        replace_once(
            ELIDED,
            "    return result\n    ...\n    result = {}",
            "    return result\n    ...\n    result = {}",
        )


def test_an_elided_piece_that_fits_two_places_is_refused() -> None:
    text = "a = 1\nb = 2\nc = 3\nb = 2\nd = 4\n"
    with pytest.raises(PatchRejected, match="ambiguous"):
        replace_once(text, "b = 2\n...\nd = 4", "b = 5\n...\nd = 4")


def test_a_literal_ellipsis_in_the_file_is_matched_as_code_first() -> None:
    text = "class P(Protocol):\n    def f(self) -> int:\n        ...\n"
    search = "    def f(self) -> int:\n        ..."
    assert replace_once(text, search, "    def f(self) -> str:\n        ...") == (
        text.replace("-> int", "-> str")
    )


@pytest.mark.parametrize(
    "line",
    [
        "...",
        "    # ...",
        "// ... rest unchanged ...",
        "…",
        "/* ... */",
        "# ... existing code",
        "# ...existing code...",
        "// ...existing code...",
        "<!-- …rest of the list… -->",
    ],
)
def test_elision_lines(line: str) -> None:
    assert is_elision(line)


@pytest.mark.parametrize(
    "line",
    [
        "...rest,",
        "x = ...",
        "# see the docs...",
        "print('...')",
        "...existing code...",
        "# ...; x = f(a) + [1]",
    ],
)
def test_code_with_dots_is_not_an_elision(line: str) -> None:
    assert not is_elision(line)


# --- a byte order mark -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "search,replacement",
    [
        ("def count(n):  \n    count = 0", "def count(n: int) -> int:\n    count = 0"),  # forgiving
        ("def count(n):\n    count = 0", "def count(n: int) -> int:\n    count = 0"),  # exact
        ("\ufeffdef count(n):\n    count = 0", "\ufeffdef count(n: int) -> int:\n    count = 0"),
    ],
    ids=["trailing spaces", "exact", "copied with the mark"],
)
def test_a_byte_order_mark_is_not_part_of_the_first_line_and_is_kept(
    search: str,
    replacement: str,
) -> None:
    result = replace_once("\ufeff" + LOOP, search, replacement)
    assert result == "\ufeff" + LOOP.replace("def count(n):", "def count(n: int) -> int:")


def test_a_file_holding_only_a_byte_order_mark_takes_an_empty_search() -> None:
    assert replace_once("\ufeff", "", "x = 1\n") == "\ufeffx = 1\n"
