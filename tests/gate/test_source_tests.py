"""Tests inside Rust source files: found, compared, and put into another version's code."""

from __future__ import annotations

from agent.gate.source_tests import may_hold_tests, with_tests_of
from agent.gate.source_tests import test_items as items_of
from agent.gate.source_tests import tests_changed as changed

CODE = """//! A calculator.
pub fn mul(a: i64, b: i64) -> i64 {
    a + b
}
"""
TESTS = """#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn muls() {
        assert_eq!(mul(2, 3), 6);
    }
}"""
TOP = """#[test]
fn at_the_top() {
    assert_eq!(mul(1, 1), 1);
}"""
LIB = f"{CODE}\n{TESTS}\n\n{TOP}\n"


def test_the_test_items_of_a_file_are_its_cfg_test_modules_and_test_functions() -> None:
    assert items_of(LIB) == [TESTS, TOP]
    assert items_of(CODE) == []
    assert items_of(None) is None
    assert may_hold_tests("src/lib.rs") and not may_hold_tests("src/lib.py")


def test_attributes_that_do_not_make_a_test() -> None:
    text = (
        '#[cfg(feature = "x")]\nmod x {}\n#[cfg_attr(test, derive(Debug))]\nstruct S;\n'
        "#[tokio::test]\nasync fn t() {}\n#[cfg(all(test, unix))]\nmod u;\n"
    )
    assert items_of(text) == ["#[tokio::test]\nasync fn t() {}", "#[cfg(all(test, unix))]\nmod u;"]


def test_a_file_that_is_all_tests() -> None:
    text = "#![cfg(test)]\nuse super::*;\n\n#[test]\nfn t() {}\n"
    assert items_of(text) == [text]


def test_a_code_change_is_no_test_change_and_a_test_change_is() -> None:
    fixed = LIB.replace("    a + b", "    a * b")
    assert not changed(LIB, fixed)
    assert changed(LIB, fixed.replace("6);", "5);"))
    assert changed(LIB, fixed.replace(TOP, ""))
    assert changed(LIB, None) and not changed(None, CODE)
    assert changed(LIB, "fn broken( {")  # not readable: counts as changed


def test_the_new_code_takes_the_old_tests() -> None:
    weakened = LIB.replace("    a + b", "    a * b").replace("6);", "5);")
    spliced = with_tests_of(weakened, LIB)
    assert spliced is not None
    assert items_of(spliced) == [TESTS, TOP]
    assert "    a * b" in spliced and "5);" not in spliced
    assert with_tests_of("fn broken( {", LIB) is None
