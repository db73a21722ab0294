"""Import resolution: which indexed file an import statement refers to, where that can be known."""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

_JS_SUFFIXES = (
    "",
    ".js",
    ".ts",
    ".tsx",
    ".jsx",
    ".mjs",
    ".cjs",
    "/index.js",
    "/index.ts",
    "/index.tsx",
    "/index.jsx",
)
_PY_SUFFIXES = (".py", ".pyi")

ImportRow = tuple[int, str, str, int]  # file id, module, comma-joined names, relative level


def python_modules(paths: Iterable[str]) -> dict[str, str]:
    """Dotted module name → path for Python files; packages are folders with `__init__.py`.

    A module's name starts below the nearest folder that is not a package, so `src/` layouts
    and test folders without `__init__.py` resolve the way Python would import them.
    """
    py = sorted(p for p in paths if p.endswith(_PY_SUFFIXES))
    packages = {posixpath.dirname(p) for p in py if PurePosixPath(p).stem == "__init__"}
    modules: dict[str, str] = {}
    for path in py:
        name = module_name(path, packages)
        if name:
            modules.setdefault(name, path)  # sorted: `x.py` wins over `x.pyi`
    return modules


def module_name(path: str, packages: set[str]) -> str:
    """The dotted name Python would import `path` by, given the package folders."""
    pure = PurePosixPath(path)
    parts = [] if pure.stem == "__init__" else [pure.stem]
    folder = pure.parent
    while str(folder) != "." and str(folder) in packages:
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts)


def resolve_edges(paths: Mapping[int, str], refs: Iterable[ImportRow]) -> set[tuple[int, int]]:
    """(importer id, imported id) for every import that resolves to another indexed file."""
    ids = {path: file_id for file_id, path in paths.items()}
    modules = python_modules(ids)
    indexed = _Indexed(ids, modules, {path: name for name, path in modules.items()})
    found: set[tuple[int, int]] = set()
    by_file: dict[int, list[ImportRow]] = defaultdict(list)
    for row in refs:
        by_file[row[0]].append(row)
    for file_id, rows in by_file.items():
        src = paths.get(file_id)
        if src is None:
            continue
        for _, module, names, level in rows:
            for target in _targets(src, (module, names, level), indexed):
                if target != src:
                    found.add((file_id, ids[target]))
    return found


@dataclass(frozen=True)
class _Indexed:
    """The indexed files as imports name them: path → id, module → path, path → module."""

    ids: Mapping[str, int]
    modules: Mapping[str, str]
    names_of: Mapping[str, str]


def _targets(src: str, ref: tuple[str, str, int], indexed: _Indexed) -> list[str]:
    """The indexed paths one import (module, names, level) refers to (none when it leaves the
    repository)."""
    module, names, level = ref
    ids, modules, names_of = indexed.ids, indexed.modules, indexed.names_of
    if module.startswith("."):
        return _js_target(src, module, ids)
    if level:
        base = names_of.get(src, "").split(".")
        keep = len(base) - level + (1 if PurePosixPath(src).stem == "__init__" else 0)
        if keep < 0:
            return []
        module = ".".join([*base[:keep], *([module] if module else [])])
    wanted = [f"{module}.{n}" if module else n for n in names.split(",") if n and n != "*"]
    hits = [modules[w] for w in wanted if w in modules]
    if module in modules:
        hits.append(modules[module])
    return list(dict.fromkeys(hits))


def _js_target(src: str, spec: str, ids: Mapping[str, int]) -> list[str]:
    """The file a relative JS/TS import names, trying the usual extensions."""
    base = posixpath.normpath(posixpath.join(posixpath.dirname(src), spec))
    for suffix in _JS_SUFFIXES:
        if base + suffix in ids:
            return [base + suffix]
    return []
