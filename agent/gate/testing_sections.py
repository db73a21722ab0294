"""The test-related sections of files that hold other things too (pyproject.toml, setup.cfg,
package.json, Cargo.toml): read for the gate, and put back as they were for the run of the
original tests — the rest of the file stays as the step left it, since code and tests may read
it (a test that checks the package's own metadata).
"""

from __future__ import annotations

import configparser
import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

# Files that hold test configuration among other things: only these parts count.
SECTIONED: Mapping[str, tuple[str, ...]] = {
    "pyproject.toml": (
        "tool.pytest",
        "tool.tox",
        "tool.nox",
        "tool.coverage",
        "tool.hatch.envs",
        "tool.pdm.scripts",
        "tool.poe",
        # a pytest plugin the package installs (pytest loads `pytest11`)
        "project.entry-points.pytest11",
        "tool.poetry.plugins.pytest11",
        "tool.flit.entrypoints.pytest11",
    ),
    "setup.cfg": (
        "tool:pytest",
        "pytest",
        "tox",
        "coverage:",
        "options.entry_points",
    ),  # whole: its `pytest11` key is one of several
    "package.json": ("scripts", "jest", "mocha", "ava", "vitest", "c8", "nyc"),
    # what `cargo test` builds and runs: `[lib] test = false`, `[[test]] harness = false` …
    "Cargo.toml": (
        "lib",
        "bin",
        "test",
        "example",
        "bench",
        "features",
        "profile.test",
        "package.autotests",
        "package.autobins",
        "package.autoexamples",
        "package.autobenches",
    ),
}

_TOML_HEADER = re.compile(r"^\s*\[\[?\s*([^\[\]]+?)\s*\]\]?\s*(?:#.*)?$")
_INI_HEADER = re.compile(r"^\[([^\]]+)\]\s*$")
_TRIPLE = re.compile(r'"""|\'\'\'')


def is_sectioned(path: str) -> bool:
    """Whether only parts of the file at `path` are test configuration."""
    return PurePosixPath(path).name in SECTIONED


def testing_sections(path: str, text: str | None) -> Any:
    """The test-related parts of a sectioned file (None when absent or unreadable)."""
    if text is None:
        return None
    prefixes = SECTIONED[PurePosixPath(path).name]
    try:
        if path.endswith(".toml"):
            return {
                k: v for k, v in _flatten(tomllib.loads(text)).items() if k.startswith(prefixes)
            }
        if path.endswith(".json"):
            data = json.loads(text)
            return {k: data.get(k) for k in prefixes} if isinstance(data, dict) else data
        parser = configparser.RawConfigParser()
        parser.read_string(text)
        return {s: dict(parser[s]) for s in parser.sections() if s.startswith(prefixes)}
    except (ValueError, RecursionError, configparser.Error):
        return text  # unreadable: any change counts


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested tables as dotted keys: {"tool": {"pytest": {...}}} → {"tool.pytest...": ...}."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, dotted + "."))
        else:
            flat[dotted] = value
    return flat


def with_testing_sections_of(path: str, after: str, before: str) -> str | None:
    """`after` with its test-related sections as `before` has them, the rest untouched; None
    when that cannot be had exactly (the sections are not whole tables, a file is unreadable):
    the caller then takes `before` whole."""
    prefixes = SECTIONED[PurePosixPath(path).name]
    try:
        if path.endswith(".json"):
            spliced = _json_splice(after, before, prefixes)
        else:
            header = _TOML_HEADER if path.endswith(".toml") else _INI_HEADER
            toml = path.endswith(".toml")
            kept = [b for b in _blocks(after, header, toml) if not _testing(b[0], prefixes)]
            moved = [b for b in _blocks(before, header, toml) if _testing(b[0], prefixes)]
            spliced = "".join(text for _, text in [*kept, *moved])
    except (ValueError, RecursionError):
        return None
    exact = testing_sections(path, spliced) == testing_sections(path, before) and _others(
        path, spliced, prefixes
    ) == _others(path, after, prefixes)
    return spliced if exact else None


def _testing(name: str | None, prefixes: tuple[str, ...]) -> bool:
    return name is not None and name.startswith(prefixes)


def _blocks(text: str, header: re.Pattern[str], toml: bool) -> list[tuple[str | None, str]]:
    """The file cut at its table headers: (table name, its text); the first has None. A
    header-looking line inside a TOML multi-line string is content."""
    blocks: list[tuple[str | None, list[str]]] = [(None, [])]
    open_string = False
    for line in text.splitlines(keepends=True):
        match = None if open_string else header.match(line)
        if match:
            blocks.append((match.group(1).replace(" ", ""), [line]))
        else:
            blocks[-1][1].append(line)
        if toml and len(_TRIPLE.findall(line)) % 2:
            open_string = not open_string
    if blocks and blocks[-1][1] and not blocks[-1][1][-1].endswith("\n"):
        blocks[-1][1][-1] += "\n"
    return [(name, "".join(lines)) for name, lines in blocks]


def _json_splice(after: str, before: str, prefixes: tuple[str, ...]) -> str:
    new, old = json.loads(after), json.loads(before)
    if not isinstance(new, dict) or not isinstance(old, dict):
        raise ValueError("not a JSON object")
    for key in prefixes:
        if key in old:
            new[key] = old[key]
        else:
            new.pop(key, None)
    return json.dumps(new, indent=2, ensure_ascii=False) + "\n"


def _others(path: str, text: str, prefixes: tuple[str, ...]) -> Any:
    """Everything of the file but its test-related parts."""
    try:
        if path.endswith(".toml"):
            return {
                k: v for k, v in _flatten(tomllib.loads(text)).items() if not k.startswith(prefixes)
            }
        if path.endswith(".json"):
            data = json.loads(text)
            return {k: v for k, v in data.items() if k not in prefixes}
        parser = configparser.RawConfigParser()
        parser.read_string(text)
        return {s: dict(parser[s]) for s in parser.sections() if not s.startswith(prefixes)}
    except (ValueError, RecursionError, configparser.Error, AttributeError):
        return None
