"""Test outcomes read from a test run: per-test outcomes and counts, from a report or the output.

The sources, best first: jest's or vitest's JSON report (agent.gate.testreport.jsreport), a
pytest JUnit XML report (cra asks pytest for one through PYTEST_ADDOPTS), the summary line a
known runner prints (pytest, unittest, go test, cargo test, jest, vitest, mocha, node's test
runner, TAP's plan), and the test names the output lists.
Pure functions: text in, data out.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath

from agent.gate.testreport.ava import ava_outcomes, is_ava
from agent.gate.testreport.files import files_of, stopped_in
from agent.gate.testreport.jsids import js_outcomes
from agent.gate.testreport.jsreport import JsReport, parse_js_report
from agent.gate.testreport.mocha import is_mocha, mocha_outcomes
from agent.gate.testreport.summaries import (
    PYTEST_TAIL_CHARS,
    counts_of,
    merge_outcome,
    output_lines,
    pytest_incomplete,
    summary_of,
    why_incomplete,
)
from agent.gate.testreport.tap import (
    spec_outcomes,
    tap_outcomes,
)
from agent.models import TestOutcome, TestReport

JUNIT_MAX_BYTES = 50_000_000  # a larger report is not read (the output's summary still is)

# --- test names in the output ----------------------------------------------------------------

# Trailing timings and counts: " (4 ms)", " 3ms", " (2 tests | 1 failed)".
_TIME = r"\d+(?:\.\d+)?\s*m?s"
_SUFFIX = re.compile(rf"(?:\s+(?:\({_TIME}\)|{_TIME}|\(\d+ tests?[^)]*\)))+$")
_FAILING = (
    re.compile(r"^(?:FAILED|ERROR) (?P<id>[^\s(].*?)(?: - .*)?$"),  # pytest short summary
    re.compile(r"^(?P<id>\S+::\S+) (?:FAILED|ERROR)\b"),  # pytest -v
    re.compile(r"^\[gw\d+\] \[\s*\d+%\] (?:FAILED|ERROR) (?P<id>\S+)"),  # pytest-xdist -v
    re.compile(r"^(?:FAIL|ERROR): (?P<name>\w+) \((?P<where>[\w.]+)\)"),  # unittest
    re.compile(r"^(?P<name>\w+) \((?P<where>[\w.]+)\)(?: .*)? \.\.\. (?:FAIL|ERROR)$"),
    re.compile(r"^\s*--- FAIL: (?P<id>\S+) \("),  # go test
    re.compile(r"^test (?P<id>.+?) \.\.\. FAILED$"),  # cargo test
    re.compile(r"^\s*FAIL {1,2}(?P<id>\S.*?)\s*$"),  # jest / vitest
    re.compile(r"^\s*[✕×✗✖] (?P<id>(?!failing tests:$).+)$"),  # jest / vitest / node spec
    re.compile(r"^\s*● (?P<id>(?!Test suite failed to run|Console).+?)$"),  # jest
)
_PASSING = (
    re.compile(r"^PASSED (?P<id>\S+)"),  # pytest -rA
    re.compile(r"^(?P<id>\S+::\S+) PASSED\b"),  # pytest -v
    re.compile(r"^\[gw\d+\] \[\s*\d+%\] PASSED (?P<id>\S+)"),  # pytest-xdist -v
    re.compile(r"^(?P<name>\w+) \((?P<where>[\w.]+)\)(?: .*)? \.\.\. ok$"),  # unittest -v
    re.compile(r"^\s*--- PASS: (?P<id>\S+) \("),  # go test -v
    re.compile(r"^test (?P<id>.+?) \.\.\. ok$"),  # cargo test
    re.compile(r"^\s*PASS {1,2}(?P<id>\S.*?)\s*$"),  # jest
    re.compile(r"^\s*[✓✔√] (?P<id>.+)$"),  # jest / vitest
)
_NOT_RUN: tuple[tuple[re.Pattern[str], TestOutcome], ...] = (
    (re.compile(r"^(?P<id>\S+::\S+) SKIPPED\b"), "skipped"),  # pytest -v
    (re.compile(r"^(?P<id>\S+::\S+) XFAIL\b"), "xfailed"),
    (re.compile(r"^(?P<id>\S+::\S+) XPASS\b"), "xpassed"),
    (re.compile(r"^XFAIL (?P<id>\S+::\S+)"), "xfailed"),  # pytest -rA
    (re.compile(r"^XPASS (?P<id>\S+::\S+)"), "xpassed"),
    (re.compile(r"^(?P<name>\w+) \((?P<where>[\w.]+)\)(?: .*)? \.\.\. skipped\b"), "skipped"),
    (
        re.compile(r"^(?P<name>\w+) \((?P<where>[\w.]+)\)(?: .*)? \.\.\. expected failure$"),
        "xfailed",
    ),
    (
        re.compile(r"^(?P<name>\w+) \((?P<where>[\w.]+)\)(?: .*)? \.\.\. unexpected success$"),
        "xpassed",
    ),
    (re.compile(r"^\s*--- SKIP: (?P<id>\S+) \("), "skipped"),  # go test -v
    (re.compile(r"^test (?P<id>.+?) \.\.\. ignored\b"), "skipped"),  # cargo test
)


def _test_id(match: re.Match[str]) -> str:
    """One id form per match: unittest's `module.Class.test`, else the name without timing."""
    groups = match.groupdict()
    if groups.get("name"):
        name, where = groups["name"], groups["where"]
        return where if where.endswith(f".{name}") else f"{where}.{name}"
    return _SUFFIX.sub("", groups["id"].strip())


def _parse(lines: list[str], patterns: Iterable[re.Pattern[str]]) -> list[str]:
    """The ids the first matching pattern of each line names, deduplicated, in order."""
    found: dict[str, None] = {}
    for line in lines:
        for pattern in patterns:
            match = pattern.match(line)
            if match:
                found.setdefault(_test_id(match), None)
                break
    return list(found)


def named_tests(output: str) -> tuple[list[str], list[str]]:
    """The failing and the passing test ids the output names (pytest, unittest, go test, cargo
    test, jest, vitest, node and TAP), read in one pass."""
    lines = output_lines(output)
    listed = _listed(lines, _runner(lines))
    if listed is None:
        return _parse(lines, _FAILING), _parse(lines, _PASSING)
    return (
        [test for test, outcome in listed.items() if outcome in ("failed", "error")],
        [test for test, outcome in listed.items() if outcome == "passed"],
    )


def _runner(lines: list[str]) -> str | None:
    """The runner whose summary the output ends with, or None."""
    summary = summary_of(lines)
    return summary[0] if summary else None


def _listed(lines: list[str], runner: str | None) -> dict[str, TestOutcome] | None:
    """The outcomes of a TAP stream, of node's, mocha's or ava's spec reporter or of jest's
    and vitest's reporters, read as a whole (a test's id names its suites); None for other
    runners' output, read line by line."""
    if runner == "js":
        return mocha_outcomes(lines) if is_mocha(lines) else js_outcomes(lines)
    if runner == "tap":
        return tap_outcomes(lines)
    if runner == "node":
        return spec_outcomes(lines)
    return ava_outcomes(lines) if runner is None and is_ava(lines) else None


def parse_outcomes(output: str) -> dict[str, TestOutcome]:
    """Every test id the output names with its outcome (the worst, when named twice)."""
    lines = output_lines(output)
    return _outcomes(lines, _runner(lines))


def _outcomes(lines: list[str], runner: str | None) -> dict[str, TestOutcome]:
    listed = _listed(lines, runner)
    if listed is not None:
        return listed
    outcomes: dict[str, TestOutcome] = {}
    for test_id in _parse(lines, _PASSING):
        outcomes[test_id] = "passed"
    for line in lines:
        for pattern, outcome in _NOT_RUN:
            match = pattern.match(line)
            if match:
                merge_outcome(outcomes, _test_id(match), outcome)
                break
    for test_id in _parse(lines, _FAILING):
        merge_outcome(outcomes, test_id, "failed")
    return outcomes


# --- pytest's JUnit XML ----------------------------------------------------------------------


def _junit_id(case: ET.Element) -> str:
    """pytest's node id from a testcase (junit_family=xunit1 carries the file)."""
    name = case.get("name", "")
    classname = case.get("classname", "")
    file = case.get("file")
    if not file:
        return f"{classname}::{name}" if classname else name
    module = str(PurePosixPath(file).with_suffix("")).replace("/", ".")
    if not classname and name == module:  # the module could not be collected: the file fails
        return file
    rest = classname[len(module) + 1 :] if classname.startswith(module + ".") else ""
    parts = [file, *(rest.split(".") if rest else []), name]
    return "::".join(p for p in parts if p)


def _junit_outcome(case: ET.Element) -> TestOutcome:
    if case.find("error") is not None:
        return "error"
    if case.find("failure") is not None:
        return "failed"
    skipped = case.find("skipped")
    if skipped is not None:
        return "xfailed" if skipped.get("type") == "pytest.xfail" else "skipped"
    return "passed"


def parse_junit(xml_text: str) -> dict[str, TestOutcome] | None:
    """Per-test outcomes of a JUnit XML report; None when it is not one."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError:
        return None
    if root.tag not in ("testsuites", "testsuite"):
        return None
    outcomes: dict[str, TestOutcome] = {}
    for case in root.iter("testcase"):
        merge_outcome(outcomes, _junit_id(case), _junit_outcome(case))
    return outcomes


# --- the report ------------------------------------------------------------------------------


def read_report(
    output: str, junit_xml: str | None, js: JsReport | None = None, *, roots: Sequence[str] = ()
) -> TestReport:
    """What the run says about its tests: outcomes and counts from the best source there is,
    and the files of the tests it places (relative to the worktree, which `roots` are)."""
    reported = parse_js_report(js) if js else None
    if reported is not None:
        return TestReport(source="json", runner="js", counts=counts_of(reported), outcomes=reported)
    junit = parse_junit(junit_xml) if junit_xml else None
    if junit is not None:
        tail = output_lines(output[-PYTEST_TAIL_CHARS:])
        return TestReport(
            source="junit",
            runner="pytest",
            counts=counts_of(junit),
            outcomes=junit,
            incomplete=pytest_incomplete(tail),
        )
    lines = output_lines(output)
    summary = summary_of(lines)
    named = _outcomes(lines, summary[0] if summary else None)
    listed = bool(named) and any(o != "failed" for o in named.values())
    if summary is not None and (summary[0] != "go" or not listed):
        runner, counts = summary
        # TAP's, node's, mocha's and jest's verbose reporters list every test: named, when the
        # names add up to the counts
        every = runner in ("tap", "node", "js") and counts_of(named) == counts
        return TestReport(
            source="names" if every else "summary",
            runner=runner,
            counts=counts,
            outcomes=named,
            incomplete=why_incomplete(runner, lines),
            files=files_of(lines, runner, roots),
            stopped_in=stopped_in(lines, roots, reported=True),
        )
    if listed:  # every test named with its outcome (go test -v, cargo, unittest -v, ava …)
        files = files_of(lines, summary[0] if summary else None, roots)
        return TestReport(
            source="names",
            counts=counts_of(named),
            outcomes=named,
            files=files,
            stopped_in=stopped_in(lines, roots, reported=True),
        )
    return TestReport(
        source="none", outcomes=named, stopped_in=stopped_in(lines, roots, reported=False)
    )
