"""Which failures of the original run the old versions of the changed test files caused."""

from __future__ import annotations

from agent.gate.interference import cleared, stopped, stopped_by, suspects
from agent.models import TestCounts, TestReport, ValidationResult

CHANGED = ["tests/test_custom.py"]


def run(failing: list[str], passing: list[str], **extra: object) -> ValidationResult:
    return ValidationResult(
        success=not failing, failing_tests=failing, passing_tests=passing, **extra
    )


ATTEMPT = run([], ["tests/test_custom.py::test_custom", "tests/test_parse.py::test_int"])
BESIDE = run(
    ["tests/test_custom.py::test_custom", "tests/test_parse.py::test_int"], [], exit_code=1
)


def test_a_failure_outside_the_changed_files_that_passed_in_the_attempt_is_suspected() -> None:
    assert suspects(BESIDE, ATTEMPT, CHANGED) == ["tests/test_parse.py::test_int"]


def test_a_failure_its_location_places_in_a_changed_file_is_not_suspected() -> None:
    placed = TestReport(files={"calc > mul": "test/calc.test.js"})  # node's ids name no file
    beside = run(["calc > mul", "concat"], [], exit_code=1, report=placed)
    attempt = run([], ["calc > mul", "concat"])
    assert suspects(beside, attempt, ["test/calc.test.js"]) == ["concat"]


def test_a_failure_that_failed_in_the_attempt_too_is_the_code_s() -> None:
    attempt = run(["tests/test_parse.py::test_int"], ["tests/test_custom.py::test_custom"])
    assert suspects(BESIDE, attempt, CHANGED) == []


def test_nothing_is_suspected_when_no_test_file_changed_or_the_run_timed_out() -> None:
    assert suspects(BESIDE, ATTEMPT, []) == []
    assert suspects(BESIDE.model_copy(update={"timed_out": True}), ATTEMPT, CHANGED) == []


def test_a_suspect_that_passes_alone_is_cleared_and_the_changed_tests_still_fail() -> None:
    alone = run([], ["tests/test_parse.py::test_int"])
    judged = cleared(BESIDE, alone, ["tests/test_parse.py::test_int"])
    assert judged.failing_tests == ["tests/test_custom.py::test_custom"]
    assert "tests/test_parse.py::test_int" in judged.passing_tests and not judged.success


def test_clearing_every_failure_makes_the_run_pass() -> None:
    beside = run(["tests/test_parse.py::test_int"], [], exit_code=1)
    judged = cleared(beside, run([], ["tests/test_parse.py::test_int"]), beside.failing_tests)
    assert judged.success and judged.failing_tests == []


def test_a_suspect_that_fails_alone_stays_a_failure() -> None:
    alone = run(["tests/test_parse.py::test_int"], [])
    assert cleared(BESIDE, alone, ["tests/test_parse.py::test_int"]) == BESIDE
    timed_out = run([], ["tests/test_parse.py::test_int"], timed_out=True)
    assert cleared(BESIDE, timed_out, ["tests/test_parse.py::test_int"]) == BESIDE


JEST = ["tests/exit.test.js", "tests/parse.test.js > parse > int"]
REPORTED = TestReport(source="summary", counts=TestCounts(passed=2))
EXITED = run(  # jest killed by an old test: `process.exit called with "1"`, no summary
    ['process.exit called with "1"'],
    [],
    exit_code=1,
    test_output='● process.exit called with "1"\n  at tests/exit.test.js:4:3',
)
ATTEMPT_JS = run([], JEST, report=REPORTED)


def test_a_run_the_attempts_own_run_reported_to_its_end_has_stopped_when_it_did_not() -> None:
    assert stopped(EXITED, ATTEMPT_JS, ["tests/exit.test.js"])
    cut = EXITED.model_copy(update={"report": TestReport(counts=TestCounts(), incomplete="bail")})
    assert stopped(cut, ATTEMPT_JS, ["tests/exit.test.js"])
    # jest reported, without the files it had not run when a test ended its process
    ended = REPORTED.model_copy(update={"stopped_in": "tests/exit.test.js"})
    assert stopped(EXITED.model_copy(update={"report": ended}), ATTEMPT_JS, JEST[:1])


def test_no_stop_without_a_changed_test_file_a_report_before_or_with_a_timeout() -> None:
    assert not stopped(EXITED, ATTEMPT_JS, [])
    assert not stopped(EXITED, run([], JEST), ["tests/exit.test.js"])  # never reported
    assert not stopped(EXITED.model_copy(update={"timed_out": True}), ATTEMPT_JS, JEST[:1])
    assert not stopped(run(["x"], [], report=REPORTED), ATTEMPT_JS, ["tests/exit.test.js"])


def test_a_stop_the_rest_runs_through_is_the_changed_files_their_tests_failing() -> None:
    alone = run([], JEST[1:], report=TestReport(source="summary", counts=TestCounts(passed=1)))
    judged = stopped_by(EXITED, alone, ATTEMPT_JS, ["tests/exit.test.js"])
    assert judged is not None and not judged.success
    assert judged.failing_tests == ["tests/exit.test.js"]
    assert judged.report.counts == TestCounts(passed=1, failed=1)
    assert judged.report.outcomes["tests/exit.test.js"] == "failed"
    assert "process.exit called" in (judged.test_output or "")


def test_a_file_the_run_before_names_no_test_of_fails_as_itself() -> None:
    before = run([], ["exit > works"])  # node's ids name no file
    alone = run([], [], report=TestReport(source="summary", counts=TestCounts(passed=1)))
    judged = stopped_by(EXITED, alone, before, ["test/exit.test.js"])
    assert judged is not None and judged.failing_tests == ["test/exit.test.js"]


def test_a_stop_the_rest_does_not_run_through_either_is_not_theirs() -> None:
    assert stopped_by(EXITED, EXITED, ATTEMPT_JS, ["tests/exit.test.js"]) is None
    ended = REPORTED.model_copy(update={"stopped_in": "tests/other.test.js"})
    assert stopped_by(EXITED, run([], [], report=ended), ATTEMPT_JS, JEST[:1]) is None
    slow = run([], JEST[1:], report=REPORTED, timed_out=True)
    assert stopped_by(EXITED, slow, ATTEMPT_JS, ["tests/exit.test.js"]) is None
