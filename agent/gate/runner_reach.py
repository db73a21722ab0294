"""Code outside the tests that reaches into the test runner: the references a Python file makes
to pytest, its internals (`_pytest`), its plugin system (`pluggy`), its hooks and plugin lists,
and to the runners of doctests and of unittest.

The package under test runs inside the test run: imported by the tests, its code can monkeypatch
pytest's reports or doctest's output checker, declare `pytest_plugins`, define `pytest_*` hooks,
or set PYTEST_ variables. Such code is test configuration in disguise, so the gate takes an edit
that adds a new reference of this kind to a file that is not a test as a change to the gate. A
reference the file already made (a pytest plugin's own `pytest.fail`) is not new. Names and
string literals are read; a name computed at run time ("py" + "test") is not. Pure functions on
text.
"""

from __future__ import annotations

import ast
import re

from agent.gate.doctests import parse_python

# pytest, _pytest, pytest_plugins, pytest_configure, PYTEST_ADDOPTS, pytest11, pluggy, doctest,
# xdoctest, unittest
_NAME = re.compile(r"^(?:_?py_?test|pluggy|x?doctest|unittest)", re.IGNORECASE)
_MENTION = re.compile(r"py_?test|pluggy|doctest|unittest", re.IGNORECASE)
_SHOWN = 60  # characters of a string literal a reference shows


def new_references(before: str | None, after: str | None) -> list[str]:
    """The references to the test runner that `after` makes and `before` (None: absent) did
    not."""
    if after is None:
        return []
    old, new = references(before or ""), references(after)
    if old is None or new is None:  # unreadable: compared line by line
        old, new = _mentioning_lines(before or ""), _mentioning_lines(after)
    return sorted(new - old)


def references(text: str) -> set[str] | None:
    """What a Python file names of the test runner: imports, dotted names, hook definitions
    and string literals (docstrings and comments aside); None when it cannot be parsed."""
    tree = parse_python(text)
    if tree is None:
        return None
    docstrings = _docstring_ids(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) not in docstrings:
            found.update(_of_node(node))
    return found


def _of_node(node: ast.AST) -> list[str]:
    """The references one node makes."""
    if isinstance(node, ast.Import):
        return [f"import {alias.name}" for alias in node.names if _names_pytest(alias.name)]
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        return [
            f"from {module} import {alias.name}"
            for alias in node.names
            if _names_pytest(module) or _names_pytest(alias.name)
        ]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [f"def {node.name}"] if _NAME.match(node.name) else []
    if isinstance(node, ast.Name):
        return [node.id] if _NAME.match(node.id) else []
    if isinstance(node, ast.Attribute):
        dotted = _dotted(node)
        return [dotted] if _NAME.match(node.attr) or _NAME.match(dotted) else []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [repr(node.value[:_SHOWN])] if _MENTION.search(node.value) else []
    return []


def _names_pytest(module: str) -> bool:
    return any(_NAME.match(part) for part in module.split("."))


def _dotted(node: ast.Attribute) -> str:
    """`a.b.c` for an attribute chain on a name; `….c` when it starts elsewhere (a call)."""
    parts = [node.attr]
    value = node.value
    while isinstance(value, ast.Attribute):
        parts.append(value.attr)
        value = value.value
    parts.append(value.id if isinstance(value, ast.Name) else "…")
    return ".".join(reversed(parts))


def _docstring_ids(tree: ast.Module) -> set[int]:
    """The docstring literals of the module, its classes and functions: prose, not code."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _mentioning_lines(text: str) -> set[str]:
    return {line.strip() for line in text.splitlines() if _MENTION.search(line)}
