"""jest's and vitest's JSON report (`jest --json`, vitest's `json` reporter, one format): every
test's outcome, named the way agent.gate.testreport.jsids names it from their output.

A test file's path in the report is absolute, as the command saw it; its id takes the path
relative to the folder the command ran in (`root`, where the runners' output is relative to
as well). A file that failed with no failing test in it could not run: it fails as a whole.
Pure functions: text in, data out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from agent.gate.testreport.jsids import js_test_id
from agent.models import TestOutcome

_OUTCOMES: Mapping[str, TestOutcome] = {
    "passed": "passed",
    "failed": "failed",
    "pending": "skipped",
    "skipped": "skipped",
    "todo": "skipped",
    "disabled": "skipped",
    "focused": "passed",
}


@dataclass(frozen=True)
class JsReport:
    """A JSON report's text, and the folder the command that wrote it ran in, as it saw it."""

    text: str
    root: str


def parse_js_report(found: JsReport) -> dict[str, TestOutcome] | None:
    """Each test's outcome in a jest or vitest JSON report, by id; None when it is not one."""
    try:
        report = json.loads(found.text)
    except ValueError:
        return None
    if not isinstance(report, dict) or not isinstance(report.get("testResults"), list):
        return None
    outcomes: dict[str, TestOutcome] = {}
    for result in report["testResults"]:
        if isinstance(result, dict) and isinstance(result.get("name"), str):
            outcomes.update(_file_outcomes(result, _relative(result["name"], found.root)))
    return outcomes


def _file_outcomes(result: Mapping[str, Any], file: str) -> dict[str, TestOutcome]:
    """One test file's tests, or the file itself when it failed with no failing test."""
    outcomes: dict[str, TestOutcome] = {}
    for case in result.get("assertionResults") or []:
        if not isinstance(case, dict):
            continue
        titles = [*(case.get("ancestorTitles") or []), case.get("title", "")]
        outcome = _OUTCOMES.get(str(case.get("status")), "skipped")
        test_id = js_test_id(file, (str(t) for t in titles))
        if outcomes.get(test_id) != "failed":  # a title repeated: the worse outcome
            outcomes[test_id] = outcome
    if result.get("status") == "failed" and "failed" not in outcomes.values():
        outcomes[file] = "failed"
    return outcomes


def _relative(path: str, root: str) -> str:
    """`path` relative to `root` when inside it (as the command saw both), else as it is."""
    file, base = PurePosixPath(path.removeprefix("file://")), PurePosixPath(root)
    return str(file.relative_to(base)) if file.is_relative_to(base) else str(file)
