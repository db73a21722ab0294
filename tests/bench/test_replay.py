"""A replayed fix's tests sorted: FAIL_TO_PASS, PASS_TO_PASS, or why it is no task."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.bench.mining.replay import DATA_FILES, NO_TASK, UNTIED, Runs, sort_tests
from agent.gate.testreport.files import tied_files
from agent.gate.testreport.outcomes import read_report

FILES = ["tests/test_new.py"]
A, C, D = "tests/test_new.py::test_a", "tests/test_old.py::test_c", "tests/test_old.py::test_d"


def test_only_tests_that_ran_and_failed_are_failing_to_passing() -> None:
    runs = Runs(
        before={A: "failed"},
        after={A: "passed", "tests/test_new.py::test_b": "passed", C: "passed"},
        before_stopped="pytest stopped after 1 failing test(s)",
    )
    verdict = sort_tests(runs, FILES)
    assert verdict.fail_to_pass == [A]
    assert verdict.pass_to_pass == []
    assert "2 test(s) did not run before the fix" in verdict.notes[0]


def test_a_test_file_that_could_not_be_collected_fails_all_its_tests() -> None:
    runs = Runs(
        before={"tests/test_new.py": "error", C: "passed"},
        after={A: "passed", C: "passed"},
        before_stopped="pytest stopped at 1 error(s) while collecting",
    )
    verdict = sort_tests(runs, FILES)
    assert verdict.fail_to_pass == [A]
    assert verdict.pass_to_pass == [C]


def test_a_fix_that_breaks_a_passing_test_is_excluded() -> None:
    runs = Runs(before={A: "failed", C: "passed"}, after={A: "passed", C: "failed"})
    verdict = sort_tests(runs, FILES)
    assert verdict.excluded is not None and "regression" in verdict.excluded
    assert verdict.detail == C


def test_a_new_test_that_passes_only_sometimes_is_excluded() -> None:
    runs = Runs(before={A: "failed"}, after={A: "passed"}, again={A: "failed"})
    verdict = sort_tests(runs, FILES)
    assert verdict.excluded is not None and "second run" in verdict.excluded


def test_a_steady_pass_to_pass_leaves_out_what_failed_on_the_second_run() -> None:
    runs = Runs(
        before={A: "failed", C: "passed", D: "passed"},
        after={A: "passed", C: "passed", D: "passed"},
        again={A: "passed", C: "passed", D: "failed"},
    )
    assert sort_tests(runs, FILES).pass_to_pass == [C]


def test_a_commit_whose_tests_pass_before_is_no_task() -> None:
    runs = Runs(before={A: "passed"}, after={A: "passed"})
    assert sort_tests(runs, FILES).excluded == NO_TASK


def test_a_test_that_fails_once_after_the_fix_is_flaky_not_broken() -> None:
    runs = Runs(
        before={A: "failed", C: "passed"},
        after={A: "passed", C: "failed"},
        again={A: "passed", C: "passed"},
    )
    verdict = sort_tests(runs, FILES)
    assert verdict.excluded is None
    assert verdict.fail_to_pass == [A] and verdict.pass_to_pass == []


def test_ids_that_differ_between_the_runs_are_said_to_be_untied() -> None:
    before = {"test/new.js # time=5.1ms > a": "failed", "test/old.js # time=2ms > c": "passed"}
    after = {"test/new.js # time=4.9ms > a": "passed", "test/old.js # time=3ms > c": "passed"}
    verdict = sort_tests(Runs(before=before, after=after), ["test/new.js"])
    assert verdict.excluded == UNTIED
    assert verdict.detail == (
        "before: test/new.js # time=5.1ms > a; after: test/new.js # time=4.9ms > a"
    )


def test_changed_test_files_that_name_no_test_are_data_every_test_counts() -> None:
    """A data-driven suite: the fix adds cases to a fixture file that another test file reads."""
    before = {"test/range.js > ~1.1 satisfies 1.1.0-a": "failed", "test/index.js > x": "passed"}
    after = {"test/range.js > ~1.1 satisfies 1.1.0-a": "passed", "test/index.js > x": "passed"}
    verdict = sort_tests(Runs(before=before, after=after), ["test/fixtures/range-include.js"])
    assert verdict.excluded is None
    assert verdict.fail_to_pass == ["test/range.js > ~1.1 satisfies 1.1.0-a"]
    assert verdict.pass_to_pass == ["test/index.js > x"]
    assert verdict.notes == [DATA_FILES]


def test_ids_that_name_no_test_file_and_differ_between_the_runs_are_untied() -> None:
    runs = Runs(before={"ints > add (1ms)": "failed"}, after={"ints > add (2ms)": "passed"})
    verdict = sort_tests(runs, ["test/calc.test.js"])
    assert verdict.excluded == UNTIED
    assert verdict.detail == "before: ints > add (1ms); after: ints > add (2ms)"


def test_tied_ids_that_pass_both_times_are_no_task_not_untied() -> None:
    runs = Runs(before={A: "passed", C: "passed"}, after={A: "passed", C: "passed"})
    assert sort_tests(runs, FILES).excluded == NO_TASK


def test_a_run_that_named_no_test_is_no_task_not_untied() -> None:
    runs = Runs(before={}, after={A: "failed"})
    assert sort_tests(runs, FILES).excluded == NO_TASK


def test_new_tests_that_first_show_after_the_fix_are_not_untied() -> None:
    runs = Runs(before={C: "passed"}, after={A: "passed", C: "passed"})
    assert sort_tests(runs, FILES).fail_to_pass == [A]


# --- ids that name no file -------------------------------------------------------------------

RECORDED = Path(__file__).parents[1] / "gate" / "runner_outputs"


@pytest.mark.parametrize(
    ("name", "worktree", "test_file", "fixed"),
    [
        ("node_tap", "node", "test/calc.test.js", ["ints > deep mul", "ints > pow", "mul"]),
        ("node_spec", "node", "test/calc.test.js", ["ints > deep mul", "ints > pow", "mul"]),
        (
            "mocha",
            "mocha",
            "test/calc.js",
            ["calc > ints > deep mul", "calc > ints > pow", "calc > mul"],
        ),
        (
            "tape",
            "tape",
            "test/calc.js",
            ["deep mul > mul by one", "mul > mul of two ints", "mul > should be strictly equal"],
        ),
        ("ava", "ava", "test/calc.js", ["calc › mul", "calc › pow"]),
    ],
)
def test_a_fix_is_a_task_when_its_failures_before_place_tests_whose_ids_name_no_file(
    name: str, worktree: str, test_file: str, fixed: list[str]
) -> None:
    root = [f"/tmp/rec-testfiles/{worktree}"]
    before = read_report((RECORDED / f"files_{name}_bug.txt").read_text(), None, roots=root)
    after = read_report((RECORDED / f"files_{name}_fixed.txt").read_text(), None, roots=root)
    runs = Runs(before.outcomes, after.outcomes, files=tied_files(before, after))
    verdict = sort_tests(runs, [test_file])
    assert verdict.excluded is None
    assert verdict.fail_to_pass == fixed


@pytest.mark.parametrize("runner", ["jest29", "jest30", "vitest1", "vitest3", "vitest4"])
def test_a_fix_read_from_jest_or_vitest_default_output_is_a_task_by_its_file(runner: str) -> None:
    """The default reporter names a failing file's failing tests (or all its tests) before the
    fix, and the passing file alone after it: the file is what goes from failing to passing."""
    ext = "js" if runner.startswith("jest") else "ts"
    recorded = Path(__file__).parents[1] / "gate" / "runner_outputs" / "js"
    before = read_report((recorded / f"{runner}_default.txt").read_text(), None)
    after = read_report((recorded / f"{runner}_fixed_default.txt").read_text(), None)
    runs = Runs(before.outcomes, after.outcomes, again=after.outcomes)
    verdict = sort_tests(runs, [f"tests/math.test.{ext}"])
    assert verdict.excluded is None
    assert verdict.fail_to_pass == [f"tests/math.test.{ext}"]
