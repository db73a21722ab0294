"""The import graph of agent/ and bot/ stays acyclic, between modules and between the rooms they
stand in (agent.gate, bot.web, …: no package imports one that imports it back), and agent never
imports bot.

Every import counts: at module level, inside functions and under `if TYPE_CHECKING:`. A lazy or
type-only import still ties two modules' concepts together, so it may not close a circle either.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agent", "bot")


def find_modules(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Dotted module name → source file, for every module of the packages under root."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imported_names(module: str, path: Path) -> Iterator[str]:
    """Every dotted name an import statement anywhere in the file asks for."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, is_package, node.level, node.module)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names if alias.name != "*")


def _absolute(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute name of a (possibly relative) `from … import`."""
    if level == 0:
        return name or ""
    parts = module.split(".")
    anchor = parts if is_package else parts[:-1]
    anchor = anchor[: len(anchor) - (level - 1)]
    return ".".join([*anchor, name] if name else anchor)


def import_graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """Module → the modules of the packages it imports (the most specific module named)."""
    modules = find_modules(root, packages)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets = {_known(name, modules) for name in imported_names(module, path)}
        graph[module] = {target for target in targets if target and target != module}
    return graph


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of a dotted name that is one of our modules."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in modules:
            return ".".join(parts[:end])
    return None


def tangles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or round a circle (sorted)."""
    reach = {module: _reachable(graph, module) for module in graph}
    groups = {
        tuple(sorted(other for other in reach[module] if module in reach.get(other, set())))
        for module in graph
        if module in reach[module]
    }
    return sorted(list(group) for group in groups)


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module reached from start by one or more imports."""
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph.get(module, ()))
    return seen


def test_no_import_cycle_between_modules() -> None:
    assert tangles(import_graph(ROOT)) == []


def rooms(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph between rooms: a top-level package's subpackage or module (agent.gate,
    bot.settings), each importing the rooms its modules import."""

    def room(module: str) -> str:
        return ".".join(module.split(".")[:2])

    between: dict[str, set[str]] = {room(module): set() for module in graph}
    for module, targets in graph.items():
        between[room(module)] |= {room(t) for t in targets if room(t) != room(module)}
    return between


def test_no_import_cycle_between_packages() -> None:
    assert tangles(rooms(import_graph(ROOT))) == []


def test_agent_never_imports_bot() -> None:
    offenders = sorted(
        f"{module} imports {name}"
        for module, path in find_modules(ROOT, ("agent",)).items()
        for name in imported_names(module, path)
        if name == "bot" or name.startswith("bot.")
    )
    assert offenders == []


def test_the_graph_covers_both_packages() -> None:
    graph = import_graph(ROOT)
    assert "agent.run.orchestrator" in graph and "bot.web.app" in graph
    assert "agent.models" in graph["agent.run.orchestrator"]


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_cycle_between_two_packages_is_found_though_their_modules_have_none(
    tmp_path: Path,
) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/low/__init__.py": "",
            "pkg/high/__init__.py": "",
            "pkg/low/a.py": "from pkg.high.b import thing\n",
            "pkg/high/b.py": "thing = 1\n",
            "pkg/high/c.py": "from pkg.low.a import thing\n",
        },
    )
    graph = import_graph(tmp_path, ("pkg",))
    assert tangles(graph) == []
    assert tangles(rooms(graph)) == [["pkg.high", "pkg.low"]]


def test_a_cycle_through_a_type_checking_import_is_found(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import thing\n",
            "pkg/b.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n"
            ),
        },
    )
    assert tangles(import_graph(tmp_path, ("pkg",))) == [["pkg.a", "pkg.b"]]


def test_a_cycle_through_an_import_inside_a_function_is_found(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/sub/__init__.py": "",
            "pkg/sub/a.py": "import pkg.b\n",
            "pkg/b.py": "def f():\n    from .sub.a import g\n    return g\n",
        },
    )
    graph = import_graph(tmp_path, ("pkg",))
    assert graph["pkg.b"] == {"pkg.sub.a"}
    assert tangles(graph) == [["pkg.b", "pkg.sub.a"]]


def test_an_acyclic_graph_passes(tmp_path: Path) -> None:
    _write(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "from . import b\n", "pkg/b.py": ""})
    graph = import_graph(tmp_path, ("pkg",))
    assert "pkg.b" in graph["pkg.a"]
    assert tangles(graph) == []
