"""The documentation's `make try` and `cra runs` examples are what the programs print: this test
runs the console blocks' commands (`make try` as examples/try.py) and compares their output.

Ids, dates, token counts and timings differ from run to run and are compared as placeholders;
a `…` line on a page stands for any number of lines.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.first_hour import clean_env, program

ROOT = Path(__file__).resolve().parents[2]
# `make try` (Getting started), then `cra runs` on its run (Using the agent alone): in that order
PAGES = (ROOT / "docs" / "getting-started.md", ROOT / "docs" / "cli.md")
SHOWN_DIR = "/tmp/cra-try"  # where the pages' examples ran
VOLATILE = (
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<id>"),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d"), "<date>"),
    (re.compile(r"\b\d+ ms\b"), "<n> ms"),
    (re.compile(r"tokens: \d+"), "tokens: <n>"),
    (re.compile(r"\d+\+\d+ tokens"), "<n>+<n> tokens"),
    (re.compile(r"committed alone as [0-9a-f]{12}"), "committed alone as <commit>"),
    # where commands run depends on the machine (bubblewrap installed or not)
    (re.compile(r"^cra: repository commands run .*"), "cra: <where commands run>"),
    (re.compile(r"^sandbox: .*"), "sandbox: <kind>"),
)


def console_blocks() -> list[tuple[str, list[str]]]:
    """(command, output lines) of each `$ ` line of the pages' console blocks."""
    found: list[tuple[str, list[str]]] = []
    text = "\n".join(page.read_text("utf-8") for page in PAGES)
    for match in re.finditer(r"^([ \t]*)```console\n(.*?)^[ \t]*```", text, re.M | re.S):
        indent = len(match.group(1))
        for line in match.group(2).splitlines():
            line = line[indent:]
            if line.startswith("$ "):
                found.append((line[2:], []))
            elif found:
                found[-1][1].append(line)
    return found


def normal(line: str, tmp: Path) -> str:
    line = line.replace(str(tmp), SHOWN_DIR).rstrip()
    for pattern, placeholder in VOLATILE:
        line = pattern.sub(placeholder, line)
    return line


def assert_matches(shown: list[str], printed: list[str], tmp: Path, command: str) -> None:
    """Every line shown appears in order; `…` skips lines, anything else must be the next."""
    actual = [normal(line, tmp) for line in printed]
    position, skipping = 0, False
    for expected in (normal(line, tmp) for line in shown):
        if expected == "…":
            skipping = True
            continue
        rest = actual[position:] if skipping else actual[position : position + 1]
        assert expected in rest, (
            f"the docs show, after `{command}`:\n  {expected}\nbut it printed:\n"
            + "\n".join(actual)
        )
        position += rest.index(expected) + 1
        skipping = False


def argv_of(command: str, tmp: Path, run_id: str) -> list[str]:
    """The argv a command on a page stands for, in this test's directory."""
    if command == "make try":
        return [sys.executable, str(ROOT / "examples" / "try.py"), "--dir", str(tmp)]
    words = command.replace(SHOWN_DIR, str(tmp)).split()
    assert words[0] == "cra", command
    return [*program("cra"), *(run_id if VOLATILE[0][0].fullmatch(w) else w for w in words[1:])]


@pytest.mark.timeout(240)
def test_the_examples_of_make_try_and_cra_runs_are_what_they_print(tmp_path: Path) -> None:
    blocks = console_blocks()
    assert [command for command, _ in blocks][:1] == ["make try"]
    assert (
        sum(
            command.split()[-2:-1] == ["runs"] or command.endswith(" runs") for command, _ in blocks
        )
        >= 2
    )
    env = clean_env(tmp_path / "home")
    run_id = ""
    for command, shown in blocks:
        done = subprocess.run(
            argv_of(command, tmp_path, run_id),
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=200,
            check=False,
        )
        printed = done.stdout
        assert done.returncode == 0, printed
        assert_matches(shown, printed.splitlines(), tmp_path, command)
        if not run_id:
            run_id = re.search(r"cra: run (\S+) started", printed).group(1)  # type: ignore[union-attr]
