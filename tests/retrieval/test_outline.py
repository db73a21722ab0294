"""Outlines keep exact lines of what they show and mark what they leave out."""

from __future__ import annotations

import pytest

from agent.llm.budget import estimate_tokens
from agent.retrieval.indexing.parsing import parse_source
from agent.retrieval.outline import MARK, render_outline, truncate
from agent.retrieval.packing import Entry, pack
from tests.retrieval.conftest import CART_PY
from tests.retrieval.test_parsing import DATA_MODULE, GO_SOURCE


def outline(source: str, path: str = "m.py", default: str = "signature", **details: str) -> str:
    parsed = parse_source(path, source)
    chosen = {k.replace("__", "."): v for k, v in details.items()}
    return render_outline(source, parsed.symbols, chosen, default)  # type: ignore[arg-type]


def test_chosen_body_is_exact_and_the_rest_are_signatures() -> None:
    text = outline(CART_PY, Cart__total="full")
    assert "from shop.pricing import apply_discount, tax_rate" in text
    assert (
        "    def add_item(self, sku: str, quantity: int = 1) -> None:\n"
        '        """Put `quantity` of `sku` in the cart."""\n'
        f"        {MARK}\n" in text
    )
    body_start = CART_PY.index("    def total")
    assert CART_PY[body_start:].rstrip("\n") in text
    assert "self.items[sku] = self.items.get(sku, 0) + quantity" not in text


def test_omitted_definitions_collapse_into_one_marker() -> None:
    text = outline(CART_PY, default="omitted", Cart="signature", Cart__total="full")
    assert text.count(MARK) == 1
    assert "def add_item" not in text and "def remove_item" not in text
    assert "class Cart:" in text and "def total" in text


def test_an_omitted_class_with_a_shown_method_keeps_its_header() -> None:
    text = outline(CART_PY, default="omitted", Cart__add_item="full")
    assert "class Cart:" in text
    assert "self.items[sku] = self.items.get(sku, 0) + quantity" in text


def test_go_outline_shows_signatures() -> None:
    pytest.importorskip("tree_sitter_go")
    text = outline(GO_SOURCE, "health.go")
    assert "func (s *Server) Health() bool {\n\t" + MARK in text
    assert "func NewServer() *Server {\n\t" + MARK in text
    assert "return s.ready" not in text and "return &Server{}" not in text


def test_a_full_body_keeps_the_lines_bordering_it_as_a_diff_context_does() -> None:
    def function(name: str) -> str:
        return f"def {name}(x):\n" + "".join(f"    x = x + {n}  # {name}\n" for n in range(8))

    source = "\n".join(function(name) for name in ("before", "chosen", "after"))
    text = outline(source, chosen="full")
    # three lines each side: before's last two and the blank line; the blank line, after's
    # header and its first line
    assert (
        f"    {MARK}\n    x = x + 6  # before\n    x = x + 7  # before\n\n{function('chosen')}"
        f"\ndef after(x):\n    x = x + 0  # after\n    {MARK}" in text
    )
    assert "x = x + 5  # before" not in text and "x = x + 1  # after" not in text
    plain = render_outline(
        source, parse_source("m.py", source).symbols, {"chosen": "full"}, borders=False
    )
    assert "# before" not in plain and "# after" not in plain and function("chosen") in plain


def test_truncate_says_how_many_lines_it_left_out() -> None:
    text = "\n".join(f"line {n}" for n in range(1, 101))
    cut = truncate(text, 80)
    assert cut is not None and cut.endswith(f"{MARK} lines 9-100 not shown")
    assert len(cut) <= 80
    assert truncate(text, 10) is None


def test_a_data_module_folds_its_tables_and_shows_a_chosen_one_whole() -> None:
    parsed = parse_source("keywords.py", DATA_MODULE)
    folded = render_outline(DATA_MODULE, parsed.symbols, {})
    assert "KEYWORDS = {\n    " + MARK in folded and "'DIV'" not in folded
    assert "FLAGS = re.IGNORECASE" in folded  # short module-level code stays
    chosen = render_outline(DATA_MODULE, parsed.symbols, {"KEYWORDS": "full"})
    assert "    'DIV': 'Operator',\n    'MOD': 'Operator',\n}" in chosen


def test_a_file_too_long_for_its_outline_is_shown_by_its_headlines() -> None:
    members = "".join(
        f"    def method_{n}(self, value: int) -> int:\n"
        f'        """Method {n}."""\n        return value + {n}\n\n'
        for n in range(40)
    )
    text = f'"""Many methods."""\n\n\nclass Big:\n    """A big class."""\n\n{members}'
    text += "\n\ndef helper() -> None:\n    pass\n"
    entry = Entry(
        path="big.py",
        text=text,
        symbols=parse_source("big.py", text).symbols,
        reason="rank: search",
    )
    signatures = render_outline(text, entry.symbols, {})
    room = estimate_tokens(signatures) // 2
    [file], dropped = pack([entry], room + 40, whole_file_tokens=100, seed_symbols=[])
    assert dropped == [] and file.detail == "outline"
    assert file.content.startswith('"""Many methods."""')
    assert 'class Big:\n    """A big class."""\n    ' + MARK in file.content
    assert "def helper() -> None:\n    " + MARK in file.content
    assert "method_0" not in file.content
    assert file.symbols["Big.method_0"] == "omitted" and file.symbols["Big"] == "signature"


def test_a_named_class_too_large_to_show_is_shown_by_its_named_member() -> None:
    members = "".join(
        f"    def method_{n}(self, value: int) -> int:\n        return value + {n}\n\n"
        for n in range(60)
    )
    text = f"class Big:\n{members}\n\ndef other() -> None:\n    pass\n"
    entry = Entry(
        path="big.py",
        text=text,
        symbols=parse_source("big.py", text).symbols,
        reason="seed: defines Big",
    )
    room = estimate_tokens(text) // 3
    [file], dropped = pack([entry], room, whole_file_tokens=100, seed_symbols=["Big", "method_7"])
    assert dropped == []
    assert "    def method_7(self, value: int) -> int:\n        return value + 7" in file.content
    assert file.content.startswith("class Big:") and "method_9" not in file.content


def _jsdoc_method(name: str, body: str) -> str:
    """A method as commander writes one: a long JSDoc, a blank line, then the method."""
    return (
        "  /**\n"
        f"   * {name}: what it does.\n"
        "   *\n"
        "   * @example\n"
        f"   * program.{name}('a');\n"
        f"   * program.{name}('b');\n"
        "   *\n"
        "   * @param {string} value\n"
        "   * @return {Command}\n"
        "   */\n"
        "\n"
        f"  {name}(value) {{\n"
        f"    {body}\n"
        "    return this;\n"
        "  }\n"
    )


JSDOC_CLASS = (
    "class Command {\n"
    + "\n".join(_jsdoc_method(n, f"this._{n} = value; // {n}") for n in ("alias", "usage", "parse"))
    + "}\n\nmodule.exports = { Command };\n"
)


def test_a_comment_above_a_definition_goes_with_it() -> None:
    pytest.importorskip("tree_sitter_javascript")
    usage = _jsdoc_method("usage", "this._usage = value; // usage").rstrip("\n")
    skeleton = outline(JSDOC_CLASS, "lib/command.js", default="omitted", Command__usage="full")
    assert usage in skeleton  # shown full: its comment with it
    assert skeleton.count("@example") == 1  # the comments of those left out, left out
    assert "program.alias" not in skeleton and "program.parse" not in skeleton

    signatures = outline(JSDOC_CLASS, "lib/command.js")
    assert "   * alias: what it does.\n" in signatures  # a long comment's first lines
    assert "* @return {Command}" not in signatures  # … and a marker for the rest
    assert f"   {MARK}\n  alias(value) {{\n    {MARK}" in signatures
