"""Which files' doctests a repository's tests run, read from its test command and from the lines
of its tests and test configuration that name doctests.

pytest runs the docstrings of modules under `--doctest-modules` (xdoctest and doctestplus have
their own switches), and text files matching `--doctest-glob` (`test*.txt` by default); a test
may run them itself (`doctest.testmod`, `DocTestSuite`; `doctest.testfile("README.rst")`,
`DocFileSuite`); a command may run a doctest runner over the docs (`python -m doctest`,
`sphinx-build -b doctest`, `make doctest`). `cargo test` runs a Rust library's doc-tests unless
it selects its targets (`--lib`, `--tests`, … without `--doc`); `cargo nextest` runs none. Pure:
the caller finds the lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from fnmatch import fnmatchcase
from pathlib import PurePosixPath

from agent.gate.doctests import TEXT_SUFFIXES
from agent.gate.gate_files import command_files, gate_role
from agent.gate.testing_sections import is_sectioned
from agent.models import Record

GREP_PATTERNS = ("doctest", "DocFileSuite")  # what the caller looks for, case aside
PYTEST_DEFAULT_GLOB = "test*.txt"
_MODULES = re.compile(
    r"--doctest-modules|\btestmod\b|DocTestSuite|DocTestFinder|"
    r"run_docstring_examples|xdoctest|--doctest-plus|doctest_plus\s*=\s*"
    r"(?:true|enabled)",
    re.IGNORECASE,
)
_GLOB = re.compile(r"--doctest-glob[=\s]+[\"']?([^\s\"',\]]+)")
_RST = re.compile(r"--doctest-rst|doctest_rst\s*=\s*(?:true|enabled)", re.IGNORECASE)
_FILE_CALL = re.compile(r"\btestfile\b|DocFileSuite")
_NAMED = re.compile(r"[\"']([^\"'\s]+\.(?:txt|rst|rest|md|markdown|text|doctest))[\"']")
_RUNNER = re.compile(r"(?:^|\s)(?:-m\s+doctest|-b\s+doctest|doctest)(?:\s|$)")
_CARGO_TARGETS = re.compile(
    r"(?:^|\s)--(?:lib|bins?|tests?|examples?|benches|bench|all-targets)"
    r"(?=[\s=]|$)"
)


class DoctestScope(Record):
    """The files whose doctests the tests run."""

    modules: bool = False  # the docstrings of Python source files
    rust: bool = True  # the doc comments of Rust source files
    every_text: bool = False  # every text file (a doctest runner over the docs)
    globs: tuple[str, ...] = (PYTEST_DEFAULT_GLOB,)
    named: tuple[str, ...] = ()  # text files a test names

    def covers(self, path: str) -> bool:
        """Whether the tests run the doctests of the file at `path`."""
        pure = PurePosixPath(path)
        if pure.suffix == ".py":
            return self.modules
        if pure.suffix == ".rs":
            return self.rust
        return (
            (self.every_text and pure.suffix.lower() in TEXT_SUFFIXES)
            or any(fnmatchcase(path if "/" in glob else pure.name, glob) for glob in self.globs)
            or any(
                path == name.lstrip("./") or path.endswith("/" + name.lstrip("./"))
                for name in self.named
            )
        )


def doctest_scope(lines: Iterable[tuple[str, str]], test_command: str | None) -> DoctestScope:
    """The scope from the test command and from `lines` ((path, line) of the repository's files
    that mention doctests): only its tests and test configuration count."""
    command = test_command or ""
    named_files = command_files(test_command)
    counted = [line for path, line in lines if _is_gate_file(path, named_files)]
    counted.append(command)
    globs = [glob for line in counted for glob in _GLOB.findall(line)]
    if any(_RST.search(line) for line in counted):
        globs.append("*.rst")
    named = [name for line in counted if _FILE_CALL.search(line) for name in _NAMED.findall(line)]
    runner = bool(_RUNNER.search(command))
    return DoctestScope(
        modules=runner or any(_MODULES.search(line) for line in counted),
        rust=_cargo_doctests(command),
        every_text=runner,
        globs=(PYTEST_DEFAULT_GLOB, *dict.fromkeys(globs)),
        named=tuple(dict.fromkeys(named)),
    )


def _cargo_doctests(command: str) -> bool:
    """Whether a test command may run Rust doc-tests: any but one that names cargo's targets
    without `--doc`, or runs nextest (a wrapper such as `make test` may well run them)."""
    flags = command.split(" -- ", 1)[0]  # what follows `--` goes to the test binaries
    if "nextest" in flags:
        return False
    return "--doc" in flags.split() or not _CARGO_TARGETS.search(flags)


def _is_gate_file(path: str, named_files: set[str]) -> bool:
    """Tests, test configuration and the files the test command names."""
    return (
        gate_role(path) in ("runner_config", "test") or is_sectioned(path) or (path in named_files)
    )
