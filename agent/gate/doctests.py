"""Doctests: the examples of Python docstrings, of doctest text files and of Rust doc comments,
as tests of the gate.

Where a repository's tests run doctests, a docstring's `>>>` examples and their expected output
are tests that live inside the source file (the fix is in the same file); so are the code blocks
of a Rust file's `///` and `//!` comments, which `cargo test` runs. These functions find the
examples of a file by their owner — the module, a class, a function, a `__test__` entry —
tell whether an edit changed or removed one (adding examples is not a change), and put one
version's docstrings into another version's Python code for the run of the original tests. Pure
functions on text; Python's own `ast` and `doctest` read it.
"""

from __future__ import annotations

import ast
import doctest
import re
from collections.abc import Iterator
from pathlib import PurePosixPath

from agent.retrieval.indexing.parsing import python_tree

Example = tuple[str, str]  # an example's source and its expected output
TEXT_SUFFIXES = frozenset({".txt", ".rst", ".rest", ".md", ".markdown", ".text", ".doctest"})
CODE_SUFFIXES = frozenset({".py", ".rs"})
_DOC = "__doc__"  # a docstring changed at run time (`f.__doc__ = …`) escapes the text
_BOM = "\ufeff"
_RUST_DOC = re.compile(r"^\s*//[/!](?!/) ?(.*)$")  # `/// text`, `//! text`; `////` is no doc
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")
_QUOTES = re.compile("\"\"\"|'''")  # where a string literal ends


def may_hold_doctests(path: str) -> bool:
    """Whether `path` is a file doctests are read from: Python or Rust source, a text file."""
    suffix = PurePosixPath(path).suffix.lower()
    return suffix in CODE_SUFFIXES or suffix in TEXT_SUFFIXES


def examples(path: str, text: str | None) -> dict[str, list[Example]] | None:
    """The file's examples by owner ("" for a module's docstring or a whole text file); None
    when absent, or Python that cannot be parsed."""
    if text is None:
        return None
    if path.endswith(".rs"):
        return {"": found} if (found := _rust_examples(text)) else {}
    if not path.endswith(".py"):
        return _owned({"": text})
    owners = _docstrings(text)
    if owners is None:
        return None
    return _owned({owner: value for owner, (_, value) in owners.items()})


def changed_examples(path: str, before: str | None, after: str | None) -> list[str]:
    """The owners whose existing examples an edit from `before` to `after` changed or removed
    ("" names the module or the file; a new file brings only new examples)."""
    if before is None or before == after:
        return []
    old, new = examples(path, before), examples(path, after)
    if old is None or new is None:  # unreadable: the file's examples in order, as one owner
        old = {"": _raw(before)} if _raw(before) else {}
        new = {"": _raw(after or "")}
    changed = [owner for owner, kept in old.items() if not _kept(kept, new.get(owner, []))]
    if path.endswith(".py") and after is not None and _doc_refs(after) > _doc_refs(before):
        changed.append(_DOC)
    return changed


def with_examples_of(path: str, code: str, tests: str) -> str | None:
    """`code`'s file with the docstrings that hold examples in `tests` (the same file at
    another commit) as `tests` has them, wherever their owner is still defined; a text file is
    all examples, so `tests` itself. The examples of an owner that `code` no longer defines
    (a function removed with its doctests) cannot run against it: they stay out, the code's
    other changes stay in, and the run that takes this file sees those tests gone. None when
    it cannot be had exactly: a file is unreadable, `code` changes docstrings at run time, or
    it is Rust (whose doc comments are not put back)."""
    if path.endswith(".rs"):
        return None
    if not path.endswith(".py"):
        return tests
    new, old = _docstrings(code), _docstrings(tests)
    if new is None or old is None:
        return None
    wanted = {owner for owner, found in (examples(path, tests) or {}).items() if found}
    gone = wanted - new.keys()
    data, source = code.encode("utf-8", "surrogatepass"), tests.encode("utf-8", "surrogatepass")
    spans = sorted(((new[owner][0], old[owner][0]) for owner in wanted - gone), reverse=True)
    for (start, end), (old_start, old_end) in spans:
        data = data[:start] + source[old_start:old_end] + data[end:]
    spliced = data.decode("utf-8", "surrogatepass")
    return None if set(changed_examples(path, tests, spliced)) - gone else spliced


def _owned(texts: dict[str, str]) -> dict[str, list[Example]]:
    """The examples of each text, for the owners that have any."""
    found = {owner: _parse(text) for owner, text in texts.items()}
    return {owner: found_examples for owner, found_examples in found.items() if found_examples}


def _parse(text: str) -> list[Example]:
    """A docstring's examples, as doctest reads them (_raw where doctest refuses the layout)."""
    try:
        return [(e.source, e.want) for e in doctest.DocTestParser().get_examples(text)]
    except ValueError:
        return _raw(text)


def _raw(text: str) -> list[Example]:
    """The examples of any text by its lines: a `>>>` line and its `...` lines, then the lines
    up to a blank one, a prompt or the end of a string literal."""
    found: list[tuple[list[str], list[str]]] = []
    open_ = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(">>>"):
            found.append(([stripped], []))
            open_ = True
        elif open_ and stripped.startswith("...") and not found[-1][1]:
            found[-1][0].append(stripped)
        elif open_ and stripped and not _QUOTES.search(stripped):
            found[-1][1].append(stripped)
        else:
            open_ = False
    return [("\n".join(source), "\n".join(want)) for source, want in found]


def _rust_examples(text: str) -> list[Example]:
    """The fenced code blocks of a Rust file's `///` and `//!` comments, its doc-tests: their
    info string (`ignore` switches one off) and their code."""
    found: list[Example] = []
    fence: str | None = None
    info = ""
    body: list[str] = []
    for line in text.splitlines():
        match = _RUST_DOC.match(line)
        content = match.group(1) if match else None
        if fence is None:
            if content is not None and (opened := _FENCE.match(content)):
                fence, info, body = opened.group(1), opened.group(2).strip(), []
        elif content is None or content.strip().startswith(fence):  # the block ends
            found.append((info, "\n".join(body)))
            fence = None
        else:
            body.append(content)
    return found


def _kept(old: list[Example], new: list[Example]) -> bool:
    """Whether every example of `old` is still in `new`, in order (new ones may come between)."""
    remaining = iter(new)
    return all(example in remaining for example in old)


Span = tuple[int, int]  # byte offsets of a string literal in the file


def _docstrings(text: str) -> dict[str, tuple[Span, str]] | None:
    """Each docstring of a Python file by owner: its literal's span and its value; None when
    the file cannot be parsed."""
    tree = parse_python(text)
    if tree is None:
        return None
    bom = len(_BOM.encode()) if text.startswith(_BOM) else 0  # before ast's first column
    body = text.removeprefix(_BOM).encode("utf-8", "surrogatepass")
    starts = [bom + start for start in _line_starts(body)]
    found: dict[str, tuple[Span, str]] = {}
    for owner, node in _owners(tree, ""):
        name, number = owner, 2
        while name in found:  # a name defined twice (a property's setter, an `if` branch)
            name, number = f"{owner}#{number}", number + 1
        assert node.end_lineno is not None and node.end_col_offset is not None
        span = (
            starts[node.lineno - 1] + node.col_offset,
            starts[node.end_lineno - 1] + node.end_col_offset,
        )
        found[name] = (span, str(node.value))
    return found


def _owners(node: ast.AST, prefix: str) -> Iterator[tuple[str, ast.Constant]]:
    """The docstring literals under `node` by qualified owner, and `__test__` entries."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{prefix}{child.name}"
            docstring = _docstring(child)
            if docstring is not None:
                yield name, docstring
            yield from _owners(child, name + ".")
        elif isinstance(child, ast.stmt):
            yield from _test_entries(child)
            yield from _owners(child, prefix)
    if isinstance(node, ast.Module) and (docstring := _docstring(node)) is not None:
        yield "", docstring


def _docstring(
    node: ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef,
) -> ast.Constant | None:
    first = node.body[0] if node.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return first.value
    return None


def _test_entries(statement: ast.stmt) -> Iterator[tuple[str, ast.Constant]]:
    """A `__test__ = {"name": "…examples…"}` assignment's entries, which doctest also runs."""
    if not (
        isinstance(statement, ast.Assign)
        and isinstance(statement.value, ast.Dict)
        and any(isinstance(t, ast.Name) and t.id == "__test__" for t in statement.targets)
    ):
        return
    for key, value in zip(statement.value.keys, statement.value.values, strict=True):
        if (
            isinstance(key, ast.Constant)
            and isinstance(key.value, str)
            and isinstance(value, ast.Constant)
            and isinstance(value.value, str)
        ):
            yield f"__test__.{key.value}", value


def _line_starts(data: bytes) -> list[int]:
    """The byte offset where each line starts (ast's columns count UTF-8 bytes)."""
    starts = [0]
    for match in re.finditer(rb"\r\n|\r|\n", data):
        starts.append(match.end())
    return starts


def parse_python(text: str) -> ast.Module | None:
    """The syntax tree of a Python file (a byte-order mark aside); None when it has none."""
    return python_tree(text.removeprefix(_BOM))


def _doc_refs(text: str) -> int:
    """How often the code names `__doc__` (comments and docstrings aside, where readable)."""
    tree = parse_python(text)
    if tree is None:
        return text.count(_DOC)
    return sum(
        1
        for node in ast.walk(tree)
        if (isinstance(node, ast.Name) and node.id == _DOC)
        or (isinstance(node, ast.Attribute) and node.attr == _DOC)
        or (isinstance(node, ast.Constant) and node.value == _DOC)
    )
