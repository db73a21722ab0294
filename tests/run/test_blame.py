"""Which steps of a group a failed gate points to."""

from __future__ import annotations

from agent.models import AttemptRecord, GateVerdict, PlanStep, ValidationResult
from agent.run.landing.blame import changed_symbols, implicated

STEPS = [
    PlanStep(
        id="s1", description="area", target_files=["shapes/geometry.py"], target_symbols=["area"]
    ),
    PlanStep(id="s2", description="describe", target_files=["shapes/report.py"]),
    PlanStep(id="s3", description="main", target_files=["shapes/cli.py"]),
]


def failed(output: str, failing: list[str], *, weakened: bool = False) -> AttemptRecord:
    run = ValidationResult(success=False, test_output=output, failing_tests=failing)
    return AttemptRecord(
        attempt=1,
        validation=run,
        gate=GateVerdict(passed=False, problems=["tests fail"], weakened=weakened),
    )


def test_a_traceback_frame_points_to_its_file_before_any_symbol() -> None:
    attempt = failed(
        "/tmp/w/shapes/report.py:9: in describe\nE   TypeError: area() takes 1",
        ["tests/test_shapes.py::test_describe"],
    )
    assert implicated(STEPS, attempt, {}) == {"s2"}


def test_a_failing_test_points_to_the_file_it_tests() -> None:
    attempt = failed("assert 5 == 6", ["tests/test_cli.py::test_main"])
    assert implicated(STEPS, attempt, {}) == {"s3"}


def test_a_symbol_a_step_changed_points_to_it_when_nothing_surer_does() -> None:
    attempt = failed("E   NameError: name 'surface' is not defined", ["tests/t.py::test_x"])
    diff = (
        "diff --git a/shapes/geometry.py b/shapes/geometry.py\n-def area(w, h):\n"
        "+def surface(w, h):\n"
    )
    assert implicated(STEPS, attempt, {"s1": diff}) == {"s1"}
    assert changed_symbols(STEPS[0], diff) == ["area", "surface"]


def test_a_failure_that_points_nowhere_points_to_every_step() -> None:
    assert implicated(STEPS, failed("Segmentation fault", []), {}) == {"s1", "s2", "s3"}


def test_weakened_tests_point_to_the_steps_that_changed_tests() -> None:
    diff = "diff --git a/tests/test_shapes.py b/tests/test_shapes.py\n-def test_describe():\n"
    attempt = failed("1 test no longer ran", [], weakened=True)
    assert implicated(STEPS, attempt, {"s2": diff}) == {"s2"}
