"""Symbols of source files: Python through ast, other languages through tree-sitter grammars."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.retrieval.indexing import treesitter
from agent.retrieval.indexing.index import RepoIndex
from agent.retrieval.indexing.parsing import parse_source, split_identifier, terms
from tests.retrieval.conftest import make_repo

GO_SOURCE = """package health

// Server answers health checks.
type Server struct {
	ready bool
}

// Health reports whether the server is ready.
func (s *Server) Health() bool {
	return s.ready
}

func NewServer() *Server {
	return &Server{}
}
"""
JS_SOURCE = """// Turns a title into a URL slug.
export function slugify(title) {
  return title.trim().toLowerCase();
}

class Router {
  route(path) {
    return path;
  }
}

const handler = (req) => {
  return req;
};
"""


def test_identifiers_split_on_snake_and_camel_case() -> None:
    assert split_identifier("parse_yesNo2") == ["parse", "yes", "no", "2"]
    assert split_identifier("HTTPServerError") == ["http", "server", "error"]
    assert terms("JSONDecoder.raw_decode") == [
        "json",
        "decoder",
        "jsondecoder",
        "raw",
        "decode",
        "rawdecode",
    ]


def test_python_syntax_error_comes_back_as_text() -> None:
    parsed = parse_source("bad.py", "def broken(:\n")
    assert (parsed.status, parsed.symbols) == ("syntax_error", [])


def test_python_definitions_inside_functions_are_part_of_their_body() -> None:
    source = "def outer():\n    def inner():\n        pass\n    return inner\n"
    parsed = parse_source("m.py", source)
    assert [s.qualname for s in parsed.symbols] == ["outer"]


def test_python_definitions_under_if_and_try_are_found() -> None:
    source = "try:\n    import fast\nexcept ImportError:\n    def fast():\n        pass\n"
    parsed = parse_source("m.py", source)
    assert [s.name for s in parsed.symbols] == ["fast"]
    assert [i.module for i in parsed.imports] == ["fast"]


DATA_MODULE = """\"\"\"Keywords of the lexer.\"\"\"
import re

FLAGS = re.IGNORECASE

KEYWORDS = {
    'ABORT': 'Keyword',
    'ABS': 'Keyword',
    'DIV': 'Operator',
    'MOD': 'Operator',
}


class Lexer:
    PATTERNS: list[str] = [
        'a',
        'b',
        'c',
        'd',
    ]
    short = ['x', 'y']
"""


def test_a_long_assignment_to_one_name_is_a_definition_and_a_short_one_is_not() -> None:
    parsed = parse_source("keywords.py", DATA_MODULE)
    found = {s.qualname: (s.kind, s.start, s.end, s.signature) for s in parsed.symbols}
    assert found == {
        "KEYWORDS": ("constant", 6, 11, "KEYWORDS = {"),
        "Lexer": ("class", 14, 21, "class Lexer:"),
        "Lexer.PATTERNS": ("constant", 15, 20, "PATTERNS: list[str] = ["),
    }


def test_a_language_without_a_grammar_is_text() -> None:
    parsed = parse_source("Main.kt", "fun main() {}\n")
    assert (parsed.language, parsed.status, parsed.symbols) == ("text", "text", [])


def test_go_file_yields_symbols() -> None:
    pytest.importorskip("tree_sitter_go")
    parsed = parse_source("health.go", GO_SOURCE)
    found = {s.qualname: s for s in parsed.symbols}
    assert list(found) == ["Server", "Server.Health", "NewServer"]
    health = found["Server.Health"]
    assert (health.kind, health.start, health.end) == ("method", 9, 11)
    assert health.signature == "func (s *Server) Health() bool {"
    assert health.doc == "Health reports whether the server is ready."


def test_javascript_file_yields_symbols() -> None:
    pytest.importorskip("tree_sitter_javascript")
    parsed = parse_source("slug.js", JS_SOURCE)
    found = {s.qualname: s for s in parsed.symbols}
    assert list(found) == ["slugify", "Router", "Router.route", "handler"]
    assert found["slugify"].doc == "Turns a title into a URL slug."
    assert (found["Router.route"].kind, found["Router.route"].parent) == ("method", "Router")
    assert [i.module for i in parsed.imports] == []


@pytest.mark.parametrize(
    ("path", "source", "expected"),
    [
        (
            "a.ts",
            "interface Shape { area(): number }\nexport class Box {\n  area() { return 1 }\n}\n",
            ["Shape", "Box", "Box.area"],
        ),
        ("a.tsx", "export function App() {\n  return <div/>;\n}\n", ["App"]),
        (
            "a.rs",
            "struct P { x: i32 }\nimpl P {\n    fn norm(&self) -> i32 { self.x }\n}\n",
            ["P", "P", "P.norm"],
        ),
        ("A.java", "class A {\n  int f(int x) { return x; }\n}\n", ["A", "A.f"]),
        ("a.rb", "class Cart\n  def total\n    0\n  end\nend\n", ["Cart", "Cart.total"]),
        ("a.c", "static int add(int a, int b) {\n  return a + b;\n}\n", ["add"]),
        (
            "a.cpp",
            "namespace geo {\nclass Shape {\n  int area() { return 0; }\n};\n}\n",
            ["geo", "geo.Shape", "geo.Shape.area"],
        ),
    ],
)
def test_every_bundled_grammar_yields_definitions(
    path: str, source: str, expected: list[str]
) -> None:
    pytest.importorskip("tree_sitter")
    language = parse_source(path, source).language
    if language not in treesitter.available():
        pytest.skip(f"no grammar for {language}")
    assert [s.qualname for s in parse_source(path, source).symbols] == expected


def test_indexed_go_and_javascript_symbols_are_searchable(tmp_path: Path, index: RepoIndex) -> None:
    pytest.importorskip("tree_sitter_go")
    pytest.importorskip("tree_sitter_javascript")
    repo = make_repo(tmp_path / "poly", {"health.go": GO_SOURCE, "web/slug.js": JS_SOURCE})
    stats = index.update(repo)
    assert stats.languages == {"go": 1, "javascript": 1}
    assert stats.symbols == 7
    assert index.search(["slugify"], limit=1)[0][0] == "web/slug.js"
    assert index.search(["new", "server"], limit=1)[0][0] == "health.go"
