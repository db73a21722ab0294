"""What `cargo test`'s output needs before it is read: stable doc-test names, and whether the
run stopped early. Pure functions: lines in, data out.
"""

from __future__ import annotations

import re

# A doc-test is named by its line: `test src/lib.rs - add (line 9) - compile fail ... ok`.
_DOCTEST = re.compile(r"^test (?P<item>\S+ -(?: .*?)?) \(line (?P<n>\d+)\)(?P<rest>.* \.\.\. .*)$")
# `cargo test` stops at the first test target that fails; `--no-fail-fast` runs them all and
# ends with `error: 2 targets failed:`. A workspace's hint names the package (`-p a --doc`).
_STOP = re.compile(r"^error: (?:doc)?test failed, to rerun pass `(?P<target>[^`]+)`$")
_ALL_RAN = re.compile(r"^error: \d+ targets? failed:$")


def stable_doctest_names(lines: list[str]) -> list[str]:
    """The lines, each doc-test named without its line number, which an edit above it changes:
    an item's first doc-test (by line) is `src/lib.rs - add`, its second `src/lib.rs - add #2`.
    (Doc-tests run in parallel: the output's order is no order.)"""
    found = [(i, m) for i, line in enumerate(lines) if (m := _DOCTEST.match(line))]
    lines_of: dict[str, set[int]] = {}
    for _, match in found:
        lines_of.setdefault(match["item"], set()).add(int(match["n"]))
    for i, match in found:
        order = sorted(lines_of[match["item"]]).index(int(match["n"])) + 1
        number = f" #{order}" if order > 1 else ""
        lines[i] = f"test {match['item']}{number}{match['rest']}"
    return lines


def cargo_incomplete(lines: list[str]) -> str | None:
    """Why `cargo test`'s results are incomplete — it stopped at a failing test target, and
    the targets after it did not run — or None. A lone package's doc-tests are its last
    target; in a workspace, other packages' doc-tests come after them."""
    stops = [m["target"] for line in lines if (m := _STOP.match(line))]
    if not stops or stops[-1] == "--doc" or any(_ALL_RAN.match(line) for line in lines):
        return None
    return (
        f"cargo test stopped at the first failing test target ({stops[-1]}): the targets "
        "after it did not run (cargo test --no-fail-fast runs them all)"
    )
