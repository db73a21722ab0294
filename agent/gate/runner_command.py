"""A test command read as one plain invocation of a known test runner (pytest, cargo test,
jest, vitest), and that invocation told to write the runner's JSON report.

Only a command that is one plain command — no shell syntax, only `NAME=value` words before it —
is read: `jest …`, `npx jest …`, `node --experimental-vm-modules node_modules/.bin/jest …`,
`vitest run …`, `pnpm exec vitest …`. Any other (`npm test`, a shell line) is left as it is.
jest and vitest read no environment variable that asks for a report (pytest's PYTEST_ADDOPTS
does, agent.gate.validation), so their report is asked for on the command line itself.
Pure functions: text in, text out.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

_SHELL = re.compile(r"[;&|<>`$(){}\n]")  # anything but one plain command
_LAUNCHERS = {"npx": (), "bunx": (), "yarn": ("exec",), "pnpm": ("exec",)}
_NPX_FLAGS = {"--yes", "-y", "--no-install", "--no", "--offline", "--quiet", "-q"}
_JS_BINARIES = {"jest": "jest", "jest.js": "jest", "vitest": "vitest", "vitest.mjs": "vitest"}
_NOT_A_RUN = {  # what makes jest or vitest do something else than run the tests once
    "jest": {"--watch", "--watchAll", "--listTests", "--showConfig", "--init", "--clearCache"},
    "vitest": {"watch", "dev", "bench", "init", "list", "typecheck", "--watch", "-w"},
}
_ASKS_ALREADY = ("--json", "--outputFile", "--reporter=json", "--help", "--version", "-h")


@dataclass(frozen=True)
class Invocation:
    """A plain test command's words: `env` (leading `NAME=value`), `launcher` (`npx`,
    `node --flag`… or nothing), then `argv`, the runner's own words, and which runner it is."""

    env: tuple[str, ...]
    launcher: tuple[str, ...]
    argv: tuple[str, ...]
    runner: str  # "pytest", "cargo", "jest" or "vitest"

    @property
    def command(self) -> str:
        """The invocation as one command line again."""
        return shlex.join([*self.env, *self.launcher, *self.argv])


def plain_words(command: str) -> list[str] | None:
    """The words of `command` when it is one plain command, else None."""
    if not command.strip() or _SHELL.search(command):
        return None
    try:
        return shlex.split(command)
    except ValueError:
        return None


def invocation(command: str) -> Invocation | None:
    """The plain invocation of a known runner that `command` is, or None."""
    words = plain_words(command)
    if words is None:
        return None
    n = 0
    while n < len(words) and re.fullmatch(r"[A-Za-z_]\w*=.*", words[n]):
        n += 1
    env, rest = tuple(words[:n]), words[n:]
    start = _runner_start(rest)
    if start is None:
        return None
    runner = _runner(rest[start:])
    if runner is None:
        return None
    return Invocation(env, tuple(rest[:start]), tuple(rest[start:]), runner)


def _runner_start(words: list[str]) -> int | None:
    """Where the runner's own words begin, after a launcher (`npx`, `pnpm exec`, `node
    --flags`)."""
    if not words:
        return None
    first = PurePosixPath(words[0]).name
    i = 1
    if first in _LAUNCHERS:
        i += 1 if words[1:2] and words[1] in _LAUNCHERS[first] else 0
        while first in ("npx", "bunx") and i < len(words) and words[i] in _NPX_FLAGS:
            i += 1
        return i if i < len(words) and _is_js(words[i]) else None
    if first == "node":
        while i < len(words) and words[i].startswith("-"):
            i += 1
        return i if i < len(words) and _is_js(words[i]) else None
    return 0


def _is_js(word: str) -> bool:
    return PurePosixPath(word).name in _JS_BINARIES


def _runner(argv: list[str]) -> str | None:
    program = PurePosixPath(argv[0]).name
    if program in ("pytest", "py.test") or (
        re.fullmatch(r"python[\d.]*", program) and argv[1:3] == ["-m", "pytest"]
    ):
        return "pytest"
    if program == "cargo" and argv[1:2] == ["test"]:
        return "cargo"
    return _JS_BINARIES.get(program)


def with_js_report(command: str, report: str) -> str | None:
    """`command` asking jest or vitest to write its JSON report to `report` as well as print
    what it prints; None when it is no plain jest or vitest run, or asks for a report of its own
    (then it runs as it is)."""
    found = invocation(command)
    if found is None or found.runner not in ("jest", "vitest"):
        return None
    argv = found.argv
    if any(w in _NOT_A_RUN[found.runner] or w.startswith(_ASKS_ALREADY) for w in argv[1:]):
        return None
    if found.runner == "jest":
        extra = ["--json", f"--outputFile={report}"]
    elif any(w.startswith("--reporter") for w in argv):  # their reporters, and the JSON one
        extra = ["--reporter=json", f"--outputFile={report}"]
    else:  # naming a reporter drops the default one: named again, for the output
        extra = ["--reporter=default", "--reporter=json", f"--outputFile={report}"]
    cut = argv.index("--") if "--" in argv else len(argv)
    return replace(found, argv=(*argv[:cut], *extra, *argv[cut:])).command
