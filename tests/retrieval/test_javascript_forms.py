"""The forms JavaScript and TypeScript modules define things in, read as definitions: CommonJS
exports, default exports without a name, objects of functions and class fields holding them."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from agent.retrieval.indexing.index import RepoIndex
from agent.retrieval.indexing.parsing import module_name, parse_source
from agent.retrieval.indexing.symbols import Symbol
from agent.retrieval.outline import render_outline
from tests.retrieval.conftest import make_repo

SOURCES = Path(__file__).parent / "js_sources"
pytest.importorskip("tree_sitter_javascript")
pytest.importorskip("tree_sitter_typescript")


def definitions(path: str) -> dict[str, Symbol]:
    """The definitions of one of the sources, by qualified name."""
    parsed = parse_source(path, (SOURCES / path).read_text())
    assert parsed.status == "parsed"
    return {s.qualname: s for s in parsed.symbols}


def test_module_exports_of_an_anonymous_function_is_named_after_its_module() -> None:
    found = definitions("lib/parse.js")
    assert list(found) == ["parseValues", "parse"]
    main = found["parse"]
    assert (main.kind, main.start, main.end, main.header_end) == ("function", 15, 21, 15)
    assert main.signature == "module.exports = function (str, opts) {"
    assert main.doc == "Parses a query string into an object."


def test_an_index_file_names_its_anonymous_export_after_its_folder() -> None:
    assert (module_name("lib/index.js"), module_name("index.ts")) == ("lib", "default")
    assert module_name("src/parse.d.ts") == "parse"
    assert "lib.load" in definitions("lib/index.js")


def test_functions_assigned_to_exports_and_members_are_definitions() -> None:
    found = definitions("lib/response.js")
    assert list(found) == ["res.status", "res.send", "json"]
    assert (found["res.status"].kind, found["res.status"].doc) == (
        "method",
        "Sets the HTTP status code.",
    )
    assert (found["json"].kind, found["json"].start, found["json"].end) == ("function", 21, 23)


def test_prototype_methods_belong_to_their_constructor() -> None:
    found = definitions("lib/router.js")
    assert list(found) == [
        "Router",
        "Router.route",
        "Router.match",
        "createRouter",
        "Layer",
        "Layer.constructor",
    ]
    assert found["Router.route"].signature == "Router.prototype.route = function (path, handler) {"
    assert (found["Layer"].kind, found["Layer.constructor"].parent) == ("class", "Layer")


def test_the_comment_above_a_definition_is_its_documentation() -> None:
    """A JSDoc block with a blank line under it (commander's style) and a run of `//` lines
    document what follows them; a comment after code on its line does not."""
    source = (
        "const a = 1; // not about parse\n"
        "// Parses a value.\n"
        "// Throws on bad input.\n"
        "function parse(value) {\n  return value;\n}\n"
        "\n"
        "/**\n * Formats a value.\n */\n"
        "\n"
        "function format(value) {\n  return value;\n}\n"
    )
    found = {s.name: s for s in parse_source("lib/values.js", source).symbols}
    assert (found["parse"].doc, found["parse"].doc_start) == ("Parses a value.", 2)
    assert (found["format"].doc, found["format"].doc_start) == ("Formats a value.", 8)


def test_an_object_of_functions_is_a_container_of_its_methods() -> None:
    found = definitions("lib/index.js")
    assert list(found) == [
        "api",
        "api.parse",
        "api.stringify",
        "api.run",
        "lib",
        "lib.load",
        "lib.save",
    ]
    assert (found["api"].kind, found["api"].start, found["api"].end) == ("object", 6, 16)
    run = found["api.run"]
    assert (run.kind, run.parent, run.start, run.end) == ("method", "api", 13, 15)
    assert run.signature == "run: async (file) => {"


def test_an_object_holding_no_function_is_no_definition() -> None:
    assert "settings" not in definitions("lib/index.js")
    assert "defaults" not in definitions("lib/parse.js")


def test_a_default_exported_object_nests_its_objects_of_functions() -> None:
    found = definitions("counter.js")
    assert list(found) == [
        "counter",
        "counter.data",
        "counter.methods",
        "counter.methods.increment",
        "counter.methods.reset",
    ]
    assert found["counter"].doc == "A counter with a maximum."
    assert found["counter.methods.increment"].doc == "Adds one, up to the maximum."


def test_an_anonymous_default_export_is_named_after_its_module() -> None:
    found = definitions("format.mjs")
    assert list(found) == ["format"]
    assert (found["format"].kind, found["format"].start, found["format"].end) == ("function", 4, 11)


def test_typescript_class_fields_holding_functions_are_methods() -> None:
    found = definitions("handler.ts")
    assert list(found) == [
        "Event",
        "Handler",
        "Handler.handle",
        "Handler.create",
        "Handler.reset",
        "handler",
    ]
    handle = found["Handler.handle"]
    assert (handle.kind, handle.start, handle.end) == ("method", 9, 12)
    assert handle.signature == "handle = (event: Event): number => {"
    assert handle.doc == "Counts an event."
    assert found["handler"].kind == "function"


def test_tsx_objects_and_anonymous_default_classes_are_read() -> None:
    found = definitions("store.tsx")
    assert list(found) == ["actions", "actions.add", "actions.clear", "store", "store.render"]
    assert found["store"].kind == "class"
    assert found["actions.add"].signature == "add(state: number[], item: number): number[] {"


def test_an_outline_shows_an_object_with_its_methods_folded() -> None:
    text = (SOURCES / "lib/index.js").read_text()
    symbols = parse_source("lib/index.js", text).symbols
    outline = render_outline(text, symbols, {"api.run": "full"}, borders=False)
    assert outline.splitlines()[5:14] == [
        "const api = {",
        "  parse(text) {",
        "    ⋮",
        "  stringify: function (value) {",
        "    ⋮",
        "  run: async (file) => {",
        "    return file;",
        "  },",
        "};",
    ]


def test_the_exports_are_indexed_and_searchable_by_name(tmp_path: Path, index: RepoIndex) -> None:
    files = {p: (SOURCES / p).read_text() for p in ("lib/parse.js", "lib/response.js")}
    index.update(make_repo(tmp_path / "web", files))
    assert [(s.path, s.qualname) for s in index.symbols_named(["send"])] == [
        ("lib/response.js", "res.send")
    ]
    assert [s.start_line for s in index.symbols_named(["parse"])] == [15]


def test_an_index_written_before_these_forms_were_read_is_rebuilt(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "web", {"lib/parse.js": (SOURCES / "lib/parse.js").read_text()})
    db = tmp_path / "index.sqlite"
    with RepoIndex.open(db) as index:
        index.update(repo)
    with closing(sqlite3.connect(db)) as conn, conn:
        (fingerprint,) = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        older = json.dumps(["3", *json.loads(fingerprint)[1:]], sort_keys=True)
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (older,))
    with RepoIndex.open(db) as index:
        assert index.update(repo).parsed == 1
