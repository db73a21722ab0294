"""Definitions in non-Python files through tree-sitter grammar wheels (the `treesitter` extra).

Each grammar ships inside its own PyPI wheel, so nothing is downloaded at run time; without the
extra (or for a language without a grammar here) `definitions` returns None and the file is
indexed as text. The definition queries are ours: only `@definition.KIND` and `@name` captures.
"""

from __future__ import annotations

import functools
import importlib
import re
from dataclasses import dataclass
from typing import Any

from agent.retrieval.indexing.symbols import Symbol, first_line

_JS = """
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(class_declaration name: (_) @name) @definition.class
(method_definition name: (_) @name) @definition.method
(lexical_declaration (variable_declarator name: (identifier) @name
  value: [(arrow_function) (function_expression)])) @definition.function
(variable_declaration (variable_declarator name: (identifier) @name
  value: [(arrow_function) (function_expression)])) @definition.function
"""
_TS = (
    _JS
    + """
(abstract_class_declaration name: (_) @name) @definition.class
(interface_declaration name: (_) @name) @definition.interface
(type_alias_declaration name: (_) @name) @definition.type
(enum_declaration name: (_) @name) @definition.type
"""
)
_C = """
(function_definition declarator: (function_declarator declarator: (identifier) @name))
  @definition.function
(function_definition declarator: (pointer_declarator
  declarator: (function_declarator declarator: (identifier) @name))) @definition.function
(struct_specifier name: (type_identifier) @name body: (_)) @definition.class
(enum_specifier name: (type_identifier) @name body: (_)) @definition.type
(type_definition declarator: (type_identifier) @name) @definition.type
"""
QUERIES: dict[str, str] = {
    "javascript": _JS,
    "typescript": _TS,
    "tsx": _TS,
    "go": """
(function_declaration name: (identifier) @name) @definition.function
(method_declaration name: (field_identifier) @name) @definition.method
(type_declaration (type_spec name: (type_identifier) @name)) @definition.type
""",
    "rust": """
(function_item name: (identifier) @name) @definition.function
(struct_item name: (type_identifier) @name) @definition.class
(enum_item name: (type_identifier) @name) @definition.class
(trait_item name: (type_identifier) @name) @definition.interface
(impl_item type: (_) @name) @definition.impl
(mod_item name: (identifier) @name) @definition.module
(macro_definition name: (identifier) @name) @definition.macro
""",
    "java": """
(class_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.class
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method
""",
    "ruby": """
(class name: (_) @name) @definition.class
(module name: (_) @name) @definition.module
(method name: (_) @name) @definition.method
(singleton_method name: (_) @name) @definition.method
""",
    "c": _C,
    "cpp": _C
    + """
(function_definition declarator: (function_declarator
  declarator: [(field_identifier) (qualified_identifier) (destructor_name)] @name))
  @definition.function
(class_specifier name: (type_identifier) @name body: (_)) @definition.class
(namespace_definition name: (_) @name) @definition.namespace
""",
}
_MODULES: dict[str, tuple[str, str]] = {
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
}
_CONTAINERS = frozenset({"class", "interface", "impl", "module", "namespace"})
_COMMENT_MARKS = re.compile(r"^\s*(?://+|/\*+|\*+/?|#+)\s?|\s*\*+/\s*$")


@dataclass(frozen=True)
class _Grammar:
    """A loaded grammar and its compiled definition query."""

    language: Any
    query: Any


@functools.cache
def _grammar(language: str) -> _Grammar | None:
    """The grammar of `language`, or None when tree-sitter or its grammar wheel is missing."""
    if language not in _MODULES:
        return None
    module_name, attribute = _MODULES[language]
    try:
        tree_sitter = importlib.import_module("tree_sitter")
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    lang = tree_sitter.Language(getattr(module, attribute)())
    return _Grammar(language=lang, query=tree_sitter.Query(lang, QUERIES[language]))


def available() -> list[str]:
    """The languages whose grammars are installed."""
    return [name for name in _MODULES if _grammar(name) is not None]


def definitions(language: str, text: str) -> tuple[list[Symbol], bool] | None:
    """The definitions in `text` and whether the tree has errors; None without a grammar."""
    grammar = _grammar(language)
    if grammar is None:
        return None
    tree_sitter = importlib.import_module("tree_sitter")
    tree = tree_sitter.Parser(grammar.language).parse(text.encode("utf-8", "surrogatepass"))
    cursor = tree_sitter.QueryCursor(grammar.query)
    found: dict[tuple[int, int], tuple[Any, Any, str]] = {}
    for _, captures in cursor.matches(tree.root_node):
        node_key = next((k for k in captures if k.startswith("definition.")), None)
        if node_key is None or "name" not in captures:
            continue
        node = captures[node_key][0]
        found.setdefault(
            (node.start_byte, -node.end_byte),
            (node, captures["name"][0], node_key.split(".", 1)[1]),
        )
    lines = text.splitlines()
    return _nest([found[k] for k in sorted(found)], lines), bool(tree.root_node.has_error)


def _nest(nodes: list[tuple[Any, Any, str]], lines: list[str]) -> list[Symbol]:
    """Symbols with parents by containment; definitions inside function bodies are dropped."""
    symbols: list[Symbol] = []
    stack: list[tuple[Any, Symbol]] = []
    for node, name_node, kind in nodes:
        while stack and stack[-1][0].end_byte <= node.start_byte:
            stack.pop()
        parent = stack[-1][1] if stack else None
        if parent is not None and parent.kind not in _CONTAINERS:
            continue
        symbol = _symbol(node, name_node, kind, parent, lines)
        symbols.append(symbol)
        stack.append((node, symbol))
    return symbols


def _symbol(
    node: Any, name_node: Any, kind: str, parent: Symbol | None, lines: list[str]
) -> Symbol:
    """One definition node as a Symbol."""
    name = _text(name_node)
    owner = parent.qualname if parent else _receiver(node)
    if kind == "function" and (owner is not None or node.type == "method_definition"):
        kind = "method"
    start, end = node.start_point.row + 1, _end_line(node)
    header_end = _header_end(node, start)
    signature = re.sub(r"\s+", " ", " ".join(x.strip() for x in lines[start - 1 : header_end]))
    return Symbol(
        name=name,
        qualname=f"{owner}.{name}" if owner else name,
        kind=kind,
        start=start,
        end=end,
        header_end=min(header_end, end),
        signature=signature[:240],
        doc=_leading_comment(node),
        parent=parent.qualname if parent else None,
    )


def _text(node: Any) -> str:
    """A node's source text."""
    return bytes(node.text or b"").decode("utf-8", "replace")


def _receiver(node: Any) -> str | None:
    """The receiver type of a Go method (`func (s *Server) Health`), else None."""
    receiver = node.child_by_field_name("receiver") if node.type == "method_declaration" else None
    if receiver is None:
        return None
    found = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", _text(receiver))
    return found[-1] if found else None


def _end_line(node: Any) -> int:
    """The last line of a node (a node ending at column 0 ends on the line before)."""
    row, column = int(node.end_point.row), int(node.end_point.column)
    return max(int(node.start_point.row) + 1, row if column == 0 else row + 1)


def _header_end(node: Any, start: int) -> int:
    """The last line of a definition's signature: the line of its body's `{`, else its first."""
    body = node.child_by_field_name("body")
    if body is None:
        for child in node.named_children:
            value = child.child_by_field_name("value")
            body = value.child_by_field_name("body") if value is not None else None
            if body is not None:
                break
    if body is None or not _text(body).startswith("{"):
        return start  # no body, or one without braces (Ruby): the signature is one line
    return int(body.start_point.row) + 1


def _leading_comment(node: Any) -> str:
    """The first line of a comment right above the definition (or its export statement)."""
    anchor = (
        node.parent if node.parent is not None and node.parent.type.startswith("export") else node
    )
    comment = anchor.prev_named_sibling
    if comment is None or "comment" not in comment.type:
        return ""
    if comment.end_point.row + 1 < anchor.start_point.row:
        return ""
    return first_line(
        "\n".join(_COMMENT_MARKS.sub("", line) for line in _text(comment).splitlines())
    )
