"""`cra bench report`: the numbers (Wilson interval, errors, costs, gained and lost), the JSON
against its shipped schema, and the text table."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import jsonschema
import pytest

from agent.bench.report.command import (
    BenchReport,
    build_report,
    generated_schema,
    load_baseline,
    report_command,
    schema,
    wilson_interval,
)
from agent.bench.report.data import configuration
from agent.bench.report.text import render_text
from agent.bench.results import BenchResult, append_result
from agent.bench.tasks import BenchTask, write_tasks


def result(instance: str, model: str, outcome: str, **fields: object) -> BenchResult:
    return BenchResult.model_validate(
        {"instance_id": instance, "model": model, "outcome": outcome, **fields}
    )


def task(instance: str, statement: str = "Fix the thing\n\nIt breaks.") -> BenchTask:
    return BenchTask(
        instance_id=instance,
        repo="o/r",
        base_commit="0" * 40,
        patch="p",
        test_patch="t",
        problem_statement=statement,
        FAIL_TO_PASS=["t::a"],
    )


def write(path: Path, results: list[BenchResult]) -> Path:
    for r in results:
        append_result(path, r)
    return path


def args(results: Path, **given: object) -> argparse.Namespace:
    return argparse.Namespace(
        **{
            "results": results,
            "tasks": None,
            "baseline": None,
            "html": None,
            "summary": None,
            "json": False,
            "across_settings": False,
            **given,
        }
    )


# --- the interval ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        (5, 10, 0.2366, 0.7634),  # the textbook values (Newcombe 1998, method 3)
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (81, 263, 0.2553, 0.3662),  # Wallis (2013), table 2
        (1, 1, 0.2065, 1.0),
    ],
)
def test_wilson_interval_matches_published_values(k: int, n: int, low: float, high: float) -> None:
    found = wilson_interval(k, n)
    assert found is not None
    assert found == pytest.approx((low, high), abs=5e-4)


def test_wilson_interval_of_no_trials_is_none() -> None:
    assert wilson_interval(0, 0) is None


def test_wilson_interval_refuses_more_successes_than_trials() -> None:
    with pytest.raises(ValueError, match="3 successes out of 2"):
        wilson_interval(3, 2)


# --- per model -------------------------------------------------------------------------------


def test_errors_are_counted_apart_and_left_out_of_the_rate() -> None:
    report = build_report(
        [
            result(
                "a", "m", "resolved", prompt_tokens=100, completion_tokens=20, wall_s=10, calls=3
            ),
            result(
                "b", "m", "unresolved", prompt_tokens=200, completion_tokens=40, wall_s=20, calls=5
            ),
            result("c", "m", "error", error="setup failed", wall_s=1),
        ]
    )
    (m,) = report.models
    assert (m.tasks, m.resolved, m.unresolved, m.errors) == (3, 1, 1, 1)
    assert m.rate == 0.5
    assert (m.ci_low, m.ci_high) == pytest.approx(wilson_interval(1, 2))
    assert (m.prompt_tokens, m.completion_tokens, m.calls) == (300, 60, 8)
    assert m.tokens_per_resolved == 360 and m.tokens_per_task == 120
    assert m.wall_s_per_resolved == 31 and m.wall_s_per_task == pytest.approx(31 / 3)


def test_a_model_with_only_errors_has_no_rate_and_no_interval() -> None:
    (m,) = build_report([result("a", "m", "error")]).models
    assert (m.rate, m.ci_low, m.ci_high, m.tokens_per_resolved) == (None, None, None, None)
    assert m.errors == 1


def test_the_last_result_of_a_task_and_model_wins() -> None:
    report = build_report([result("a", "m", "error"), result("a", "m", "resolved", run_id="r2")])
    assert report.models[0].resolved == 1 and report.models[0].tasks == 1
    cell = report.tasks[0].cells[configuration("m", "given")]
    assert cell is not None and cell.run_id == "r2"


def test_grid_has_a_cell_per_model_and_none_where_a_model_did_not_run() -> None:
    report = build_report(
        [result("a", "m1", "resolved", run_id="run-a"), result("b", "m2", "unresolved")],
        [task("a"), task("b"), task("c", "  \n  Title of c\nbody")],
    )
    grid = {row.instance_id: row for row in report.tasks}
    assert list(grid) == ["a", "b", "c"]
    assert grid["c"].title == "Title of c"
    m1, m2 = configuration("m1", "given"), configuration("m2", "given")
    assert grid["a"].cells[m1] is not None and grid["a"].cells[m1].run_id == "run-a"
    assert grid["a"].cells[m2] is None and grid["c"].cells == {m1: None, m2: None}


def test_empty_results_make_an_empty_report() -> None:
    report = build_report([])
    assert report.models == [] and report.tasks == []
    assert "no bench results" in render_text(report)


# --- against a baseline ----------------------------------------------------------------------


def test_gained_and_lost_compare_only_tasks_both_benches_scored(tmp_path: Path) -> None:
    before = write(
        tmp_path / "before.jsonl",
        [
            result("a", "m", "unresolved"),
            result("b", "m", "resolved"),
            result("c", "m", "resolved"),
            result("d", "m", "error"),
            result("e", "m", "unresolved"),
        ],
    )
    report = build_report(
        [
            result("a", "m", "resolved"),
            result("b", "m", "unresolved"),
            result("c", "m", "resolved"),
            result("d", "m", "resolved"),
            result("e", "m", "error"),
            result("f", "m", "resolved"),
        ],
        baseline=load_baseline(before),
    )
    (c,) = report.comparison or []
    assert (c.gained, c.lost, c.compared) == (["a"], ["b"], 3)
    assert c.baseline_rate == pytest.approx(2 / 4) and c.rate == pytest.approx(4 / 5)
    assert c.rate_delta == pytest.approx(4 / 5 - 2 / 4)


def test_what_the_calls_cost_and_saw_is_summed_per_task_and_compared(tmp_path: Path) -> None:
    def costly(instance: str, calls: int, hunks: dict[str, bool]) -> BenchResult:
        return result(
            instance,
            "m",
            "resolved",
            calls=calls,
            prompt_tokens=calls * 100,
            largest_prompt=calls * 10,
            calls_by_stage={"retrieval": calls - 2, "implementing": 2},
            gold_files_seen={"a.py": True},
            gold_hunks_seen=hunks,
        )

    before = write(
        tmp_path / "before.jsonl",
        [costly("a", 100, {"a.py:1-3": False}), costly("b", 120, {"a.py:9-9": True})],
    )
    report = build_report(
        [
            costly("a", 10, {"a.py:1-3": True}),
            costly("b", 14, {"a.py:9-9": False, "b.py:2-4": True}),
        ],
        baseline=load_baseline(before),
    )
    [model] = report.models
    assert model.calls_per_task == 12 and model.prompt_tokens_per_task == 1200
    assert model.largest_prompt == 140 and model.calls_by_stage == {
        "retrieval": 10,
        "implementing": 2,
    }
    assert model.gold_files_seen == 1.0 and model.gold_hunks_seen == pytest.approx(2 / 3)
    [cell] = [
        row.cells[configuration("m", "given")] for row in report.tasks if row.instance_id == "b"
    ]
    assert cell is not None and (cell.hunks_seen, cell.hunks) == (1, 2)
    assert cell.unseen_hunks == ["a.py:9-9"]
    text = render_text(report)
    assert "what the calls cost and saw, per task:" in text and "hunks 1/2" in text
    assert "calls per task 110.0 → 12.0; prompt tokens per task 11,000 → 1,200" in text


def test_a_model_missing_from_either_side_is_named_not_compared(tmp_path: Path) -> None:
    before = write(
        tmp_path / "before.jsonl", [result("a", "old", "resolved"), result("a", "both", "resolved")]
    )
    report = build_report(
        [result("a", "new", "resolved"), result("a", "both", "unresolved")],
        baseline=load_baseline(before),
    )
    found = {c.model: c for c in report.comparison or []}
    assert found["new"].in_baseline is False and found["new"].rate_delta is None
    assert found["new"].gained == [] and found["new"].lost == []
    assert found["old"].in_current is False and found["old"].baseline_rate == 1.0
    assert found["both"].lost == ["a"] and found["both"].rate_delta == -1.0
    text = render_text(report)
    assert "new (tests given): not in the baseline" in text
    assert "old (tests given): only in the baseline" in text


def test_an_earlier_json_report_serves_as_baseline(tmp_path: Path) -> None:
    earlier = build_report([result("a", "m", "resolved"), result("b", "m", "resolved")])
    saved = tmp_path / "earlier.json"
    saved.write_text(earlier.model_dump_json(), encoding="utf-8")
    report = build_report(
        [result("a", "m", "resolved"), result("b", "m", "unresolved")],
        baseline=load_baseline(saved),
    )
    (c,) = report.comparison or []
    assert c.lost == ["b"] and c.rate_delta == -0.5
    assert report.baseline_file == str(saved)


def test_a_baseline_that_is_neither_results_nor_report_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = write(tmp_path / "r.jsonl", [result("a", "m", "resolved")])
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}', encoding="utf-8")
    assert report_command(args(results, baseline=bad)) == 2
    assert capsys.readouterr().err.strip() == (
        f"cra: {bad} holds no bench results and is not a bench report"
    )
    assert report_command(args(results, baseline=tmp_path / "missing.jsonl")) == 2
    assert "cannot read the baseline" in capsys.readouterr().err


# --- JSON and its schema ---------------------------------------------------------------------


def test_the_shipped_schema_is_the_one_the_models_define() -> None:
    assert schema() == generated_schema()


def test_json_report_validates_against_the_shipped_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = write(
        tmp_path / "r.jsonl",
        [
            result("a", "m1", "resolved", run_id="r1", calls=2, prompt_tokens=5, wall_s=1.5),
            result("b", "m1", "error", error="boom"),
            result("a", "m2", "unresolved"),
        ],
    )
    before = write(tmp_path / "before.jsonl", [result("a", "m1", "unresolved")])
    tasks = tmp_path / "tasks.jsonl"
    write_tasks(tasks, [task("a"), task("b"), task("z")])
    assert report_command(args(results, tasks=tasks, baseline=before, json=True)) == 0
    printed = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator(schema()).validate(printed)
    assert BenchReport.model_validate(printed).comparison is not None
    assert [row["instance_id"] for row in printed["tasks"]] == ["a", "b", "z"]


def test_json_of_empty_results_validates_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "r.jsonl"
    empty.write_text("", encoding="utf-8")
    assert report_command(args(empty, json=True)) == 0
    jsonschema.Draft202012Validator(schema()).validate(json.loads(capsys.readouterr().out))


def test_the_schema_rejects_a_report_with_a_wrong_outcome() -> None:
    report = json.loads(build_report([result("a", "m", "resolved")]).model_dump_json())
    report["tasks"][0]["cells"][configuration("m", "given")]["outcome"] = "maybe"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema()).validate(report)


# --- the terminal ----------------------------------------------------------------------------


def test_text_table_is_aligned_and_names_the_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = write(
        tmp_path / "r.jsonl",
        [
            result("task-1", "small", "resolved", run_id="run-1"),
            result("task-2", "small", "unresolved", run_id="run-2"),
            result("task-1", "a-much-longer-model-name", "error"),
        ],
    )
    assert report_command(args(results)) == 0
    out = capsys.readouterr().out
    header, rule, *rows = out.split("\n\n")[0].splitlines()
    assert "95% CI (Wilson)" in header and "\x1b" not in out
    assert len({len(line) for line in (rule, *rows)}) == 1  # every line as wide as the rule
    assert "1/2" in rows[0] and "50.0%" in rows[0] and "9.5–90.5%" in rows[0]
    assert "✓ run-1" in out and "✗ run-2" in out


def test_control_characters_in_ids_never_reach_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = write(tmp_path / "r.jsonl", [result("evil\x1b[2J\nid", "m\x07", "resolved")])
    assert report_command(args(results)) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "evil?[2J?id" in out


def test_a_missing_results_file_is_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert report_command(args(tmp_path / "nope.jsonl")) == 2
    assert "no results file" in capsys.readouterr().err


def test_tasks_alone_make_a_grid_of_tasks_not_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    write_tasks(tasks, [task("a")])
    assert report_command(args(tmp_path / "not-yet.jsonl", tasks=tasks, json=True)) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["models"] == [] and printed["tasks"][0]["instance_id"] == "a"


def test_html_is_written_where_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = write(tmp_path / "r.jsonl", [result("a", "m", "resolved")])
    page = tmp_path / "out" / "report.html"
    assert report_command(args(results, html=page)) == 0
    assert page.read_text(encoding="utf-8").startswith("<!doctype html>")
    assert f"HTML report: {page}" in capsys.readouterr().out


def test_cra_bench_report_through_the_real_cli(tmp_path: Path) -> None:
    import subprocess
    import sys

    results = write(tmp_path / "r.jsonl", [result("a", "m", "resolved", run_id="run-a")])
    page = tmp_path / "report.html"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent.cli.main",
            "bench",
            "report",
            str(results),
            "--html",
            str(page),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    jsonschema.Draft202012Validator(schema()).validate(json.loads(proc.stdout))
    assert "run-a" in page.read_text(encoding="utf-8")
