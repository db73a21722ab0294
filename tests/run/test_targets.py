"""The tests a task names: as precisely as it names them; the tests a step's own files hold."""

from __future__ import annotations

from agent.models import PlanStep, ValidationResult
from agent.run.landing.attempt import step_target_tests, task_target_tests

BASELINE = ValidationResult(
    success=False,
    failing_tests=[
        "tests/test_fixtures.py::test_valid[spec-table-7]",
        "tests/test_fixtures.py::test_invalid[table-3]",
        "tests/test_fixtures.py::test_invalid[table-4]",
        "tests/test_misc.py::test_load",
    ],
)


def test_named_ids_are_the_targets_not_every_failure_of_their_file() -> None:
    task = "These tests fail:\n- tests/test_fixtures.py::test_valid[spec-table-7]\n"
    assert task_target_tests(BASELINE, task) == ["tests/test_fixtures.py::test_valid[spec-table-7]"]


def test_a_named_test_takes_every_parameter_of_it() -> None:
    assert task_target_tests(BASELINE, "test_invalid is broken") == [
        "tests/test_fixtures.py::test_invalid[table-3]",
        "tests/test_fixtures.py::test_invalid[table-4]",
    ]


def test_a_named_file_takes_its_failures_when_no_test_of_it_is_named() -> None:
    assert task_target_tests(BASELINE, "tests/test_misc.py fails") == [
        "tests/test_misc.py::test_load"
    ]


def test_a_longer_name_is_not_a_mention_of_a_shorter_one() -> None:
    assert task_target_tests(BASELINE, "test_loads and test_validation fail") == []


def test_a_test_only_a_quoted_output_names_is_no_target_when_the_prose_names_one() -> None:
    task = (
        "These tests fail and should pass:\n- tests/test_misc.py::test_load\n\n"
        "Their output:\n```\nFAILED tests/test_misc.py::test_load\n"
        "FAILED tests/test_fixtures.py::test_invalid[table-3]\n```\n"
    )
    assert task_target_tests(BASELINE, task) == ["tests/test_misc.py::test_load"]


def test_a_quoted_output_names_the_targets_when_the_prose_names_none() -> None:
    task = "It crashes:\n```\nFAILED tests/test_misc.py::test_load - KeyError\n```\n"
    assert task_target_tests(BASELINE, task) == ["tests/test_misc.py::test_load"]


def test_a_step_s_test_file_is_a_target_unless_it_exists_and_no_test_is_named_after_it() -> None:
    """tap's snapshot of test/bin/semver.js is a test path that holds no test: a step changing
    it has nothing there to make pass. A test file the step creates must run."""
    baseline = ValidationResult(
        success=True,
        passing_tests=["test/bin/semver.js > inc tests", "test/bin/semver.js"],
    )
    snapshot = "tap-snapshots/test/bin/semver.js.test.cjs"
    step = PlanStep(
        id="s1",
        description="Update the snapshot",
        target_files=[snapshot, "test/bin/semver.js", "test/bin/loose.js"],
    )
    existing = {snapshot, "test/bin/semver.js"}
    assert step_target_tests(baseline, step, existing.__contains__) == [
        "test/bin/semver.js",
        "test/bin/loose.js",
    ]


def test_a_unittest_file_is_named_by_its_tests_module() -> None:
    baseline = ValidationResult(
        success=True, passing_tests=["test_add (calc.tests.test_ops.OpsTest.test_add)"]
    )
    step = PlanStep(id="s1", description="Test sub", target_files=["calc/tests/test_ops.py"])
    assert step_target_tests(baseline, step, lambda path: True) == ["calc/tests/test_ops.py"]
