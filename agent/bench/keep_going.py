"""A test command that runs every test, for mining: the flags that stop a runner at its first
failure taken out of the command, and the runner told to carry on, where the command shows how.

Mining runs the tests before a fix, when its new tests fail: a runner that stops at the first
failure (`pytest -x`, `--maxfail`, a collection error, plain `cargo test`, `jest --bail`) leaves
every later test unrun, and a test that did not run is neither failing nor passing. Only a
command that is one plain invocation of a known runner is rewritten; any other is left as it is,
and says so.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath

from agent.config.files import TestingConfig

_SHELL = re.compile(r"[;&|<>`$(){}\n]")  # anything but one plain command
_PYTEST_STOPS = {"-x", "--exitfirst", "--sw", "--stepwise", "--sw-skip", "--stepwise-skip"}
_PYTEST_VALUED = ("--maxfail",)
_JS_STOPS = {"--bail", "-b"}


@dataclass(frozen=True)
class FullRun:
    """The testing config mining replays with, and what was changed or could not be."""

    testing: TestingConfig
    note: str


def full_run(testing: TestingConfig) -> FullRun:
    """`testing` with a test command that does not stop early, where it can be made so."""
    command = testing.test_command or ""
    words = _words(command)
    if words is None:
        return FullRun(testing, "the test command is not one plain command: it runs as it is")
    env, argv = _split_env(words)
    runner = _runner(argv)
    if runner is None:
        return FullRun(
            testing,
            "the test command's runner is not one cra can tell to keep going: it runs as it is",
        )
    rewritten = _REWRITES[runner](argv)
    if rewritten == argv:
        return FullRun(testing, f"{runner} runs every test already")
    new = shlex.join([*env, *rewritten])
    return FullRun(
        testing.model_copy(update={"test_command": new}), f"{runner} told to run every test: {new}"
    )


def _words(command: str) -> list[str] | None:
    if not command.strip() or _SHELL.search(command):
        return None
    try:
        return shlex.split(command)
    except ValueError:
        return None


def _split_env(words: list[str]) -> tuple[list[str], list[str]]:
    """Leading NAME=value assignments, and the command after them."""
    n = 0
    while n < len(words) and re.fullmatch(r"[A-Za-z_]\w*=.*", words[n]):
        n += 1
    return words[:n], words[n:]


def _runner(argv: list[str]) -> str | None:
    if not argv:
        return None
    program = PurePosixPath(argv[0]).name
    if program in ("pytest", "py.test") or (
        re.fullmatch(r"python[\d.]*", program) and argv[1:3] == ["-m", "pytest"]
    ):
        return "pytest"
    if program == "cargo" and argv[1:2] == ["test"]:
        return "cargo"
    if program in ("jest", "vitest"):
        return "js"
    return None


def _pytest(argv: list[str]) -> list[str]:
    """Without -x, --maxfail and --stepwise (also inside grouped short flags), and told to go
    on past collection errors and not to stop at any number of failures (after the ini file's
    addopts, which come first)."""
    out: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
            continue
        if word in _PYTEST_STOPS:
            continue
        if word in _PYTEST_VALUED:
            skip = True
            continue
        if word.startswith(tuple(f"{v}=" for v in _PYTEST_VALUED)):
            continue
        if re.fullmatch(r"-[qvsxl]{2,}", word) and "x" in word:  # grouped boolean flags
            word = word.replace("x", "")
        out.append(word)
    extra = [w for w in ("--maxfail=0", "--continue-on-collection-errors") if w not in out]
    return [*out, *extra]


def _cargo(argv: list[str]) -> list[str]:
    """`cargo test --no-fail-fast`: every test target runs even when one fails."""
    if "--no-fail-fast" in argv:
        return argv
    cut = argv.index("--") if "--" in argv else len(argv)
    return [*argv[:cut], "--no-fail-fast", *argv[cut:]]


def _js(argv: list[str]) -> list[str]:
    """jest and vitest without --bail."""
    return [w for w in argv if w not in _JS_STOPS and not w.startswith("--bail=")]


_REWRITES = {"pytest": _pytest, "cargo": _cargo, "js": _js}
