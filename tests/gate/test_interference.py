"""Which failures of the original run the old versions of the changed test files caused."""

from __future__ import annotations

from agent.gate.interference import cleared, suspects
from agent.models import TestReport, ValidationResult

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
