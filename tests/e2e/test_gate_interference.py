"""The original run and the global state an old test leaves: a fix that changes an API and the
existing test that used it passes the gate even when the old test, run against the new code,
breaks the tests run after it; a new version of a test file that makes another file's test pass
through global state does not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.cli_runs import Solve, solve
from tests.e2e.test_honest_gate import script_plan
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.repos import commit_file, make_python_project
from tests.hostile.answers import edit

pytestmark = pytest.mark.usefixtures("isolated_git")

REGISTRY = '''"""Parsers by name."""

_PARSERS = {"int": int}


def clear():
    _PARSERS.clear()


def register(name, parser):
    _PARSERS[name] = parser


def parse(name, text):
    return _PARSERS[name](text)
'''
# run first (pytest runs files in name order): it leaves the registry as it found it
CUSTOM_TEST = """from calc import registry


def test_custom():
    registry.clear()
    registry.register("int", int)
    assert registry.parse("int", "3") == 3
"""
# run after it, in a file no step changes
PARSE_TEST = """from calc import registry


def test_parse_int():
    assert registry.parse("int", "7") == 7
"""
OLD_REGISTER = "def register(name, parser):\n    _PARSERS[name] = parser"
# the new API takes a kind by name; the old test's callable is refused after its clear()
NEW_REGISTER = (
    "KINDS = {'int': int, 'float': float}\n\n\n"
    "def register(name, kind):\n    _PARSERS[name] = KINDS[kind]"
)
TASK = 'register(name, kind) must take the kind by name ("int", "float"); update test_custom'


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


def registry_project(tmp: Path) -> Path:
    repo = make_python_project(tmp / "repo", bug=False)
    commit_file(repo, "calc/registry.py", REGISTRY, "registry")
    commit_file(repo, "tests/test_custom.py", CUSTOM_TEST, "custom test")
    commit_file(repo, "tests/test_parse.py", PARSE_TEST, "parse test")
    return repo


def plan_the_change(server: ScriptedModelServer) -> None:
    """One step over the registry and the test that uses it, declared as changing that test."""
    files = ["calc/registry.py", "tests/test_custom.py"]
    script_plan(server, "Take the kind by name", files, changes_tests=True)


def run(tmp: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]) -> Solve:
    return solve(tmp, server, TASK, registry_project(tmp), capsys)


def test_an_old_test_that_breaks_the_tests_after_it_against_the_new_api_does_not_block_the_fix(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    plan_the_change(server)
    server.script(
        "implement",
        edit("calc/registry.py", OLD_REGISTER, NEW_REGISTER)
        + "\n"
        + edit(
            "tests/test_custom.py",
            'registry.register("int", int)',
            'registry.register("int", "int")',
        ),
    )
    server.script("gate_test_change", "yes")

    result = run(tmp_path, server, capsys)

    assert result.code == 0, result.out
    [attempt] = result.implement_run().attempts
    kinds = [v.kind for v in attempt.validations]
    assert kinds == ["attempt", "original", "original"]
    beside, alone = attempt.validations[1].result, attempt.validations[2].result
    assert "tests/test_parse.py::test_parse_int" in beside.failing_tests  # after the old test
    assert "tests/test_parse.py::test_parse_int" in alone.passing_tests  # without it


def test_a_new_test_file_that_makes_another_file_s_test_pass_through_global_state_is_refused(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    plan_the_change(server)
    broken = "def parse(name, text):\n    return None"
    cover = (
        "from calc import registry\n\n"
        "registry.parse = lambda name, text: int(text)  # at import: every later test sees it\n"
    )
    tampering = (
        edit("calc/registry.py", "def parse(name, text):\n    return _PARSERS[name](text)", broken)
        + "\n"
        + edit("tests/test_custom.py", "from calc import registry\n", cover)
    )
    server.script("implement", tampering)
    server.script("implement_retry", tampering)
    server.script("gate_test_change", "yes")

    result = run(tmp_path, server, capsys)

    assert result.code != 0, result.out
    first = result.implement_run().attempts[0]
    assert first.error_info is not None and "original test files" in first.error_info
    assert "tests/test_parse.py::test_parse_int" in first.validations[-1].result.failing_tests
