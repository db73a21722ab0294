"""The gate's files: cra's config, the test runner's configuration, the tests and what the test
command runs; which of them a change touches, and whether a step may edit them."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from fnmatch import fnmatchcase
from pathlib import PurePosixPath
from typing import Literal

from agent.config.files import CONFIG_CANDIDATES
from agent.gate.doctests import changed_examples, may_hold_doctests
from agent.gate.runner_reach import new_references
from agent.gate.source_tests import may_hold_tests, tests_changed
from agent.gate.testing_sections import SECTIONED, testing_sections
from agent.models import Record
from agent.retrieval.indexing.scan import is_test_path
from agent.retrieval.indexing.snapshots import recorded_test_file

GateRole = Literal["cra_config", "runner_config", "test"]

RunsDoctests = Callable[[str], bool]
"""Whether the repository's tests run the doctests of the file at this path."""


CRA_CONFIG_FILES: tuple[str, ...] = CONFIG_CANDIDATES  # the gate's own definition: never edited


RUNNER_CONFIG_GLOBS: tuple[str, ...] = (
    "conftest.py",
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "tox.ini",
    "noxfile.py",
    ".coveragerc",
    "jest.config.*",
    "jest.setup.*",
    "vitest.config.*",
    "vitest.workspace.*",
    "vitest.setup.*",
    "vite.config.*",
    ".mocharc*",
    "karma.conf.*",
    "ava.config.*",
    "playwright.config.*",
    "cypress.config.*",
    "phpunit.xml*",
    ".rspec",
    "spec_helper.rb",
    "rails_helper.rb",
    "setupTests.*",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    "bunfig.toml",  # the shell and flags `npm test` runs with
)


# Runner configuration known by its folder and name (a `config.toml` elsewhere is not one).
RUNNER_CONFIG_PATHS: tuple[str, ...] = (".cargo/config.toml", ".cargo/config")


# Programs whose own file defines what `the test command` runs.
COMMAND_FILES: Mapping[str, tuple[str, ...]] = {
    "make": ("Makefile", "makefile", "GNUmakefile"),
    "tox": ("tox.ini",),
    "nox": ("noxfile.py",),
    "npm": ("package.json",),
    "yarn": ("package.json",),
    "pnpm": ("package.json",),
    "just": ("justfile", "Justfile"),
    "task": ("Taskfile.yml", "Taskfile.yaml"),
}


def is_cra_config(path: str) -> bool:
    """True for cra's own config, which defines the gate and is never edited by the model."""
    return path.strip("/") in CRA_CONFIG_FILES


def gate_role(path: str) -> GateRole | None:
    """What part of the gate a path is by its name alone (sectioned files are not)."""
    if is_cra_config(path):
        return "cra_config"
    name = PurePosixPath(path).name
    if any(fnmatchcase(name, pattern) for pattern in RUNNER_CONFIG_GLOBS):
        return "runner_config"
    if any(path.strip("/") == known or path.endswith("/" + known) for known in RUNNER_CONFIG_PATHS):
        return "runner_config"
    if name not in SECTIONED and is_test_path(path):
        return "test"
    return None


def command_files(test_command: str | None) -> set[str]:
    """Files the test command itself names or implies (`sh run_tests.sh`, `make test`)."""
    if not test_command:
        return set()
    try:
        words = shlex.split(test_command, comments=True)
    except ValueError:
        words = test_command.split()
    files: set[str] = set()
    for word in words:
        program = PurePosixPath(word).name
        files.update(COMMAND_FILES.get(program, ()))
        if not word.startswith("-") and "=" not in word and ("/" in word or "." in word):
            files.add(str(PurePosixPath(word.removeprefix("./"))))
    return files


def with_recorded_tests(paths: Sequence[str]) -> list[str]:
    """`paths` and, after them, the test files whose output those that are snapshots record."""
    recorded = [r for r in map(recorded_test_file, paths) if r is not None]
    return list(dict.fromkeys([*paths, *recorded]))


class GateChange(Record):
    """A gate file a step changed: created, modified or deleted."""

    path: str
    role: GateRole
    status: Literal["created", "modified", "deleted"]
    # only the tests inside a source file changed (agent.gate.source_tests,
    # agent.gate.doctests): the
    # original run takes the new code with the old tests, not the old file
    tests_only: bool = False
    reason: str = ""  # why a file that is not a gate file by its name is one here


def _no_doctests(path: str) -> bool:
    del path
    return False


def may_be_gate_file(path: str, test_command: str | None) -> bool:
    """Whether a change to `path` may count for the gate (gate_changes decides which do):
    only these need their text at the step's base."""
    return (
        path in command_files(test_command)
        or gate_role(path) is not None
        or PurePosixPath(path).name in SECTIONED
        or may_hold_tests(path)
        or may_hold_doctests(path)
    )


def gate_changes(
    changed: Mapping[str, tuple[str | None, str | None]],
    test_command: str | None,
    runs_doctests: RunsDoctests = _no_doctests,
) -> list[GateChange]:
    """The gate files among `changed` (path → (text before, text after); None: absent)."""
    named = command_files(test_command)
    found: list[GateChange] = []
    for path, (before, after) in sorted(changed.items()):
        if before == after:
            continue
        status: Literal["created", "modified", "deleted"] = (
            "created" if before is None else "deleted" if after is None else "modified"
        )
        role = "runner_config" if path in named else gate_role(path)
        if role is None and PurePosixPath(path).name in SECTIONED:
            if testing_sections(path, before) == testing_sections(path, after):
                continue
            role = "runner_config"
        change = (
            GateChange(path=path, role=role, status=status)
            if role is not None
            else _in_code(path, status, before, after, runs_doctests)
        )
        if change is not None:
            found.append(change)
    return found


def _in_code(
    path: str,
    status: Literal["created", "modified", "deleted"],
    before: str | None,
    after: str | None,
    runs_doctests: RunsDoctests,
) -> GateChange | None:
    """A change to a file that is not a gate file by its name, that is one by what changed:
    code that reaches into the test runner, or tests inside the file (Rust's, doctests) changed."""
    if path.endswith(".py") and (reached := new_references(before, after)):
        return GateChange(
            path=path, role="runner_config", status=status, reason=_reaching(path, reached)
        )
    if status == "created":  # new code may bring new tests
        return None
    owners = changed_examples(path, before, after) if may_hold_doctests(path) else []
    if owners and runs_doctests(path):
        return GateChange(
            path=path,
            role="test",
            status=status,
            tests_only=True,
            reason=_doctests_changed(path, owners),
        )
    if may_hold_tests(path) and tests_changed(before, after):
        return GateChange(path=path, role="test", status=status, tests_only=True)
    return None


def _reaching(path: str, references: Sequence[str]) -> str:
    return (
        f"{path} now reaches into the test runner ({_few(references, '`')}): code outside "
        "the tests that imports, patches or hooks into pytest, doctest or unittest changes "
        "how the tests run, like a conftest.py"
    )


def _doctests_changed(path: str, owners: Sequence[str]) -> str:
    whole = (
        "the module docstring"
        if path.endswith(".py")
        else "its doc comments"
        if path.endswith(".rs")
        else "the file"
    )
    names = [{"": whole, "__doc__": "`__doc__` set at run time"}.get(o, o) for o in owners]
    return (
        f"{path}: doctest examples changed or removed ({_few(names)}); the tests run "
        "them, so their expected output is a test"
    )


def _few(items: Sequence[str], quote: str = "", cap: int = 3) -> str:
    shown = ", ".join(f"{quote}{item}{quote}" for item in items[:cap])
    return shown + (" …" if len(items) > cap else "")
