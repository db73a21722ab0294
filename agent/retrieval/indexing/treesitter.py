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

from agent.retrieval.indexing.symbols import CONTAINER_KINDS, Symbol, first_line

_FN = "[(function_expression) (arrow_function) (generator_function)]"
_KEY = "[(property_identifier) @name (string (string_fragment) @name)]"
# The forms JavaScript modules define things in beside declarations: values assigned to a
# member at the top level (`module.exports = …`, `exports.x = …`, `Foo.prototype.x = …`),
# default exports without a name, objects of functions (`const api = { parse() {…} }`, their
# pairs nested) and class fields holding functions. Anonymous ones are named by `_name`.
_JS_COMMON = f"""
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(class_declaration name: (_) @name) @definition.class
(method_definition name: (_) @name) @definition.method
(lexical_declaration (variable_declarator name: (identifier) @name
  value: [(arrow_function) (function_expression)])) @definition.function
(variable_declaration (variable_declarator name: (identifier) @name
  value: [(arrow_function) (function_expression)])) @definition.function
(lexical_declaration (variable_declarator name: (identifier) @name value: (class)))
  @definition.class
(variable_declaration (variable_declarator name: (identifier) @name value: (class)))
  @definition.class
(lexical_declaration (variable_declarator name: (identifier) @name value: (object)))
  @definition.object
(variable_declaration (variable_declarator name: (identifier) @name value: (object)))
  @definition.object
(program (expression_statement (assignment_expression
  left: (member_expression property: (property_identifier) @name) right: {_FN}))
  @definition.function)
(program (expression_statement (assignment_expression
  left: (member_expression property: (property_identifier) @name) right: (class)))
  @definition.class)
(program (expression_statement (assignment_expression
  left: (member_expression property: (property_identifier) @name) right: (object)))
  @definition.object)
(export_statement value: {_FN}) @definition.function
(export_statement value: (class)) @definition.class
(export_statement value: (object)) @definition.object
(pair key: {_KEY} value: {_FN}) @definition.function
(pair key: {_KEY} value: (class)) @definition.class
(pair key: {_KEY} value: (object)) @definition.object
"""
_FIELD = f"[(property_identifier) (private_property_identifier)] @name value: {_FN}"
_JS = _JS_COMMON + f"(field_definition property: {_FIELD}) @definition.method\n"
_TS = (
    _JS_COMMON
    + f"(public_field_definition name: {_FIELD}) @definition.method\n"
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


def definitions(
    language: str, text: str, anonymous: str = "default"
) -> tuple[list[Symbol], bool] | None:
    """The definitions in `text` and whether the tree has errors; None without a grammar.
    `anonymous` names a definition the source leaves unnamed (`module.exports = function () …`,
    `export default () => …`): the file's module name, as `parsing.module_name` gives it."""
    grammar = _grammar(language)
    if grammar is None:
        return None
    tree_sitter = importlib.import_module("tree_sitter")
    tree = tree_sitter.Parser(grammar.language).parse(text.encode("utf-8", "surrogatepass"))
    cursor = tree_sitter.QueryCursor(grammar.query)
    found: dict[tuple[int, int], tuple[Any, Any, str]] = {}
    for _, captures in cursor.matches(tree.root_node):
        node_key = next((k for k in captures if k.startswith("definition.")), None)
        if node_key is None or ("name" not in captures and not _unnamed(captures[node_key][0])):
            continue
        node = captures[node_key][0]
        found.setdefault(
            (node.start_byte, -node.end_byte),
            (node, captures.get("name", [None])[0], node_key.split(".", 1)[1]),
        )
    named = _Names(text.splitlines(), anonymous)
    symbols = _without_empty_objects(_nest([found[k] for k in sorted(found)], named))
    return symbols, bool(tree.root_node.has_error)


@dataclass(frozen=True)
class _Names:
    """What naming a definition needs beside its node: the file's lines and its module name."""

    lines: list[str]
    anonymous: str


def _unnamed(node: Any) -> bool:
    """A definition the source gives no name: a default export's value."""
    return bool(node.type == "export_statement")


def _nest(nodes: list[tuple[Any, Any, str]], names: _Names) -> list[Symbol]:
    """Symbols with parents by containment; definitions inside function bodies are dropped, and
    an object's member (`key: () => …`) outside an object that is a definition is too."""
    symbols: list[Symbol] = []
    stack: list[tuple[Any, Symbol]] = []
    for node, name_node, kind in nodes:
        while stack and stack[-1][0].end_byte <= node.start_byte:
            stack.pop()
        parent = stack[-1][1] if stack else None
        if parent is not None and parent.kind not in CONTAINER_KINDS:
            continue
        if node.type == "pair" and (parent is None or parent.kind != "object"):
            continue
        symbol = _symbol(node, name_node, kind, parent, names)
        symbols.append(symbol)
        stack.append((node, symbol))
    return symbols


def _without_empty_objects(symbols: list[Symbol]) -> list[Symbol]:
    """The symbols without the objects holding no function (data, not definitions)."""
    kept: list[Symbol] = []
    parents: set[str] = set()
    for symbol in reversed(symbols):  # members follow their object
        if symbol.kind == "object" and symbol.qualname not in parents:
            continue
        kept.append(symbol)
        if symbol.parent is not None:
            parents.add(symbol.parent)
    return kept[::-1]


def _symbol(node: Any, name_node: Any, kind: str, parent: Symbol | None, names: _Names) -> Symbol:
    """One definition node as a Symbol."""
    name, receiver = _name_and_owner(node, name_node, names.anonymous)
    owner = parent.qualname if parent else receiver
    if kind == "function" and (owner is not None or node.type == "method_definition"):
        kind = "method"
    start, end = node.start_point.row + 1, _end_line(node)
    header_end = _header_end(node, start)
    lines = names.lines[start - 1 : header_end]
    signature = re.sub(r"\s+", " ", " ".join(x.strip() for x in lines))
    comments = _comments_above(node)
    return Symbol(
        name=name,
        qualname=f"{owner}.{name}" if owner else name,
        kind=kind,
        start=start,
        end=end,
        header_end=min(header_end, end),
        signature=signature[:240],
        doc=_comment_doc(comments),
        parent=parent.qualname if parent else None,
        doc_start=int(comments[-1].start_point.row) + 1 if comments else 0,
    )


def _name_and_owner(node: Any, name_node: Any, anonymous: str) -> tuple[str, str | None]:
    """A definition's name and, outside a containing definition, the name it is a member of:
    a Go method's receiver type (`func (s *Server) Health`), the object a JavaScript value is
    assigned to (`Router.prototype.route = …` → `Router`; `exports.parse = …` → none). What
    `module.exports` or `export default` holds is named by its own name (`function parse`)
    or, having none, by `anonymous`."""
    if node.type == "method_declaration":
        return _text(name_node), _receiver(node)
    if node.type == "export_statement":
        return _own_name(node.child_by_field_name("value"), anonymous), None
    if node.type != "expression_statement":
        return _text(name_node), None
    assignment = node.named_children[0]
    target = re.sub(r"\s+", "", _text(assignment.child_by_field_name("left")))
    if target == "module.exports":
        return _own_name(assignment.child_by_field_name("right"), anonymous), None
    parts = target.split(".")[:-1]
    if parts[:2] == ["module", "exports"] or parts[:1] == ["exports"]:
        parts = parts[2:] if parts[0] == "module" else parts[1:]
    return _text(name_node), ".".join(p for p in parts if p != "prototype") or None


def _own_name(value: Any, anonymous: str) -> str:
    """The name a function or class expression gives itself, else `anonymous`."""
    name = value.child_by_field_name("name") if value is not None else None
    return _text(name) if name is not None else anonymous


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
    body = _body(node)
    if body is None or not _text(body).startswith("{"):
        return start  # no body, or one without braces (Ruby): the signature is one line
    return int(body.start_point.row) + 1


def _body(node: Any) -> Any:
    """A definition's body: its own, or that of the value it declares or assigns (`const f =
    () => {…}`, `module.exports = function () {…}`, `key: () => {…}`); an object its braces."""
    for candidate in (node, *node.named_children):
        body = candidate.child_by_field_name("body")
        if body is not None:
            return body
        value = candidate.child_by_field_name("value") or candidate.child_by_field_name("right")
        if value is not None and value.type == "object":
            return value
        if value is not None and value.child_by_field_name("body") is not None:
            return value.child_by_field_name("body")
    return None


def _comment_doc(comments: list[Any]) -> str:
    """The first line of the comments right above a definition (`_comments_above`)."""
    if not comments:
        return ""
    return first_line(
        "\n".join(_COMMENT_MARKS.sub("", line) for line in _text(comments[-1]).splitlines())
    )


def _comments_above(node: Any) -> list[Any]:
    """The comment nodes right above a definition (or its export statement), nearest first,
    with nothing but blank lines between them: a JSDoc block (commander leaves a blank line
    under each), a run of `//` lines."""
    anchor = (
        node.parent if node.parent is not None and node.parent.type.startswith("export") else node
    )
    found: list[Any] = []
    below = anchor
    while (comment := below.prev_sibling) is not None and "comment" in comment.type:
        if _shares_line(comment):
            break
        found.append(comment)
        below = comment
    return found


def _shares_line(comment: Any) -> bool:
    """Whether a comment ends a line that holds code before it (`x = 1; // note`)."""
    before = comment.prev_sibling
    return before is not None and before.end_point.row == comment.start_point.row
