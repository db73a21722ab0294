"""Tests that live inside source files: Rust's `#[cfg(test)]` modules and `#[test]` functions.

In Rust the unit tests of `src/lib.rs` are usually in `src/lib.rs` itself, so the gate cannot
take the whole file as a test file (the fix is in it too). These functions find the test items
of such a file — for the gate, whose question is whether an edit changed them — and put one
version's tests into another version's code, for the run of the original tests over the new
code. Pure functions on text; tree-sitter's Rust grammar reads it.
"""

from __future__ import annotations

import importlib
import re
from functools import cache
from pathlib import PurePosixPath
from typing import Any

SUFFIXES = frozenset({".rs"})
# An attribute that makes the item a test, or compiles it only for tests: #[test],
# #[tokio::test], #[cfg(test)], #[cfg(all(test, unix))], #[cfg_attr(test, …)] is not one.
_TEST_ATTRIBUTE = re.compile(r"^#\[\s*(?:[\w:]*::)?test\s*(?:\(|\]$)|^#\[\s*cfg\s*\(.*\btest\b")


def may_hold_tests(path: str) -> bool:
    """Whether `path` is a source file whose tests may live inside it."""
    return PurePosixPath(path).suffix in SUFFIXES


@cache
def _parser() -> Any | None:
    """A tree-sitter parser for Rust; None when the grammar is not installed."""
    try:
        tree_sitter = importlib.import_module("tree_sitter")
        rust = importlib.import_module("tree_sitter_rust")
    except ImportError:
        return None
    return tree_sitter.Parser(tree_sitter.Language(rust.language()))


def _spans(text: str) -> list[tuple[int, int]] | None:
    """The byte spans of the file's top-level test items (their attributes included), in
    order; None when the file cannot be read as Rust."""
    parser = _parser()
    if parser is None:
        return None
    data = text.encode("utf-8", "surrogatepass")
    root = parser.parse(data).root_node
    if root.has_error:
        return None
    spans: list[tuple[int, int]] = []
    start: int | None = None
    is_test = False
    for node in root.children:
        if node.type in ("line_comment", "block_comment"):
            continue
        if node.type == "inner_attribute_item":
            if _TEST_ATTRIBUTE.match(_text(data, node).replace("#![", "#[", 1)):
                return [(0, len(data))]  # #![cfg(test)]: the whole file is tests
            continue
        if node.type == "attribute_item":
            start = node.start_byte if start is None else start
            is_test = is_test or bool(_TEST_ATTRIBUTE.match(_text(data, node)))
            continue
        if is_test and start is not None:
            spans.append((start, node.end_byte))
        start, is_test = None, False
    return spans


def _text(data: bytes, node: Any) -> str:
    return " ".join(data[node.start_byte : node.end_byte].decode("utf-8", "replace").split())


def test_items(text: str | None) -> list[str] | None:
    """The texts of a source file's test items (None: absent, or not readable as Rust)."""
    if text is None:
        return None
    spans = _spans(text)
    if spans is None:
        return None
    data = text.encode("utf-8", "surrogatepass")
    return [data[start:end].decode("utf-8", "surrogatepass") for start, end in spans]


def tests_changed(before: str | None, after: str | None) -> bool:
    """Whether an edit from `before` to `after` changed the file's test items (an unreadable
    version counts as changed, unless the text is the same)."""
    if before == after:
        return False
    old, new = test_items(before), test_items(after)
    if before is None or after is None:
        return bool(old if after is None else new)
    return old is None or new is None or old != new


def with_tests_of(code: str, tests: str) -> str | None:
    """`code`'s file with its test items replaced by those of `tests` (the same file at
    another commit), appended at its end; None when either cannot be read as Rust."""
    spans, items = _spans(code), test_items(tests)
    if spans is None or items is None:
        return None
    data = code.encode("utf-8", "surrogatepass")
    kept = bytearray()
    position = 0
    for start, end in spans:
        kept += data[position:start]
        position = end
    kept += data[position:]
    body = kept.decode("utf-8", "surrogatepass").rstrip()
    return "\n\n".join([body, *items]).lstrip("\n") + "\n"
