"""Test ids of the TAP-family runners, mocha and ava: the same on every run, and naming the
test's file where the output says it (real output: tests/gate/runner_outputs/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.gate.testreport.outcomes import named_tests, parse_outcomes, read_report
from agent.models import TestCounts

OUTPUTS = Path(__file__).parent / "runner_outputs"


def output(name: str) -> str:
    return (OUTPUTS / name).read_text(encoding="utf-8")


RECORDED_TWICE = [
    "nodetap16",
    "nodetap16_reporter_tap",
    "tape",
    "node_two_files_tap",
    "node_two_files_spec",
    "mocha_spec",
    "ava",
    "ava_tap",
]


@pytest.mark.parametrize("name", RECORDED_TWICE)
def test_two_runs_of_the_same_suite_give_the_same_ids(name: str) -> None:
    first = parse_outcomes(output(f"{name}_run1.txt"))
    second = parse_outcomes(output(f"{name}_run2.txt"))
    assert first and first == second
    assert {"passed", "failed"} <= set(first.values())  # tape prints nothing of a skipped test


@pytest.mark.parametrize("name", ["nodetap16", "nodetap16_reporter_tap"])
def test_node_tap_ids_name_the_file_without_its_time(name: str) -> None:
    outcomes = parse_outcomes(output(f"{name}_run1.txt"))
    assert all(t.startswith(("test/calc.js", "test/strings.js")) for t in outcomes)
    assert not any("time=" in t for t in outcomes)
    assert outcomes["test/calc.js > ints > deep sub"] == "failed"
    assert outcomes["test/calc.js > ints > deep add"] == "passed"
    assert outcomes["test/calc.js > div"] == "skipped"
    assert outcomes["test/strings.js > todo thing"] == "skipped"


def test_tape_assertions_are_named_after_their_test() -> None:
    report = read_report(output("tape_run1.txt"), None)
    assert report.outcomes["mul > mul is wrong"] == "failed"
    assert report.outcomes["deep sub > should be strictly equal"] == "failed"
    assert report.outcomes["add > should be strictly equal"] == "passed"


def test_tapes_summary_is_counted_despite_its_spacing() -> None:
    report = read_report(output("tape_run1.txt"), None)  # `# pass  4`, `# fail  3`
    assert report.counts == TestCounts(passed=4, failed=3)
    assert report.source == "names"


def test_mocha_names_each_test_after_its_suites_with_its_numbered_failures() -> None:
    report = read_report(output("mocha_spec_run1.txt"), None)
    assert report.outcomes == {
        "top level": "passed",
        "calc > add": "passed",
        "calc > mul": "failed",
        "calc > div": "skipped",
        "calc > ints > deep add": "passed",
        "calc > ints > deep sub": "failed",
        "strings > concat": "passed",
        "strings > upper": "failed",
        "strings > slow one": "passed",
        "strings > outer > inner ok": "passed",
    }
    assert report.source == "names" and report.counts == TestCounts(passed=6, failed=3, skipped=1)


def test_mochas_colours_leave_its_ids_alone() -> None:
    coloured = parse_outcomes(output("mocha_spec_color.txt"))
    assert coloured == parse_outcomes(output("mocha_spec_run1.txt"))


def test_mochas_failure_list_names_the_failures_without_the_tree() -> None:
    lines = output("mocha_spec_run1.txt").splitlines()
    summary = next(i for i, line in enumerate(lines) if "passing (" in line)
    failures_only = "\n".join(lines[summary:])  # what a reporter without the tree leaves
    assert named_tests(failures_only)[0] == [
        "calc > mul",
        "calc > ints > deep sub",
        "strings > upper",
    ]


def test_ava_failures_are_read_with_their_file_prefix() -> None:
    assert named_tests(output("ava_run1.txt")) == (
        ["strings › upper", "calc › mul"],
        ["strings › concat", "calc › add"],
    )
    assert parse_outcomes(output("ava_run1.txt"))["calc › div"] == "skipped"


def test_an_ava_failures_message_is_not_part_of_its_id() -> None:
    outcomes = parse_outcomes(output("ava_messages.txt"))  # `✘ [fail]: throws Error thrown in test`
    assert outcomes == {
        "with message": "failed",
        "throws": "failed",
        "known bug": "passed",
        "slow": "passed",
    }


def test_avas_colours_leave_its_ids_alone() -> None:
    assert parse_outcomes(output("ava_color.txt")) == parse_outcomes(output("ava_run1.txt"))
