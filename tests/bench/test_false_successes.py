"""False successes in `cra bench report`: runs that ended complete — a pull request saying the tests
pass — whose scored tests say unresolved, counted and rated per row in the text, JSON and HTML, and
against a baseline."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from agent.bench.report.command import build_report, load_baseline, report_command, schema
from agent.bench.report.html import render_html
from agent.bench.report.text import render_text
from agent.bench.results import BenchResult, false_success
from tests.bench.test_report import args, result, write


def mixed() -> list[BenchResult]:
    """One of each: a false success, an honest failure, a harness error, a fix; and another
    false success — 2 false successes of 4 scored."""
    return [
        result("a", "m", "unresolved", run_status="complete", run_id="run-a"),
        result("b", "m", "unresolved", run_status="failed"),
        result("c", "m", "error", error="setup failed"),
        result("d", "m", "resolved", run_status="complete"),
        result("e", "m", "unresolved", run_status="complete"),
    ]


@pytest.mark.parametrize(
    ("outcome", "status", "claimed"),
    [
        ("unresolved", "complete", True),  # a pull request that says the tests pass, and no fix
        ("unresolved", "failed", False),  # the run said it failed
        ("unresolved", "partial", False),  # the run said it stopped short (a draft)
        ("unresolved", None, False),
        ("error", "complete", False),  # the bench scored nothing
        ("error", None, False),
        ("resolved", "complete", False),
    ],
)
def test_only_a_complete_run_scored_unresolved_is_a_false_success(
    outcome: str, status: str | None, claimed: bool
) -> None:
    assert false_success(result("a", "m", outcome).outcome, status) is claimed


def test_false_successes_are_counted_and_rated_of_the_scored_tasks() -> None:
    (m,) = build_report(mixed()).models
    assert (m.false_successes, m.scored, m.errors) == (2, 4, 1)
    assert m.false_success_rate == 0.5 and m.rate == 0.25


def test_a_row_with_nothing_scored_has_no_false_success_rate() -> None:
    (m,) = build_report([result("a", "m", "error", run_status="complete")]).models
    assert m.false_successes == 0 and m.false_success_rate is None


def test_the_text_table_shows_false_successes_beside_the_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert report_command(args(write(tmp_path / "r.jsonl", mixed()))) == 0
    header, _, row = capsys.readouterr().out.split("\n\n")[0].splitlines()
    columns = [c.strip() for c in header.split("  ") if c.strip()]
    assert columns[columns.index("rate") + 2] == "false successes"
    assert "false-success rate (of scored)" in header
    assert "1/4" in row and "25.0%" in row and "2/4" in row and "50.0%" in row


def test_the_json_report_carries_false_successes_and_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert report_command(args(write(tmp_path / "r.jsonl", mixed()), json=True)) == 0
    printed = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator(schema()).validate(printed)
    assert printed["models"][0]["false_successes"] == 2
    assert printed["models"][0]["false_success_rate"] == 0.5


def test_the_html_page_shows_false_successes_and_says_what_they_are() -> None:
    page = render_html(build_report(mixed()))
    row = page[page.index('<tr id="model-0"') :].split("</tr>")[0]
    assert '<td class="num">2/4</td><td class="num">50.0%</td>' in row
    assert "false-success rate (of scored)" in page and 'id="false-success-note"' in page


def test_a_baseline_comparison_shows_false_successes_before_and_after(tmp_path: Path) -> None:
    before = write(tmp_path / "before.jsonl", mixed())
    now = [
        result("a", "m", "resolved", run_status="complete"),
        result("b", "m", "unresolved", run_status="failed"),
        result("d", "m", "resolved", run_status="complete"),
        result("e", "m", "unresolved", run_status="complete"),
    ]
    report = build_report(now, baseline=load_baseline(before))
    (c,) = report.comparison or []
    assert (c.baseline_false_successes, c.false_successes) == (2, 1)
    assert (c.baseline_false_success_rate, c.false_success_rate) == (0.5, 0.25)
    assert c.false_success_delta == -0.25
    assert "false successes (of scored) 2 → 1, 50.0% → 25.0% (-25.0 points)" in render_text(report)
    page = render_html(report)
    assert '<td class="num bench-false-change">-25.0 points</td>' in page


def test_an_earlier_report_without_false_successes_counts_them_from_its_cells(
    tmp_path: Path,
) -> None:
    """A version 1 report (before settings and false successes) still serves as baseline."""
    old = json.loads(build_report(mixed()).model_dump_json())
    old["schema_version"] = 1
    for model in old["models"]:
        for field in ("tests", "false_successes", "false_success_rate"):
            model.pop(field)
    for row in old["tasks"]:
        row["cells"] = {"m": row["cells"]["m (tests given)"]}
    saved = tmp_path / "v1.json"
    saved.write_text(json.dumps(old), encoding="utf-8")
    (then,) = load_baseline(saved).models
    assert (then.tests, then.false_successes, then.false_success_rate) == ("given", 2, 0.5)
    report = build_report(mixed(), baseline=load_baseline(saved))
    (c,) = report.comparison or []
    assert c.compared == 4 and c.gained == c.lost == [] and c.false_success_delta == 0
