"""A test command that runs every test, for mining: the flags that stop a runner at its first
failure taken out of the command, and the runner told to carry on, where the command shows how.

Mining runs the tests before a fix, when its new tests fail: a runner that stops at the first
failure (`pytest -x`, `--maxfail`, a collection error, plain `cargo test`, `jest --bail`) leaves
every later test unrun, and a test that did not run is neither failing nor passing. Only a
command that is one plain invocation of a known runner (agent.gate.runner_command: `pytest`,
`cargo test`, `jest`, `npx vitest` …) is rewritten; any other is left as it is, and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from agent.config.files import TestingConfig
from agent.gate.runner_command import invocation, plain_words

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
    found = invocation(command)
    if found is None:
        if plain_words(command) is not None:
            return FullRun(
                testing,
                "the test command's runner is not one cra can tell to keep going: it runs as it is",
            )
        return FullRun(testing, "the test command is not one plain command: it runs as it is")
    runner = "js" if found.runner in ("jest", "vitest") else found.runner
    rewritten = _REWRITES[runner](list(found.argv))
    if rewritten == list(found.argv):
        return FullRun(testing, f"{runner} runs every test already")
    new = replace(found, argv=tuple(rewritten)).command
    return FullRun(
        testing.model_copy(update={"test_command": new}), f"{runner} told to run every test: {new}"
    )


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
