"""Doctests: the examples of docstrings and text files, compared and put into another version's
code."""

from __future__ import annotations

from agent.gate.doctests import changed_examples, examples, may_hold_doctests, with_examples_of

OPS = '''"""Arithmetic.

>>> add(1, 1)
2
"""


class Calc:
    """A calculator.

    >>> Calc().double(2)
    4
    """

    def double(self, x):
        """Twice x.

        >>> Calc().double(3)
        6
        """
        return 2 * x


def mul(a, b):
    """Return a × b.

    >>> mul(2, 3)
    6
    """
    return a * b + 1


__test__ = {"edge": """
>>> mul(0, 5)
0
"""}
'''
FIXED = OPS.replace("a * b + 1", "a * b")
MUL_SEEN = "    >>> mul(2, 3)\n    6\n"


def test_the_examples_of_a_module_are_found_by_their_owner() -> None:
    assert examples("calc/ops.py", OPS) == {
        "": [("add(1, 1)\n", "2\n")],
        "Calc": [("Calc().double(2)\n", "4\n")],
        "Calc.double": [("Calc().double(3)\n", "6\n")],
        "mul": [("mul(2, 3)\n", "6\n")],
        "__test__.edge": [("mul(0, 5)\n", "0\n")],
    }
    assert examples("calc/ops.py", None) is None
    assert examples("calc/ops.py", "def broken(:\n") is None


def test_the_files_doctests_are_read_from() -> None:
    assert may_hold_doctests("calc/ops.py") and may_hold_doctests("docs/usage.rst")
    assert may_hold_doctests("README.md") and may_hold_doctests("src/lib.rs")
    assert not may_hold_doctests("src/app/main.go")


def test_a_changed_expected_value_is_a_changed_example() -> None:
    assert changed_examples(
        "calc/ops.py",
        OPS,
        OPS.replace('    6\n    """\n    return a', '    7\n    """\n    return a'),
    ) == ["mul"]


def test_a_removed_example_is_a_changed_example() -> None:
    assert changed_examples("calc/ops.py", OPS, OPS.replace(MUL_SEEN, "")) == ["mul"]
    assert changed_examples("calc/ops.py", OPS, OPS.replace(">>> add(1, 1)\n2\n", "")) == [""]


def test_a_changed_example_source_or_option_is_a_changed_example() -> None:
    assert changed_examples("calc/ops.py", OPS, OPS.replace("mul(2, 3)", "mul(2, 4)")) == ["mul"]
    skipped = OPS.replace(">>> mul(2, 3)", ">>> mul(2, 3)  # doctest: +SKIP")
    assert changed_examples("calc/ops.py", OPS, skipped) == ["mul"]


def test_a_removed_owner_is_a_changed_example() -> None:
    gone = OPS[: OPS.index("def mul")] + "mul = lambda a, b: a * b\n"
    assert changed_examples("calc/ops.py", OPS, gone) == ["mul", "__test__.edge"]


def test_a_code_change_and_added_examples_are_no_change() -> None:
    assert changed_examples("calc/ops.py", OPS, FIXED) == []
    more = FIXED.replace(
        MUL_SEEN, "    >>> mul(0, 1)\n    0\n" + MUL_SEEN + "    >>> mul(4, 5)\n    20\n"
    )
    assert changed_examples("calc/ops.py", OPS, more) == []
    assert changed_examples("calc/ops.py", OPS, FIXED.replace("Return a × b.", "a × b")) == []


def test_a_new_file_brings_only_new_examples() -> None:
    assert changed_examples("calc/ops.py", None, OPS) == []


def test_a_docstring_changed_at_run_time_is_a_changed_example() -> None:
    patched = FIXED + 'mul.__doc__ = mul.__doc__.replace("6", "7")\n'
    assert changed_examples("calc/ops.py", OPS, patched) == ["__doc__"]


def test_an_unreadable_version_compares_the_files_examples_in_order() -> None:
    broken = FIXED.replace("def mul(a, b):", "def mul(a, b:")
    assert changed_examples("calc/ops.py", OPS, broken) == []
    assert changed_examples("calc/ops.py", OPS, broken.replace("    6\n", "    7\n")) == [""]


def test_a_text_file_is_all_examples() -> None:
    text = "Usage\n=====\n\n>>> from calc import mul\n>>> mul(2, 3)\n6\n"
    assert examples("docs/usage.rst", text) == {
        "": [("from calc import mul\n", ""), ("mul(2, 3)\n", "6\n")]
    }
    assert changed_examples("docs/usage.rst", text, text.replace("Usage", "How to")) == []
    assert changed_examples("docs/usage.rst", text, text.replace("6\n", "7\n")) == [""]
    assert with_examples_of("docs/usage.rst", text.replace("6\n", "7\n"), text) == text


def test_the_new_code_takes_the_old_docstrings() -> None:
    weakened = FIXED.replace(MUL_SEEN, "    >>> mul(2, 3)\n    7\n").replace(
        '"edge": """\n>>> mul(0, 5)', '"edge": """\n>>> mul(0, 6)'
    )
    assert with_examples_of("calc/ops.py", weakened, OPS) == FIXED


def test_the_examples_of_a_removed_owner_stay_out_and_the_code_changes_stay_in() -> None:
    gone = FIXED[: FIXED.index("def mul")] + "mul = lambda a, b: a * b\n"
    assert with_examples_of("calc/ops.py", gone, OPS) == gone
    weakened = gone.replace(">>> Calc().double(3)\n        6", ">>> Calc().double(3)\n        7")
    assert with_examples_of("calc/ops.py", weakened, OPS) == gone  # the others put back
    assert with_examples_of("calc/ops.py", "def broken(:\n", OPS) is None


def test_the_old_docstrings_do_not_undo_a_docstring_changed_at_run_time() -> None:
    patched = FIXED + 'mul.__doc__ = "no examples"\n'
    assert with_examples_of("calc/ops.py", patched, OPS) is None


def test_docstrings_are_put_back_exactly_past_a_byte_order_mark_and_crlf_endings() -> None:
    windows = "\ufeff" + OPS.replace("\n", "\r\n")
    weakened = windows.replace("a * b + 1", "a * b").replace("    6\r\n", "    7\r\n")
    assert with_examples_of("calc/ops.py", weakened, windows) == "\ufeff" + FIXED.replace(
        "\n", "\r\n"
    )


RUST = """//! A calculator.
//!
//! ```
//! assert_eq!(calc::add(1, 1), 2);
//! ```

/// Multiplies.
///
/// ```
/// assert_eq!(calc::mul(2, 3), 6);
/// ```
pub fn mul(a: i64, b: i64) -> i64 {
    a + b
}
"""


def test_the_doc_tests_of_a_rust_file_are_the_code_blocks_of_its_doc_comments() -> None:
    assert examples("src/lib.rs", RUST) == {
        "": [("", "assert_eq!(calc::add(1, 1), 2);"), ("", "assert_eq!(calc::mul(2, 3), 6);")]
    }
    assert examples("src/lib.rs", "//// ```\n//// not a doc\n//// ```\nfn f() {}\n") == {}


def test_a_rust_doc_test_rewritten_or_switched_off_is_a_changed_example() -> None:
    fixed = RUST.replace("    a + b", "    a * b")
    assert changed_examples("src/lib.rs", RUST, fixed) == []
    assert changed_examples("src/lib.rs", RUST, fixed.replace("3), 6)", "3), 5)")) == [""]
    assert changed_examples(
        "src/lib.rs", RUST, RUST.replace("/// ```\n/// assert", "/// ```ignore\n/// assert")
    ) == [""]
    assert with_examples_of("src/lib.rs", fixed, RUST) is None
