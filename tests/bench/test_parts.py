"""`cra bench split` and `cra bench merge` through the CLI: a task file dealt into parts for
parallel runners, their results merged back with one result per task and model, in order; and
`cra bench report --summary`, the merged report as a job summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.bench.results import BenchResult, read_results
from agent.bench.tasks import BenchTask, read_tasks, write_tasks
from agent.cli.main import main


def task(number: int) -> BenchTask:
    return BenchTask(
        instance_id=f"octo__calc-{number}",
        repo="octo/calc",
        base_commit="a" * 40,
        patch="",
        test_patch="",
        problem_statement=f"Fix {number}",
        FAIL_TO_PASS=[f"tests/test_{number}.py::test_it"],
    )


def result(number: int, model: str = "oracle", outcome: str = "resolved") -> BenchResult:
    return BenchResult.model_validate(
        {"instance_id": f"octo__calc-{number}", "model": model, "outcome": outcome}
    )


def results_file(path: Path, *results: BenchResult, torn: str = "") -> Path:
    path.write_text("".join(r.model_dump_json() + "\n" for r in results) + torn, encoding="utf-8")
    return path


def ids(path: Path) -> list[str]:
    return [t.instance_id for t in read_tasks(path)]


def pairs(path: Path) -> list[tuple[str, str, str]]:
    return [(r.instance_id, r.model, r.outcome) for r in read_results(path)]


def test_split_deals_the_tasks_round_robin_into_numbered_parts(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    write_tasks(tasks, [task(n) for n in range(1, 6)])

    code = main(["bench", "split", str(tasks), "--parts", "3", "--out", str(tmp_path / "parts")])

    assert code == 0
    assert [ids(tmp_path / "parts" / f"tasks-{n}.jsonl") for n in (1, 2, 3)] == [
        ["octo__calc-1", "octo__calc-4"],
        ["octo__calc-2", "octo__calc-5"],
        ["octo__calc-3"],
    ]
    assert "3 part(s) written" in capsys.readouterr().err
    assert next(read_tasks(tmp_path / "parts" / "tasks-1.jsonl")) == task(1)  # unchanged


def test_split_writes_every_part_even_when_there_are_fewer_tasks(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    write_tasks(tasks, [task(1)])

    assert main(["bench", "split", str(tasks), "--parts", "3", "--out", str(tmp_path)]) == 0

    assert [ids(tmp_path / f"tasks-{n}.jsonl") for n in (1, 2, 3)] == [["octo__calc-1"], [], []]


def test_split_into_no_part_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    write_tasks(tasks, [task(1)])

    assert main(["bench", "split", str(tasks), "--parts", "0", "--out", str(tmp_path)]) == 2
    assert "--parts must be 1 or more" in capsys.readouterr().err


def test_merge_keeps_every_parts_results_in_order(tmp_path: Path) -> None:
    one = results_file(tmp_path / "1.jsonl", result(1), result(3))
    two = results_file(tmp_path / "2.jsonl", result(2), result(4, outcome="unresolved"))

    assert main(["bench", "merge", str(one), str(two), "--out", str(tmp_path / "all.jsonl")]) == 0

    assert pairs(tmp_path / "all.jsonl") == [
        ("octo__calc-1", "oracle", "resolved"),
        ("octo__calc-3", "oracle", "resolved"),
        ("octo__calc-2", "oracle", "resolved"),
        ("octo__calc-4", "oracle", "unresolved"),
    ]


def test_merge_keeps_one_result_per_task_and_model_the_last_written(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    first = results_file(
        tmp_path / "1.jsonl", result(1, outcome="error"), result(2), result(1, model="qwen")
    )
    again = results_file(tmp_path / "2.jsonl", result(1, outcome="resolved"), result(2))

    code = main(["bench", "merge", str(first), str(again), "--out", str(tmp_path / "all.jsonl")])

    assert code == 0
    assert pairs(tmp_path / "all.jsonl") == [  # where each pair first came, as the report shows
        ("octo__calc-1", "oracle", "resolved"),
        ("octo__calc-2", "oracle", "resolved"),
        ("octo__calc-1", "qwen", "resolved"),
    ]
    assert "3 result(s) from 2 file(s)" in (err := capsys.readouterr().err)
    assert "2 duplicate(s) left out" in err


def test_merge_leaves_out_a_torn_last_line(tmp_path: Path) -> None:
    killed = results_file(tmp_path / "1.jsonl", result(1), torn='{"instance_id": "octo__ca')

    assert main(["bench", "merge", str(killed), "--out", str(tmp_path / "all.jsonl")]) == 0

    assert pairs(tmp_path / "all.jsonl") == [("octo__calc-1", "oracle", "resolved")]


def test_merge_may_write_over_one_of_its_inputs(tmp_path: Path) -> None:
    merged = results_file(tmp_path / "all.jsonl", result(1))
    late = results_file(tmp_path / "late.jsonl", result(2))

    assert main(["bench", "merge", str(merged), str(late), "--out", str(merged)]) == 0

    assert [p[0] for p in pairs(merged)] == ["octo__calc-1", "octo__calc-2"]


def test_merge_of_a_missing_file_is_a_usage_error_and_writes_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    one = results_file(tmp_path / "1.jsonl", result(1))

    code = main(
        [
            "bench",
            "merge",
            str(one),
            str(tmp_path / "gone.jsonl"),
            "--out",
            str(tmp_path / "all.jsonl"),
        ]
    )

    assert code == 2
    assert f"no results file {tmp_path / 'gone.jsonl'}" in capsys.readouterr().err
    assert not (tmp_path / "all.jsonl").exists()


def test_report_appends_the_table_as_a_markdown_summary(tmp_path: Path) -> None:
    tasks, summary = tmp_path / "tasks.jsonl", tmp_path / "summary.md"
    write_tasks(tasks, [task(1), task(2)])
    results = results_file(tmp_path / "results.jsonl", result(1))
    summary.write_text("earlier steps\n", encoding="utf-8")

    code = main(["bench", "report", str(results), "--tasks", str(tasks), "--summary", str(summary)])

    assert code == 0
    written = summary.read_text(encoding="utf-8")
    assert written.startswith("earlier steps\n## cra bench: octo/calc\n\n```text\n")
    assert written.endswith("```\n") and "octo__calc-2" in written


def test_merge_of_folders_reads_every_results_file_under_them(tmp_path: Path) -> None:
    """A workflow's downloaded artifacts: a folder per part, a part without results among them."""
    parts = tmp_path / "parts"
    for number in (1, 2):
        (parts / f"cra-bench-part-{number}").mkdir(parents=True)
        results_file(parts / f"cra-bench-part-{number}" / "results.jsonl", result(number))
    (parts / "cra-bench-part-3").mkdir()  # its runner found no task

    assert main(["bench", "merge", str(parts), "--out", str(tmp_path / "all.jsonl")]) == 0

    assert [p[0] for p in pairs(tmp_path / "all.jsonl")] == ["octo__calc-1", "octo__calc-2"]


def test_merge_of_a_folder_without_results_writes_an_empty_file(tmp_path: Path) -> None:
    (tmp_path / "parts").mkdir()

    assert (
        main(["bench", "merge", str(tmp_path / "parts"), "--out", str(tmp_path / "all.jsonl")]) == 0
    )

    assert (tmp_path / "all.jsonl").read_text(encoding="utf-8") == ""
