"""agent.gate.validation with jest: a plain jest command asked for its JSON report where the
sandbox shows it, and its tests read from the report; any other command read from its output.

The runner is a stand-in in the project's node_modules/.bin: it prints what jest 30 printed and
writes the report jest 30 wrote (runner_outputs/js), its files where the command runs."""

from __future__ import annotations

import shlex
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.config.files import TestingConfig
from agent.gate.validation import run_validation
from agent.sandbox.base import NoSandbox, Sandbox

RECORDED = Path(__file__).parent / "runner_outputs" / "js"
RECORDED_ROOT = "/tmp/rec-jestids/jest30"  # where jest 30 ran when it was recorded
ENVIRON = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/cra"}
FAILING = [
    "tests/math.test.js > math > multiplies",
    "tests/strings.test.js > strings > deep > deeper > fails too",
]

STAND_IN = """#!/bin/sh
for arg; do case "$arg" in --outputFile=*) out="${arg#--outputFile=}";; esac; done
if [ -n "$out" ]; then
  cat recorded_report.txt >&2
  sed "s#%s#$(pwd -P)#g" recorded.json > "$out"
else
  cat recorded_default.txt >&2
fi
exit 1
"""


@pytest.fixture(params=["none", "bwrap"])
def sandbox(request: pytest.FixtureRequest) -> Sandbox:
    if request.param == "none":
        return NoSandbox()
    make: Callable[[], Sandbox] = request.getfixturevalue("bwrap")
    return make()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    (root / "node_modules" / ".bin").mkdir(parents=True)
    jest = root / "node_modules" / ".bin" / "jest"
    jest.write_text(STAND_IN % RECORDED_ROOT)
    jest.chmod(jest.stat().st_mode | stat.S_IEXEC)
    for name, recorded in (
        ("recorded_report.txt", "jest30_report.txt"),
        ("recorded_default.txt", "jest30_default.txt"),
        ("recorded.json", "jest30_report.json"),
    ):
        (root / name).write_text((RECORDED / recorded).read_text())
    return root


def test_a_plain_jest_command_is_read_from_its_json_report(project: Path, sandbox: Sandbox) -> None:
    testing = TestingConfig(test_command="node_modules/.bin/jest --ci", js_report=True)

    result = run_validation(project, testing, environ=ENVIRON, sandbox=sandbox)

    assert result.report.source == "json"
    assert len(result.report.outcomes) == 9
    assert result.report.outcomes["tests/math.test.js > math > adds"] == "passed"
    assert result.failing_tests == FAILING
    assert "tests/strings.test.js > adds" in result.passing_tests


def test_any_other_command_runs_as_it_is_and_is_read_from_its_output(
    project: Path, sandbox: Sandbox
) -> None:
    command = f"sh -c {shlex.quote('node_modules/.bin/jest --ci')}"

    result = run_validation(
        project, TestingConfig(test_command=command), environ=ENVIRON, sandbox=sandbox
    )

    assert result.report.source == "summary"
    assert result.failing_tests == FAILING
    assert result.passing_tests == []


def test_a_plain_jest_command_runs_as_it_is_unless_the_report_is_asked_for(
    project: Path, sandbox: Sandbox
) -> None:
    """The report's flags reach process.argv, which a command-line parser's own tests read
    (commander's fail with "unknown option '--json'"): off unless the config asks."""
    testing = TestingConfig(test_command="node_modules/.bin/jest --ci")

    result = run_validation(project, testing, environ=ENVIRON, sandbox=sandbox)

    assert result.report.source == "summary"
    assert result.failing_tests == FAILING
