"""The test command mining replays with: told not to stop at the first failure where the
command shows how, left as it is (and said so) where it does not."""

from __future__ import annotations

import pytest

from agent.bench.keep_going import full_run
from agent.config.files import TestingConfig


def rewritten(command: str) -> str | None:
    return full_run(TestingConfig(test_command=command)).testing.test_command


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("pytest -x tests", "pytest tests --maxfail=0 --continue-on-collection-errors"),
        ("pytest -xvs tests", "pytest -vs tests --maxfail=0 --continue-on-collection-errors"),
        (
            "PYTHONPATH=src python3 -m pytest -q --maxfail 2 tests",
            "PYTHONPATH=src python3 -m pytest -q tests --maxfail=0 --continue-on-collection-errors",
        ),
        ("pytest --maxfail=1 --sw -rxX", "pytest -rxX --maxfail=0 --continue-on-collection-errors"),
        ("cargo test", "cargo test --no-fail-fast"),
        ("cargo test -- --nocapture", "cargo test --no-fail-fast -- --nocapture"),
        ("jest --bail --ci", "jest --ci"),
        ("CI=1 npx vitest run --bail=1", "CI=1 npx vitest run"),
    ],
)
def test_a_runner_that_stops_early_is_told_to_run_everything(command: str, expected: str) -> None:
    assert rewritten(command) == expected


def test_a_command_already_running_everything_stays_and_says_so() -> None:
    run = full_run(TestingConfig(test_command="cargo test --no-fail-fast"))
    assert run.testing.test_command == "cargo test --no-fail-fast"
    assert "runs every test already" in run.note


@pytest.mark.parametrize(
    "command", ["make test", "pytest -x && echo done", "sh run.sh", "pytest 'unclosed"]
)
def test_a_command_cra_cannot_see_into_runs_as_it_is(command: str) -> None:
    run = full_run(TestingConfig(test_command=command))
    assert run.testing.test_command == command
    assert "runs as it is" in run.note
