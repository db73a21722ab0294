"""The file of a test whose id names none (node's test runner, mocha, tape, ava): placed by its
failure in the output, relative to the worktree, and kept for the same id passing in another
run of the worktree (real output: tests/gate/runner_outputs/README.md, the `files_` pairs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.gate.testreport.files import file_in, tied_files
from agent.gate.testreport.frames import frame_of_test, relative
from agent.gate.testreport.outcomes import read_report
from agent.gate.verdict import file_of_test
from agent.models import TestReport
from agent.sandbox.base import TREE_MOUNT

OUTPUTS = Path(__file__).parent / "runner_outputs"
RECORDED = Path("/tmp/rec-testfiles")  # where the suites ran: the worktree of each


def report(name: str, kind: str, worktree: str) -> TestReport:
    text = (OUTPUTS / f"files_{name}_{kind}.txt").read_text(encoding="utf-8")
    return read_report(text, None, roots=[str(RECORDED / worktree)])


# runner, its worktree, a test that failed by an assertion, one that failed by an error thrown
# in lib/calc.js (its stack's first frame is not the test's file), the test file
PLACED = [
    ("node_tap", "node", "ints > deep mul", "ints > pow", "test/calc.test.js"),
    ("node_spec", "node", "ints > deep mul", "ints > pow", "test/calc.test.js"),
    ("mocha", "mocha", "calc > ints > deep mul", "calc > ints > pow", "test/calc.js"),
    ("tape", "tape", "deep mul > mul by one", "mul > mul of two ints", "test/calc.js"),
    ("ava", "ava", "calc › mul", "calc › pow", "test/calc.js"),
]


@pytest.mark.parametrize(("name", "worktree", "asserted", "thrown", "file"), PLACED)
def test_a_failed_test_is_placed_in_its_file_relative_to_the_worktree(
    name: str, worktree: str, asserted: str, thrown: str, file: str
) -> None:
    files = report(name, "bug", worktree).files
    assert files[asserted] == file
    assert files[thrown] == file


@pytest.mark.parametrize(("name", "worktree", "asserted", "thrown", "file"), PLACED)
def test_a_passing_run_places_no_test(
    name: str, worktree: str, asserted: str, thrown: str, file: str
) -> None:
    assert report(name, "fixed", worktree).files == {}


@pytest.mark.parametrize(("name", "worktree", "asserted", "thrown", "file"), PLACED)
def test_the_same_id_passing_in_another_run_is_in_the_file_its_failure_placed(
    name: str, worktree: str, asserted: str, thrown: str, file: str
) -> None:
    before, after = report(name, "bug", worktree), report(name, "fixed", worktree)
    assert after.outcomes[asserted] == "passed"
    assert file_of_test(asserted, [file], tied_files(before, after)) == file
    assert file_of_test(asserted, [file]) is None  # the id alone names no file


@pytest.mark.parametrize(
    ("name", "worktree", "test"),
    [
        ("node_tap", "node", "ints > deep add"),  # node's TAP places the failed suite `ints`
        ("node_spec", "node", "ints > deep add"),  # its suite's other tests are in one file
        ("mocha", "mocha", "calc > add"),
        ("ava", "ava", "calc › add"),
        ("tape", "tape", "mul > should be strictly equal"),
    ],
)
def test_a_test_that_never_failed_is_in_the_file_of_its_suite(
    name: str, worktree: str, test: str
) -> None:
    tied = tied_files(report(name, "bug", worktree))
    assert report(name, "fixed", worktree).outcomes[test] == "passed"
    assert file_in(test, tied) == report(name, "bug", worktree).files[next(iter(tied))]


def test_a_top_level_test_that_never_failed_is_placed_nowhere() -> None:
    tied = tied_files(report("node_tap", "bug", "node"))
    assert file_in("add", tied) is None and file_in("concat", tied) is None


def test_a_suite_whose_tests_are_in_two_files_places_none_of_its_other_tests() -> None:
    tied = {"calc > mul": "test/a.js", "calc > div": "test/b.js"}
    assert file_in("calc > add", tied) is None
    assert file_in("calc > mul", tied) == "test/a.js"


def test_an_id_two_runs_place_in_different_files_is_placed_in_neither() -> None:
    first = TestReport(files={"mul": "test/a.js", "add": "test/a.js"})
    second = TestReport(files={"mul": "test/b.js"})
    assert tied_files(first, second) == {"add": "test/a.js"}


def test_a_test_file_that_cannot_load_is_placed_in_it() -> None:
    root = str(RECORDED / "load")
    for name in ("node_tap", "node_spec"):
        text = (OUTPUTS / f"files_{name}_load_failure.txt").read_text(encoding="utf-8")
        files = read_report(text, None, roots=[root]).files
        assert files[f"{root}/test/new.test.js"] == "test/new.test.js"


def test_a_path_outside_the_worktree_places_no_test() -> None:
    files = report("node_tap", "bug", "elsewhere").files
    assert files == {}


def test_the_sandboxs_view_of_the_worktree_is_the_worktree() -> None:
    seen = str(TREE_MOUNT)
    assert relative(f"{seen}/test/calc.test.js", ["/home/me/repo", seen]) == "test/calc.test.js"
    assert relative("file:///home/me/repo/test/a.mjs", ["/home/me/repo"]) == "test/a.mjs"
    assert relative("./test/a.js", []) == "test/a.js"
    assert relative("../other/a.js", []) is None


def test_the_test_is_the_outermost_frame_outside_node_and_the_packages() -> None:
    stack = [
        "    at exports.pow (lib/calc.js:4:33)",
        "    at Context.<anonymous> (test/calc.js:9:47)",
        "    at Test.run (file:///w/node_modules/ava/lib/test.js:534:33)",
        "    at process.processImmediate (node:internal/timers:483:21)",
    ]
    assert frame_of_test(stack) == "test/calc.js"
