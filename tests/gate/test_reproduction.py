"""check_reproduction: a test written before the fix reproduces the issue only when it fails on
the base commit the way the issue describes, and breaks nothing that passed."""

from __future__ import annotations

from pathlib import Path

from agent.gate.reproduction import check_reproduction, fails_only_on, failure_excerpt
from agent.models import TestReport, ValidationResult

BASE = ValidationResult(success=True, passing_tests=["tests/test_a.py::test_old"])
FILES = ["tests/test_bug.py"]
ISSUE = "parse('x') raises ValueError: bad input, though 'x' is valid."


def run(failing: list[str], output: str, passing: list[str] | None = None) -> ValidationResult:
    outcomes = {t: "failed" for t in failing}
    return ValidationResult(
        success=not failing,
        failing_tests=failing,
        passing_tests=passing if passing is not None else ["tests/test_a.py::test_old"],
        test_output=output,
        report=TestReport(source="junit", outcomes=outcomes),  # type: ignore[arg-type]
    )


def section(name: str, body: str) -> str:
    return f"_______________ {name} _______________\n{body}\n"


def test_an_assertion_failure_in_its_file_reproduces() -> None:
    out = section("test_valid_x", "E   AssertionError: assert None == 'x'")
    check = check_reproduction(BASE, run(["tests/test_bug.py::test_valid_x"], out), FILES, ISSUE)
    assert check.reproduces and check.tests == ["tests/test_bug.py::test_valid_x"]
    assert "AssertionError" in check.excerpt


def test_the_error_the_issue_reports_reproduces() -> None:
    out = section("test_valid_x", "E   ValueError: bad input")
    check = check_reproduction(BASE, run(["tests/test_bug.py::test_valid_x"], out), FILES, ISSUE)
    assert check.reproduces


def test_an_import_of_something_that_is_not_there_does_not() -> None:
    out = section("test_valid_x", "E   ImportError: cannot import name 'parsr' from 'pkg'")
    check = check_reproduction(BASE, run(["tests/test_bug.py::test_valid_x"], out), FILES, ISSUE)
    assert not check.reproduces and "ImportError" in (check.problem or "")


def test_an_import_of_the_name_the_issue_asks_for_does() -> None:
    issue = "Add a `dump_all` function to pkg."
    out = section("test_dump_all", "E   ImportError: cannot import name 'dump_all' from 'pkg'")
    check = check_reproduction(BASE, run(["tests/test_bug.py::test_dump_all"], out), FILES, issue)
    assert check.reproduces


def test_a_name_error_or_a_fixture_it_invented_does_not() -> None:
    for body in ("E   NameError: name 'parser' is not defined", "E   fixture 'tmp_toml' not found"):
        out = section("test_valid_x", body)
        failing = ["tests/test_bug.py::test_valid_x"]
        assert not check_reproduction(BASE, run(failing, out), FILES, ISSUE).reproduces


def test_a_test_that_passes_on_the_base_commit_does_not() -> None:
    passing = ["tests/test_a.py::test_old", "tests/test_bug.py::test_valid_x"]
    check = check_reproduction(BASE, run([], "2 passed", passing), FILES, ISSUE)
    assert not check.reproduces and "passes on the code before the fix" in (check.problem or "")


def test_breaking_a_test_that_passed_does_not() -> None:
    out = section("test_old", "E   AssertionError")
    failing = ["tests/test_a.py::test_old", "tests/test_bug.py::test_valid_x"]
    check = check_reproduction(BASE, run(failing, out, []), FILES, ISSUE)
    assert not check.reproduces and "tests/test_a.py::test_old" in (check.problem or "")


def test_a_new_case_file_of_a_data_driven_suite_fails_the_test_that_reads_it() -> None:
    """tomli's layout: a new case file under tests/data makes the one test that runs every case
    file fail; that test is the reproduction's."""
    base = ValidationResult(success=True, passing_tests=["tests/test_data.py::test_valid"])
    out = section("test_valid", "E   AssertionError: case 'new.toml' differs")
    files = ["tests/data/valid/new.toml", "tests/data/valid/new.json"]
    failed = run(["tests/test_data.py::test_valid"], out, [])
    check = check_reproduction(base, failed, files, "Parsing new.toml gives the wrong value")
    assert check.reproduces and check.tests == ["tests/test_data.py::test_valid"]


def test_a_new_case_file_read_by_a_test_parametrized_by_its_case_files_is_that_case() -> None:
    """tomli's extras: `test_invalid` is parametrized by the case files it finds, so a new
    case file is a new test, `test_invalid[carriage-return]`, that names no file: failing, it
    is the reproduction's test."""
    old = "tests/test_extras.py::test_invalid[file-ends-after-opening]"
    base = ValidationResult(
        success=True,
        passing_tests=[old],
        report=TestReport(source="junit", outcomes={old: "passed"}),
    )
    case = "tests/test_extras.py::test_invalid[carriage-return]"
    out = section("test_invalid[carriage-return]", "E   Failed: DID NOT RAISE <TOMLDecodeError>")
    failed = run([case], out, [old])
    files = ["tests/data/extras/invalid/multiline-basic-str/carriage-return.toml"]
    check = check_reproduction(base, failed, files, "A bare CR in a multi-line string parses")
    assert check.reproduces and check.tests == [case]


def test_a_new_test_failing_beside_a_test_file_is_not_taken_for_it() -> None:
    """Only a data file's run draws on the tests the baseline did not have: a test file's
    reproduction is the tests its file holds (here they pass: it shows nothing)."""
    old = "tests/test_a.py::test_old"
    listed = BASE.model_copy(
        update={"report": TestReport(source="junit", outcomes={old: "passed"})}
    )
    out = section("test_other", "E   AssertionError")
    failed = run(["tests/test_other.py::test_other"], out, [old, "tests/test_bug.py::test_x"])
    check = check_reproduction(listed, failed, FILES, ISSUE)
    assert not check.reproduces and "passes on the code before" in (check.problem or "")


def test_new_cases_in_a_javascript_fixture_module_fail_the_tests_that_read_them() -> None:
    """node-semver's layout: cases added to test/fixtures/range-parse.js, a module that holds
    no test, make the test file that reads it fail; those are the reproduction's tests."""
    reader = "test/classes/range.js > range parsing > 1.x.5 > invalid range: 1.x.5"
    base = ValidationResult(success=True, passing_tests=[reader, "test/index.js > x"])
    failed = ValidationResult(
        success=False,
        failing_tests=[reader],
        passing_tests=["test/index.js > x"],
        test_output=node_failure("Expected values to be strictly equal:\n    null !== '1.x.5'"),
        report=TestReport(
            source="names", outcomes={reader: "failed", "test/index.js > x": "passed"}
        ),
    )
    files = ["test/fixtures/range-parse.js"]
    check = check_reproduction(base, failed, files, "1.x.5 should be an invalid range")
    assert check.reproduces and check.tests == [reader]


def test_a_test_file_that_breaks_a_test_it_does_not_hold_still_does_not() -> None:
    reader = "test/classes/range.js > range parsing"
    base = ValidationResult(success=True, passing_tests=[reader])
    failed = ValidationResult(
        success=False,
        failing_tests=[reader],
        passing_tests=["test/new.js > bug"],
        report=TestReport(
            source="names", outcomes={reader: "failed", "test/new.js > bug": "passed"}
        ),
    )
    check = check_reproduction(base, failed, ["test/new.js"], ISSUE)
    assert not check.reproduces and "passed before fail" in (check.problem or "")


def test_a_collection_error_does_not() -> None:
    errored = ValidationResult(
        success=False,
        test_output="E   SyntaxError: invalid syntax",
        passing_tests=["tests/test_a.py::test_old"],
        report=TestReport(source="junit", outcomes={"tests/test_bug.py": "error"}),
    )
    check = check_reproduction(BASE, errored, FILES, ISSUE)
    assert not check.reproduces and "SyntaxError" in (check.problem or "")


REPRO = "tests/test_bug.py::test_valid_x"
WITH_REPRO = ValidationResult(
    success=False, failing_tests=[REPRO], passing_tests=["tests/test_a.py::test_old"]
)


def test_a_fix_attempt_failing_only_on_the_reproduction_may_be_the_test_s_fault() -> None:
    attempt = ValidationResult(
        success=False, failing_tests=[REPRO], passing_tests=["tests/test_a.py::test_old"]
    )
    assert fails_only_on([REPRO], attempt, reference=WITH_REPRO, baseline=WITH_REPRO) == [REPRO]


def test_a_fix_attempt_that_also_breaks_a_test_or_passes_it_is_not() -> None:
    broken = ValidationResult(
        success=False, failing_tests=[REPRO, "tests/test_a.py::test_old"], passing_tests=[]
    )
    passed = ValidationResult(success=True, passing_tests=[REPRO, "tests/test_a.py::test_old"])
    timed_out = WITH_REPRO.model_copy(update={"timed_out": True})
    for attempt in (broken, passed, timed_out):
        assert fails_only_on([REPRO], attempt, reference=WITH_REPRO, baseline=WITH_REPRO) == []


JS_FILES = ["test/bug.test.js"]


def node_failure(error: str) -> str:
    """node --test's TAP for one failing test, with its diagnostics."""
    return (
        "TAP version 13\n# Subtest: parses x\nnot ok 1 - parses x\n  ---\n"
        "  location: '/cra/work/test/bug.test.js:4:1'\n  failureType: 'testCodeFailure'\n"
        f"  error: |-\n    {error}\n  ...\n1..1\n# tests 1\n# pass 0\n# fail 1\n"
    )


def test_a_javascript_assertion_failure_reproduces() -> None:
    out = node_failure(
        "Expected values to be strictly equal:\n    'x' !== null\n  code: 'ERR_ASSERTION'"
    )
    check = check_reproduction(BASE, run(["test/bug.test.js > parses x"], out), JS_FILES, ISSUE)
    assert check.reproduces


def test_a_javascript_test_that_cannot_load_what_it_requires_does_not() -> None:
    for error, kind in (
        ("Cannot find module '../lib/parsr'", "cannot find module '../lib/parsr'"),
        ("ReferenceError: parser is not defined", "ReferenceError"),
        (
            "SyntaxError: The requested module '../index.js' does not provide an export "
            "named 'parsr'",
            "SyntaxError",
        ),
    ):
        check = check_reproduction(
            BASE, run(["test/bug.test.js > parses x"], node_failure(error)), JS_FILES, ISSUE
        )
        assert not check.reproduces and kind in (check.problem or ""), error


def test_a_javascript_export_the_issue_asks_for_is_the_behaviour() -> None:
    issue = "Export a `dumpAll` function from the package."
    for error in (
        "SyntaxError: The requested module '../index.js' does not provide an export "
        "named 'dumpAll'",
        "ReferenceError: dumpAll is not defined",
    ):
        check = check_reproduction(
            BASE, run(["test/bug.test.js > dumps all"], node_failure(error)), JS_FILES, issue
        )
        assert check.reproduces, error


def test_a_js_excerpt_shows_the_reproductions_failure_first() -> None:
    """jest's output (recorded): the reproduction's test fails after another one."""
    output = (Path(__file__).parent / "runner_outputs/js/jest29_default.txt").read_text()
    excerpt = failure_excerpt(
        output, ["tests/strings.test.js > strings > deep > deeper > fails too"]
    )
    assert excerpt.startswith("  ● strings › deep › deeper › fails too")
