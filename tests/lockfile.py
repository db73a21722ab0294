"""Where pyproject.toml, uv.lock and pip's requirements files exported from it disagree.

Read, never resolved: uv.lock records the requirements it was locked from (the project's
`requires-dist`, what `uv lock --check` compares) and every version with its files' hashes; the
exports (`make lock`) pin versions with hashes for pip. Each function takes the parsed files and
returns one line per disagreement, empty when they hold together.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version


@dataclass(frozen=True)
class Pin:
    """One `name==version --hash=…` entry of an exported requirements file."""

    name: NormalizedName
    version: Version
    hashes: frozenset[str]


@dataclass(frozen=True)
class Export:
    """An exported requirements file: the extras and dependency groups it was exported with,
    and its pins."""

    extras: frozenset[str]
    pins: tuple[Pin, ...]
    groups: frozenset[str] = frozenset()


def requirement_key(requirement: Requirement, extra: str | None = None) -> str:
    """A requirement written one way: canonical name, sorted extras, sorted specifiers, and the
    extra that brings it as a marker (as in the project's metadata)."""
    markers = [str(m) for m in (requirement.marker,) if m is not None]
    if extra is not None:
        markers.append(f'extra == "{canonicalize_name(extra)}"')
    extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
    marker = " and ".join(f"({m})" if " or " in m else m for m in markers)
    return f"{canonicalize_name(requirement.name)}{extras}{requirement.specifier}" + (
        f"; {marker}" if marker else ""
    )


def declared(pyproject: dict[str, Any]) -> dict[str, tuple[Requirement, str | None]]:
    """pyproject's requirements by key: the dependencies (extra None) and each extra's."""
    project = pyproject["project"]
    found = {requirement_key(r): (r, None) for r in map(Requirement, project["dependencies"])}
    for extra, lines in project.get("optional-dependencies", {}).items():
        for requirement in map(Requirement, lines):
            found[requirement_key(requirement, extra)] = (requirement, extra)
    return found


def declared_groups(pyproject: dict[str, Any]) -> dict[str, list[Requirement]]:
    """pyproject's dependency groups (PEP 735): each group's requirements."""
    return {
        group: list(map(Requirement, lines))
        for group, lines in pyproject.get("dependency-groups", {}).items()
    }


def locked_groups(lock: dict[str, Any], name: str) -> dict[str, set[str]]:
    """The keys of each dependency group's requirements that uv.lock records for project
    `name`."""
    requires_dev = project_entry(lock, name).get("metadata", {}).get("requires-dev", {})
    return {
        group: {
            requirement_key(Requirement(entry["name"] + entry.get("specifier", "")))
            for entry in entries
        }
        for group, entries in requires_dev.items()
    }


def locked_inputs(lock: dict[str, Any], name: str) -> set[str]:
    """The keys of the requirements uv.lock records for project `name` (what it locked from)."""
    root = project_entry(lock, name)
    keys = set()
    for entry in root.get("metadata", {}).get("requires-dist", []):
        text = entry["name"] + (f"[{','.join(entry['extras'])}]" if entry.get("extras") else "")
        text += entry.get("specifier", "") + (f"; {entry['marker']}" if "marker" in entry else "")
        keys.add(requirement_key(Requirement(text)))
    return keys


def project_entry(lock: dict[str, Any], name: str) -> dict[str, Any]:
    """uv.lock's entry of the project itself (its source is the checkout)."""
    entries = [
        p
        for p in lock["package"]
        if canonicalize_name(p["name"]) == canonicalize_name(name)
        and ("editable" in p["source"] or "virtual" in p["source"])
    ]
    if len(entries) != 1:
        raise LookupError(f"uv.lock has {len(entries)} entries for the project {name}")
    return entries[0]


def locked_versions(lock: dict[str, Any]) -> dict[NormalizedName, dict[Version, frozenset[str]]]:
    """Each locked package's versions (several where uv forked by marker), with the hashes of
    their files (sdist and wheels)."""
    versions: dict[NormalizedName, dict[Version, frozenset[str]]] = {}
    for package in lock["package"]:
        if "registry" not in package["source"]:
            continue
        files = [package["sdist"]] if "sdist" in package else []
        files += package.get("wheels", [])
        versions.setdefault(canonicalize_name(package["name"]), {})[Version(package["version"])] = (
            frozenset(f["hash"] for f in files)
        )
    return versions


def lock_disagreements(pyproject: dict[str, Any], lock: dict[str, Any]) -> list[str]:
    """How uv.lock differs from pyproject.toml: its recorded inputs, Python range, extras and
    dependency groups, and any locked version outside pyproject's range."""
    project = pyproject["project"]
    wanted, recorded = declared(pyproject), locked_inputs(lock, project["name"])
    problems = [
        f"pyproject.toml requires {key}, uv.lock was not locked with it"
        for key in sorted(wanted.keys() - recorded)
    ]
    problems += [
        f"uv.lock was locked with {key}, pyproject.toml no longer requires it"
        for key in sorted(recorded - wanted.keys())
    ]
    if lock.get("requires-python") != project.get("requires-python"):
        problems.append(
            f"uv.lock is for Python {lock.get('requires-python')}, pyproject.toml "
            f"says {project.get('requires-python')}"
        )
    extras = set(project.get("optional-dependencies", {}))
    if (
        set(project_entry(lock, project["name"]).get("metadata", {}).get("provides-extras", []))
        != extras
    ):
        problems.append(f"uv.lock's extras differ from pyproject.toml's {sorted(extras)}")
    groups = declared_groups(pyproject)
    if {g: {requirement_key(r) for r in rs} for g, rs in groups.items()} != locked_groups(
        lock, project["name"]
    ):
        problems.append(
            f"uv.lock was not locked with pyproject.toml's dependency groups "
            f"{sorted(groups)} as they are"
        )
    where = [(r, f"extra {extra}" if extra else "dependencies") for r, extra in wanted.values()]
    where += [(r, f"group {group}") for group, rs in groups.items() for r in rs]
    return problems + out_of_range(where, locked_versions(lock))


def out_of_range(
    requirements: Iterable[tuple[Requirement, str]],
    versions: dict[NormalizedName, dict[Version, frozenset[str]]],
) -> list[str]:
    """Each requirement (with where pyproject lists it) whose package uv.lock lacks, or locks
    at a version it excludes."""
    problems = []
    for requirement, where in requirements:
        name = canonicalize_name(requirement.name)
        if name not in versions:
            problems.append(f"{name} ({where} in pyproject.toml) is not in uv.lock")
        problems += [
            f"uv.lock has {name} {version}, outside pyproject.toml's "
            f"{requirement.specifier} ({where})"
            for version in sorted(versions.get(name, {}))
            if not requirement.specifier.contains(version, prereleases=True)
        ]
    return problems


def parse_export(text: str) -> Export:
    """An exported requirements file: the `--extra`s and `--group`s of the command in its
    header, and its `name==version` lines with their hashes (markers ignored: pip evaluates
    them)."""
    command = re.search(r"^#\s+(uv export .*)$", text, re.M)
    if command is None:
        raise ValueError("no `uv export` command in the file's header: not written by make lock")
    words = shlex.split(command.group(1))
    extras = frozenset(words[i + 1] for i, word in enumerate(words) if word == "--extra")
    groups = frozenset(words[i + 1] for i, word in enumerate(words) if word == "--group")
    pins = []
    for entry in re.sub(r"\\\n", " ", text).splitlines():
        entry = entry.split("#", 1)[0].strip()
        if not entry:
            continue
        pin = re.fullmatch(
            r"([A-Za-z0-9._-]+)==(\S+)(?:\s*;(?:(?!--hash).)*)?((?:\s+--hash=\S+)*)", entry
        )
        if pin is None:
            raise ValueError(f"not a pinned, hashed requirement: {entry}")
        pins.append(
            Pin(
                canonicalize_name(pin.group(1)),
                Version(pin.group(2)),
                frozenset(h.removeprefix("--hash=") for h in pin.group(3).split()),
            )
        )
    return Export(extras, tuple(pins), groups)


def export_disagreements(
    name: str, export: Export, pyproject: dict[str, Any], lock: dict[str, Any]
) -> list[str]:
    """How export `name` differs from uv.lock (a version or a hash), or misses a requirement
    of pyproject's for the extras and groups it was exported with."""
    versions = locked_versions(lock)
    problems = []
    for pin in export.pins:
        locked = versions.get(pin.name, {})
        if pin.version not in locked:
            problems.append(
                f"{name} pins {pin.name}=={pin.version}, uv.lock has "
                f"{', '.join(map(str, sorted(locked))) or 'no such package'}"
            )
        elif pin.hashes != locked[pin.version]:
            problems.append(f"{name}: the hashes of {pin.name}=={pin.version} are not uv.lock's")
    pinned = {pin.name for pin in export.pins}
    problems += [
        f"{name} lacks {canonicalize_name(r.name)}, which pyproject.toml's "
        f"{'extra ' + extra if extra else 'dependencies'} need"
        for r, extra in declared(pyproject).values()
        if (extra is None or extra in export.extras) and canonicalize_name(r.name) not in pinned
    ]
    problems += [
        f"{name} lacks {canonicalize_name(r.name)}, which pyproject.toml's group {group} need"
        for group, requirements in declared_groups(pyproject).items()
        if group in export.groups
        for r in requirements
        if canonicalize_name(r.name) not in pinned
    ]
    return problems
