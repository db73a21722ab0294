"""The setting in `cra bench report`: each row says whether the fix's tests were given to its runs
or hidden from them, a model run in both settings has a row for each, and a baseline is compared
row by (model, setting) — across settings only when asked."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from agent.bench.report.command import build_report, load_baseline, report_command, schema
from agent.bench.report.data import configuration
from agent.bench.report.html import render_html
from agent.bench.report.text import render_text
from agent.bench.results import BenchResult
from agent.cli.main import build_parser
from tests.bench.test_report import args, result, write


def both() -> list[BenchResult]:
    """One model in both settings: resolved with the tests given, unresolved with them hidden."""
    return [
        result("a", "m", "resolved", tests="given", run_id="run-given"),
        result("a", "m", "unresolved", tests="hidden", run_id="run-hidden"),
        result("b", "m", "resolved", tests="hidden"),
    ]


def hidden(outcome: str = "resolved") -> list[BenchResult]:
    return [result("a", "m", outcome, tests="hidden")]


def test_a_model_run_in_both_settings_has_a_row_for_each() -> None:
    report = build_report(both())
    assert [(m.model, m.tests, m.resolved, m.scored) for m in report.models] == [
        ("m", "given", 1, 1),
        ("m", "hidden", 1, 2),
    ]
    (a, _) = report.tasks
    given, hid = a.cells[configuration("m", "given")], a.cells[configuration("m", "hidden")]
    assert given is not None and given.run_id == "run-given"
    assert hid is not None and hid.run_id == "run-hidden"


def test_a_result_written_before_settings_counts_as_given() -> None:
    (m,) = build_report(
        [BenchResult.model_validate({"instance_id": "a", "model": "m", "outcome": "resolved"})]
    ).models
    assert m.tests == "given"


def test_the_text_table_names_each_rows_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert report_command(args(write(tmp_path / "r.jsonl", both()))) == 0
    header, _, given, hid = capsys.readouterr().out.split("\n\n")[0].splitlines()
    assert header.split()[:2] == ["model", "tests"]
    assert given.split()[:2] == ["m", "given"] and hid.split()[:2] == ["m", "hidden"]
    assert "m (tests given)  m (tests hidden)" in render_text(build_report(both()))


def test_the_json_report_names_each_rows_setting_and_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert report_command(args(write(tmp_path / "r.jsonl", both()), json=True)) == 0
    printed = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator(schema()).validate(printed)
    assert [m["tests"] for m in printed["models"]] == ["given", "hidden"]
    assert set(printed["tasks"][0]["cells"]) == {"m (tests given)", "m (tests hidden)"}


def test_the_html_page_names_each_rows_setting() -> None:
    page = render_html(build_report(both()))
    assert (
        '<tr id="model-1" data-tests="hidden"><td class="mono">m</td><td class="mono">hidden</td>'
    ) in page
    assert '<th class="mono">m (tests given)</th><th class="mono">m (tests hidden)</th>' in page
    assert "run-hidden" in page


def test_a_baseline_in_another_setting_is_refused_with_both_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = write(tmp_path / "before.jsonl", [result("a", "m", "resolved", tests="given")])
    now = write(tmp_path / "now.jsonl", hidden())
    assert report_command(args(now, baseline=before)) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"cra: the baseline {before} ran m with the fix's tests given, these "
        "results with them hidden"
    )
    assert "--across-settings" in err


def test_across_settings_compares_them_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = write(tmp_path / "before.jsonl", [result("a", "m", "resolved", tests="given")])
    now = write(tmp_path / "now.jsonl", hidden("unresolved"))
    assert report_command(args(now, baseline=before, across_settings=True, json=True)) == 0
    printed = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator(schema()).validate(printed)
    (c,) = printed["comparison"]
    assert (c["tests"], c["baseline_tests"], c["lost"]) == ("hidden", "given", ["a"])
    report = build_report(
        hidden("unresolved"), baseline=load_baseline(before), across_settings=True
    )
    assert "m (tests hidden) against its tests-given row: 100.0% → 0.0%" in render_text(report)


def test_the_command_line_takes_across_settings() -> None:
    parsed = build_parser().parse_args(
        ["bench", "report", "r.jsonl", "--baseline", "b.jsonl", "--across-settings"]
    )
    assert parsed.across_settings is True
    assert build_parser().parse_args(["bench", "report", "r.jsonl"]).across_settings is False


def test_rows_are_compared_with_the_baselines_row_of_the_same_setting(tmp_path: Path) -> None:
    before = write(
        tmp_path / "before.jsonl",
        [
            result("a", "m", "unresolved", tests="given"),
            result("a", "m", "resolved", tests="hidden"),
        ],
    )
    report = build_report(both(), baseline=load_baseline(before))
    found = {(c.tests, c.baseline_tests): c for c in report.comparison or []}
    assert set(found) == {("given", "given"), ("hidden", "hidden")}
    assert found["given", "given"].gained == ["a"] and found["hidden", "hidden"].lost == ["a"]


def test_a_setting_new_beside_one_matched_is_not_in_the_baseline_not_refused(
    tmp_path: Path,
) -> None:
    before = write(tmp_path / "before.jsonl", [result("a", "m", "resolved", tests="given")])
    report = build_report(both(), baseline=load_baseline(before))
    found = {c.tests: c for c in report.comparison or []}
    assert found["given"].in_baseline and found["given"].baseline_tests == "given"
    assert found["hidden"].in_baseline is False
