"""Test outcomes from ava's default reporter.

ava prints one line per test as it ends, in no fixed order (`✔ calc › add`, `✔ slow (200ms)`,
`✘ [fail]: calc › mul`, `- [skip] calc › div`, `- [todo] calc › later`), the title prefixed with
its file (`calc ›`: the path without its test folder and extension) when more than one file ran;
then, after a `─` line, each failure again under its title alone. A failure's line adds the
assertion's message after its title (`✘ [fail]: with message one is not two`), so its id is the
longest title of the failures' section that begins the line: the same test has the same id
when it fails and when it passes, whatever the message. A failure's section names the test's
file (`test/calc.js:3`) when an assertion failed, else its stack does. Pure functions: lines in,
data out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.gate.testreport.frames import frame_of_test
from agent.gate.testreport.tap import numbered
from agent.models import TestOutcome

_PASSED = re.compile(r"^ *✔ (?:\[expected fail\] )?(?P<name>.+?)(?: \(\d+m?s\))?$")
_FAILED = re.compile(r"^ *✘ \[[a-z ]+\]:? (?P<name>.+)$")
_SKIPPED = re.compile(r"^ *- \[(?:skip|todo)\] (?P<name>.+)$")
_RULE = re.compile(r"^ *─$")
_TITLE = re.compile(r"^  (?P<title>\S.*)$")
_AT_LINE = re.compile(
    r"^  (?P<path>[^\s:]+\.[cm]?[jt]sx?):\d+$"
)  # `  test/calc.js:4` under a title
_SUMMARY = re.compile(r"^ *\d+ (?:tests? (?:passed|failed)|known failures?)$")


def is_ava(lines: Sequence[str]) -> bool:
    """True when the output holds ava's summary or its marks of a failed or a skipped test."""
    return any(
        _FAILED.match(line) or _SKIPPED.match(line) or _SUMMARY.match(line) for line in lines
    )


def ava_outcomes(lines: Sequence[str]) -> dict[str, TestOutcome]:
    """Every test ava's lines name, with its outcome."""
    rule = next((i for i, line in enumerate(lines) if _RULE.match(line)), len(lines))
    titles = {m["title"] for line in lines[rule + 1 :] if (m := _TITLE.match(line))}
    named: list[tuple[str, TestOutcome]] = []
    for line in lines[:rule]:
        if match := _PASSED.match(line):
            named.append((match["name"], "passed"))
        elif match := _FAILED.match(line):
            named.append((_title(match["name"], titles), "failed"))
        elif match := _SKIPPED.match(line):
            named.append((match["name"], "skipped"))
    return numbered(named)


def _title(text: str, titles: set[str]) -> str:
    """The failed test's title: the longest title of the failures' section that is the text or
    begins it before a space; the whole text when none does."""
    found = [t for t in titles if text == t or text.startswith(t + " ")]
    return max(found, key=len) if found else text


def ava_files(lines: Sequence[str]) -> dict[str, str]:
    """The file of each failed test, by id: the `path:line` its failure's section shows under
    its title, else the test function's frame in the section's stack."""
    failed = {t for t, o in ava_outcomes(lines).items() if o == "failed"}
    rule = next((i for i, line in enumerate(lines) if _RULE.match(line)), len(lines))
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines[rule + 1 :]:
        title = _TITLE.match(line)
        if title and title["title"] in failed and title["title"] not in sections:
            current = sections[title["title"]] = []
        elif current is not None:
            current.append(line)
    return {t: where for t, text in sections.items() if (where := _where(text))}


def _where(section: Sequence[str]) -> str | None:
    """The test's file in its failure's section."""
    at = next((m for line in section if (m := _AT_LINE.match(line))), None)
    return at["path"] if at else frame_of_test(section)
