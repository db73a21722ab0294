"""What one source file holds: its language, symbols and imports (Python via `ast`)."""

from __future__ import annotations

import ast
import functools
import re
import threading
import warnings
from pathlib import PurePosixPath
from typing import cast

from agent.retrieval.indexing import treesitter
from agent.retrieval.indexing.snapshots import recorded_test_file, snapshot_entries
from agent.retrieval.indexing.symbols import ImportRef, ParsedFile, ParseStatus, Symbol, first_line

LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".rb": "ruby",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".md": "markdown",
    ".rst": "rst",
    ".txt": "text",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".json": "json",
    ".cfg": "ini",
    ".ini": "ini",
    ".sh": "shell",
    ".html": "html",
    ".css": "css",
    ".sql": "sql",
}
CODE_LANGUAGES = frozenset(
    {"python", "javascript", "typescript", "tsx", "go", "rust", "java", "ruby", "c", "cpp"}
)

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPACES = re.compile(r"\s+")
_WORD_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_JS_IMPORT = re.compile(
    r"""(?:\bfrom\s+|\brequire\(\s*|\bimport\s*\(?\s*)['"](\.{1,2}/[^'"]+)['"]"""
)


def language_of(path: str) -> str:
    """The language name of `path` from its extension, or "text"."""
    return LANGUAGES.get(PurePosixPath(path).suffix.lower(), "text")


def module_name(path: str) -> str:
    """The name a file's module goes by, which names what it exports without a name of its own
    (`module.exports = function () …`): its file name before the first dot (`lib/parse.js` →
    `parse`); an `index` file goes by its folder's name; "default" when there is none."""
    posix = PurePosixPath(path)
    stem = posix.name.split(".", 1)[0]
    if stem == "index":
        stem = posix.parent.name
    return stem or "default"


@functools.lru_cache(maxsize=65536)
def _split(name: str) -> tuple[str, ...]:
    """The cached parts of one identifier (names repeat a lot across a repository)."""
    return tuple(part.lower() for chunk in name.split("_") for part in _WORD_PARTS.findall(chunk))


def split_identifier(name: str) -> list[str]:
    """`parse_yesNo2` → ["parse", "yes", "no", "2"]: snake_case and camelCase parts, lower-cased."""
    return list(_split(name))


def terms(text: str) -> list[str]:
    """Search terms of `text`: identifier parts, plus each compound identifier joined."""
    out: list[str] = []
    for ident in _IDENT.findall(text):
        parts = _split(ident)
        out.extend(parts)
        if len(parts) > 1:
            out.append("".join(parts))
    return out


def parse_source(path: str, text: str) -> ParsedFile:
    """Symbols and imports of `text`; unknown languages and syntax errors come back as text.
    A snapshot file's symbols are its recorded entries, whatever its language."""
    language = language_of(path)
    if recorded_test_file(path) is not None:
        return ParsedFile(language=language, status="parsed", symbols=snapshot_entries(path, text))
    if language == "python":
        return parse_python(text)
    if language in ("javascript", "typescript", "tsx"):
        imports = [ImportRef(module=m) for m in dict.fromkeys(_JS_IMPORT.findall(text))]
    else:
        imports = []
    outcome = treesitter.definitions(language, text, module_name(path))
    if outcome is None:
        return ParsedFile(language=language, status="text", imports=imports)
    definitions, has_error = outcome
    symbols = list(definitions)
    status: ParseStatus = "syntax_error" if has_error and not symbols else "parsed"
    return ParsedFile(language=language, status=status, symbols=symbols, imports=imports)


# --- Python ----------------------------------------------------------------------------------


# One thread parses at a time: CPython 3.11 keeps the AST constructor's recursion depth per
# interpreter, so two threads parsing at once (a bench's runs, --jobs 2) can fail with
# "SystemError: AST constructor recursion depth mismatch" (CPython gh-106905), and the warnings
# filters set around a parse are the whole process's.
_PARSE_LOCK = threading.Lock()


def python_tree(text: str) -> ast.Module | None:
    """The syntax tree of Python source; None when it has none."""
    with _PARSE_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarning on odd escapes is not our concern
        try:
            return ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):
            return None


def parse_python(text: str) -> ParsedFile:
    """Module docstring, classes, functions, methods and long assignments (see
    LONG_ASSIGNMENT_LINES), and module-level imports of `text`."""
    tree = python_tree(text)
    if tree is None:
        return ParsedFile(language="python", status="syntax_error")
    collector = _PythonCollector(text.splitlines())
    collector.visit_body(tree.body, parent=None, in_class=False)
    return ParsedFile(
        language="python",
        status="parsed",
        doc=first_line(ast.get_docstring(tree)),
        symbols=collector.symbols,
        imports=collector.imports,
    )


_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
# A module's or class's assignment to one name spanning this many lines or more (a table of
# keywords, a list of patterns) is a definition of its own: an outline folds it to its first
# line, a question can ask for it, and its name is searched — otherwise a data module is all
# module-level code, shown whole or not at all.
LONG_ASSIGNMENT_LINES = 6


class _PythonCollector:
    """Collects definitions and imports, descending into classes and compound statements only."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.symbols: list[Symbol] = []
        self.imports: list[ImportRef] = []

    def visit_body(self, body: list[ast.stmt], *, parent: str | None, in_class: bool) -> None:
        """Visit the statements of a module, a class or a compound statement's blocks."""
        for node in body:
            if isinstance(node, _Def):
                self._definition(node, parent=parent, in_class=in_class)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                self._assignment(node, parent=parent)
            elif isinstance(node, ast.Import):
                self.imports.extend(ImportRef(module=a.name) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                names = tuple(a.name for a in node.names)
                self.imports.append(ImportRef(node.module or "", names, node.level))
            elif isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While):
                for block in ("body", "orelse", "finalbody"):
                    self.visit_body(getattr(node, block, []), parent=parent, in_class=in_class)
                for handler in getattr(node, "handlers", []):
                    self.visit_body(handler.body, parent=parent, in_class=in_class)

    def _definition(self, node: _Def, *, parent: str | None, in_class: bool) -> None:
        """Record one class or function; a class's body is visited for its methods."""
        qualname = f"{parent}.{node.name}" if parent else node.name
        is_class = isinstance(node, ast.ClassDef)
        kind = "class" if is_class else ("method" if in_class else "function")
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        first = node.body[0]
        header_end = max(node.lineno, first.lineno - 1)
        doc = ast.get_docstring(node)
        self.symbols.append(
            Symbol(
                name=node.name,
                qualname=qualname,
                kind=kind,
                start=start,
                end=node.end_lineno or node.lineno,
                header_end=header_end,
                signature=self._signature(node.lineno, header_end),
                doc=first_line(doc),
                parent=parent,
                doc_end=(first.end_lineno or first.lineno) if doc is not None else 0,
            )
        )
        if is_class:
            self.visit_body(node.body, parent=qualname, in_class=True)

    def _assignment(self, node: ast.Assign | ast.AnnAssign, *, parent: str | None) -> None:
        """Record a long assignment to one name: a constant when the name is upper case."""
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        end = node.end_lineno or node.lineno
        if (
            node.value is None
            or end - node.lineno + 1 < LONG_ASSIGNMENT_LINES
            or not all(isinstance(t, ast.Name) for t in targets)
        ):
            return
        name = cast(ast.Name, targets[0]).id
        self.symbols.append(
            Symbol(
                name=name,
                qualname=f"{parent}.{name}" if parent else name,
                kind="constant" if name.isupper() else "variable",
                start=node.lineno,
                end=end,
                header_end=node.lineno,
                signature=self._signature(node.lineno, node.lineno),
                parent=parent,
            )
        )

    def _signature(self, first: int, last: int) -> str:
        """The header lines joined on one line, whitespace collapsed, at most 240 characters."""
        if first == last:  # the common case, without the regex
            return self.lines[first - 1].strip()[:240]
        text = " ".join(line.strip() for line in self.lines[first - 1 : last])
        return _SPACES.sub(" ", text)[:240]
