"""agent.cli.render: the words `cra` prints about a test run."""

from __future__ import annotations

from agent.cli.render import reproduction_lines, verdict
from agent.models import Reproduction, ValidationResult


def test_an_exit_code_of_0_with_failures_reported_is_not_called_passed() -> None:
    hidden = ValidationResult(success=True, exit_code=0, failing_tests=["t.py::test_a"])
    assert verdict(hidden) == "test command exited 0, yet tests failed (t.py::test_a)"
    assert verdict(ValidationResult(success=True, exit_code=0)) == "tests passed"
    assert verdict(None) == "tests not run"


def test_a_rewritten_reproduction_is_said_in_the_run_s_lines() -> None:
    found = Reproduction(
        status="reproduced", tests=["t::a"], commit="0" * 40, rewritten=["t::b was judged wrong"]
    )
    assert "  rewritten: t::b was judged wrong" in reproduction_lines(found)
