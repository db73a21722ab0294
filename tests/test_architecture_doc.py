"""docs/architecture.md names the code as it is: its package tables name every module there is
and no module there is not, as each package's own docstring does; every dotted name it gives
exists; its floors are the ones the imports keep.

A row of the tables names its packages (or top-level modules) in its first cell, in backticks, and
their modules in its second, in backticks: `plan_passes`, `orchestrator.solve`,
`testreport_tap`. A package's `__init__.py` docstring names its modules the same way.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.test_imports import import_graph

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"
PACKAGES = ("agent", "bot")
_NAMED = re.compile(r"`([a-z_][a-z0-9_]*)((?:\.[A-Za-z_]\w*)*)`")  # `module` or `module.attr`
NOT_CODE = {"cra"}  # the program and its config file (`cra`, `cra.toml`), never a module
_DOTTED = re.compile(r"\b((?:agent|bot)(?:\.\w+)+)")


@dataclass(frozen=True)
class Row:
    """One row of a package table: what its first cell names, and its second cell."""

    names: tuple[str, ...]  # dotted: agent.run, agent.console
    owns: str


def section(name: str) -> str:
    """The text of the page's `## name` section."""
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"\n## {name}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def rows(top: str) -> list[Row]:
    """The rows of the package table of `top` (agent or bot)."""
    found = []
    for line in section(f"{top}/").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        names = tuple(re.findall(r"`([\w.]+)`", cells[0]))
        found.append(Row(names, cells[1]))
    return found


def named(text: str) -> set[str]:
    """The first part of every `name` or `name.attr` in backticks: the modules a text names."""
    return {m.group(1) for m in _NAMED.finditer(text)} - NOT_CODE


def modules_of(package: Path) -> set[str]:
    """The modules and subpackages of a package directory (not its dunder modules)."""
    files = {p.stem for p in package.glob("*.py") if not p.stem.startswith("__")}
    return files | {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}


def packages(top: str) -> dict[str, Path]:
    """The packages of `top`, by dotted name."""
    return {
        f"{top}.{p.name}": p
        for p in sorted((ROOT / top).iterdir())
        if (p / "__init__.py").is_file()
    }


def top_modules(top: str) -> set[str]:
    """The top-level modules of `top`, dotted (agent.errors)."""
    return {f"{top}.{p.stem}" for p in (ROOT / top).glob("*.py") if not p.stem.startswith("__")}


def docstring(package: Path) -> str:
    """A package's `__init__.py` docstring."""
    return ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""


def row_of(dotted: str) -> Row:
    """The row naming `dotted` in its first cell."""
    top = dotted.split(".")[0]
    [row] = [r for r in rows(top) if dotted in r.names]
    return row


ALL_PACKAGES = {**packages("agent"), **packages("bot")}


@pytest.mark.parametrize("top", PACKAGES)
def test_every_package_and_top_level_module_has_a_row(top: str) -> None:
    in_rows = {name for row in rows(top) for name in row.names}
    assert in_rows == set(packages(top)) | top_modules(top)


@pytest.mark.parametrize("dotted", sorted(ALL_PACKAGES))
def test_a_package_row_names_every_module_of_the_package(dotted: str) -> None:
    missing = modules_of(ALL_PACKAGES[dotted]) - named(row_of(dotted).owns)
    assert not missing, f"docs/architecture.md's row of {dotted} does not name {sorted(missing)}"


@pytest.mark.parametrize("top", PACKAGES)
def test_every_module_a_row_names_exists(top: str) -> None:
    """A name in backticks in a row's second cell is a module of its packages, or an attribute
    of its package or module (`build_services`, `execute_run_job`)."""
    unknown = []
    for row in rows(top):
        for match in _NAMED.finditer(row.owns):
            if match.group(1) in NOT_CODE:
                continue
            if not any(_resolves(owner, match.group(1) + match.group(2)) for owner in row.names):
                unknown.append(f"{row.names[0]}: `{match.group(0).strip('`')}`")
    assert not unknown, f"docs/architecture.md names what does not exist: {unknown}"


@pytest.mark.parametrize("dotted", sorted(ALL_PACKAGES))
def test_a_package_docstring_names_the_modules_its_row_names(dotted: str) -> None:
    package = ALL_PACKAGES[dotted]
    in_docstring = named(docstring(package)) & modules_of(package)
    in_row = named(row_of(dotted).owns) & modules_of(package)
    assert in_docstring == modules_of(package), f"{dotted}/__init__.py's docstring"
    assert in_row == in_docstring


def test_every_dotted_name_on_the_page_exists() -> None:
    missing = [name for name in sorted(set(_DOTTED.findall(PAGE.read_text()))) if not _exists(name)]
    assert not missing


@pytest.mark.parametrize("top", PACKAGES)
def test_a_package_imports_only_from_the_floors_below_it(top: str) -> None:
    """The page's floors, from the ground up: every package and top-level module on one, and no
    import of a higher floor or of another package on the same one."""
    floors = floors_of(top)
    placed = [name for floor in floors for name in floor]
    everything = {d.split(".")[1] for d in [*packages(top), *top_modules(top)]}
    assert sorted(placed) == sorted(everything)
    level = {name: index for index, floor in enumerate(floors) for name in floor}
    upward = [
        f"{module} imports {target}"
        for module, targets in _graph(top).items()
        for target in targets
        if _room(module) is not None
        and _room(target) is not None
        and _room(module) != _room(target)
        and level[_room(target) or ""] >= level[_room(module) or ""]
    ]
    assert not upward


def floors_of(top: str) -> list[list[str]]:
    """The floors the page gives for `top`: `a`, `b` → `c` → … (ground first)."""
    text = " ".join(section("agent/").split())
    lead = "Floors inside `agent/`, from the ground up:" if top == "agent" else "holds in `bot/`:"
    chain = text.split(lead, 1)[1].split(". ", 1)[0]
    return [re.findall(r"`(\w+)`", floor) for floor in chain.split("→")]


@functools.cache
def _graph(top: str) -> dict[str, set[str]]:
    """The import graph of `top`'s modules (tests/test_imports.py reads it the same way)."""
    return import_graph(ROOT, (top,))


def _room(module: str) -> str | None:
    """The package or top-level module a module belongs to (None for the top package)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _resolves(owner: str, name: str) -> bool:
    """Whether `name` is a module of the package `owner` or an attribute of `owner` (or, in
    full, `agent.…` or `bot.…`, anything that exists)."""
    if name.split(".")[0] in PACKAGES:
        return _exists(name)
    return _exists(f"{owner}.{name}")


def _exists(dotted: str) -> bool:
    """Whether `dotted` is a module of the tree, or a name its source defines (read, not
    imported: a top-level name, then a name inside that class)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        source = _source(parts[:cut])
        if source is not None:
            return cut == len(parts) or _defines(_parsed(source).body, parts[cut:])
    return False


@functools.cache
def _parsed(path: Path) -> ast.Module:
    """A module's source, parsed once."""
    return ast.parse(path.read_text(encoding="utf-8"))


def _source(parts: list[str]) -> Path | None:
    """The file of the module `parts` names, if there is one."""
    path = ROOT.joinpath(*parts)
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _defines(body: list[ast.stmt], names: list[str]) -> bool:
    """Whether the statements define `names[0]` (and it, `names[1:]`)."""
    if not names:
        return True
    for node in body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            if node.name == names[0]:
                return len(names) == 1 or (
                    isinstance(node, ast.ClassDef) and _defines(node.body, names[1:])
                )
        elif len(names) == 1 and names[0] in _bound(node):
            return True
    return False


def _bound(node: ast.stmt) -> set[str]:
    """The names an assignment or import statement binds."""
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {t.id for t in targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    return set()
