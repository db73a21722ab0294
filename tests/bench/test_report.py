"""`cra bench report`: the numbers (Wilson interval, errors apart, gained and lost), the JSON
against its schema, and the HTML page in a real browser: the grid's cells, hostile text shown as
text, nothing fetched."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from agent.bench.report import SCHEMA, build, load_baseline, render_html, render_table, wilson
from agent.bench.results import BenchResult, append_result
from tests.e2e.test_run_page_browser import Tools, tools  # noqa: F401
from tests.e2e.webdriver import Browser


def result(task: str, model: str, outcome: str, **extra: object) -> BenchResult:
    return BenchResult.model_validate({"instance_id": task, "model": model, "outcome": outcome,
                                       "run_id": f"run-{task}-{model}", "wall_s": 10.0,
                                       "prompt_tokens": 900, "completion_tokens": 100,
                                       **extra})


RESULTS = [result("t1", "small", "resolved"), result("t2", "small", "unresolved"),
           result("t3", "small", "error"), result("t1", "oracle", "resolved"),
           result("t2", "oracle", "resolved"), result("t3", "oracle", "resolved")]


def test_the_wilson_interval_has_its_known_values() -> None:
    assert wilson(0, 0) == (0.0, 0.0)
    low, high = wilson(5, 10)
    assert (round(low, 4), round(high, 4)) == (0.2366, 0.7634)
    low, high = wilson(10, 10)
    assert round(low, 4) == 0.7225 and round(high, 4) == 1.0
    assert wilson(0, 10)[0] == 0.0


def test_errors_are_shown_apart_and_left_out_of_the_rate() -> None:
    report = build(RESULTS)
    small = next(r for r in report["models"] if r["model"] == "small")
    assert (small["resolved"], small["scored"], small["errors"], small["rate"]) == (1, 2, 1, 0.5)
    assert small["tokens_per_resolved"] == 3000.0 and small["seconds_per_resolved"] == 30.0
    assert report["grid"]["t3"]["small"]["outcome"] == "error"


def test_a_later_result_of_the_same_pair_replaces_the_earlier() -> None:
    report = build([result("t1", "m", "error"), result("t1", "m", "resolved")])
    assert report["models"][0]["resolved"] == 1 and report["models"][0]["errors"] == 0


def test_the_baseline_gives_tasks_gained_and_lost(tmp_path: Path) -> None:
    earlier = [result("t1", "small", "unresolved"), result("t2", "small", "resolved"),
               result("t1", "oracle", "resolved")]
    report = build(RESULTS, baseline=earlier)
    small = next(r for r in report["models"] if r["model"] == "small")
    assert (small["gained"], small["lost"], small["rate_delta"]) == (["t1"], ["t2"], 0.0)
    oracle = next(r for r in report["models"] if r["model"] == "oracle")
    assert oracle["gained"] == ["t2", "t3"] and oracle["lost"] == []
    # an earlier JSON report works as a baseline too
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps(build(earlier)))
    assert build(RESULTS, baseline=load_baseline(path))["models"][1]["gained"] == ["t1"]
    results = tmp_path / "earlier.jsonl"
    for r in earlier:
        append_result(results, r)
    assert len(load_baseline(results)) == 3
    assert "vs baseline: +0%; gained t1; lost t2" in render_table(report)


def test_the_json_report_matches_its_schema() -> None:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.validate(build(RESULTS), schema)
    jsonschema.validate(build(RESULTS, baseline=RESULTS[:2]), schema)
    jsonschema.validate(build([]), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**build(RESULTS), "surprise": 1}, schema)


HOSTILE = '<script>document.title="owned"</script><img src=x onerror=alert(1)>'


def test_the_html_escapes_what_it_shows() -> None:
    page = render_html(build([result(HOSTILE, "small", "resolved")]))
    assert "<script>document" not in page and "&lt;script&gt;" in page
    assert "http" not in page.split("<body>")[1]  # nothing linked or fetched


def test_the_html_report_in_chromium(tools: Tools, tmp_path: Path) -> None:  # noqa: F811
    page = tmp_path / "report.html"
    page.write_text(render_html(build([*RESULTS, result(HOSTILE, "small", "resolved")],
                                      baseline=RESULTS[:2])))

    with Browser(tools.chromedriver, tools.chromium, tmp_path / "profile") as browser:
        browser.open(page.as_uri())
        title = browser.script("return document.title")
        grid = browser.text("#grid")
        summary = browser.text("#summary")
        cells = browser.script("return [...document.querySelectorAll('#grid tr')].map("
                               "r => [...r.cells].map(c => c.textContent))")
        fetched = browser.script("return performance.getEntriesByType('resource').length")

    assert title == "cra bench report"  # the hostile script never ran
    assert HOSTILE in grid  # shown as text
    assert cells[0] == ["task", "oracle", "small"]
    assert ["t3", "resolved", "error"] in cells and ["t2", "resolved", "unresolved"] in cells
    assert "small" in summary and "oracle" in summary and "67%" in summary
    assert fetched == 0
