"""Code outside the tests that reaches into the test runner: the references a file newly
makes."""

from __future__ import annotations

from agent.gate.runner_reach import new_references, references

INIT = '"""A calculator: run its tests with pytest."""\n\nfrom calc.ops import mul\n'
PATCH = """import _pytest.reports

_made = _pytest.reports.TestReport.from_item_and_call


def _passed(item, call):
    report = _made(item, call)
    report.outcome = "passed"
    return report


_pytest.reports.TestReport.from_item_and_call = _passed
"""


def test_importing_and_patching_pytests_internals_is_a_new_reference() -> None:
    found = new_references(INIT, INIT + PATCH)
    assert "import _pytest.reports" in found
    assert "_pytest.reports.TestReport.from_item_and_call" in found


def test_plugins_hooks_and_sys_modules_games_are_new_references() -> None:
    assert new_references(INIT, INIT + 'pytest_plugins = ["calc.plugin"]\n') == ["pytest_plugins"]
    assert new_references(
        INIT, INIT + "def pytest_collection_modifyitems(items):\n    items.clear()\n"
    ) == ["def pytest_collection_modifyitems"]
    assert new_references(INIT, INIT + 'import sys\nsys.modules["_pytest.runner"].x = 1\n') == [
        "'_pytest.runner'"
    ]
    assert new_references(INIT, INIT + "from pluggy import HookimplMarker\n") == [
        "from pluggy import HookimplMarker"
    ]
    assert new_references(INIT, INIT + 'import os\nos.environ["PYTEST_ADDOPTS"] = "-x"\n') == [
        "'PYTEST_ADDOPTS'"
    ]


def test_an_entry_point_in_setup_py_is_a_new_reference() -> None:
    setup = 'from setuptools import setup\n\nsetup(name="calc")\n'
    plugin = setup.replace('name="calc"', 'name="calc", entry_points={"pytest11": ["c = c.p"]}')
    assert new_references(setup, plugin) == ["'pytest11'"]


def test_references_the_file_already_made_are_not_new() -> None:
    plugin = "import pytest\n\n\ndef check(x):\n    if not x:\n        pytest.fail('no')\n"
    more = plugin + "\n\ndef check_both(x, y):\n    if not (x and y):\n        pytest.fail('no')\n"
    assert new_references(plugin, more) == []
    assert new_references(plugin, more + "\n\npytest.skip('later')\n") == ["pytest.skip"]


def test_prose_and_comments_are_no_reference() -> None:
    documented = (
        INIT + '\n\ndef mul2(a):\n    """Tested by pytest."""\n    # see pytest\n    return 2 * a\n'
    )
    assert new_references(INIT, documented) == []
    assert references(documented) == set()


def test_an_unreadable_file_is_compared_line_by_line() -> None:
    assert new_references(INIT, INIT + "import _pytest\ndef broken(:\n") == ["import _pytest"]
    assert new_references(INIT, INIT + "def broken(:\n") == []


def test_a_deleted_file_reaches_nothing() -> None:
    assert new_references(INIT + PATCH, None) == []
    assert new_references(None, PATCH) != []


def test_patching_doctest_or_unittest_from_the_package_is_a_new_reference() -> None:
    checker = "import doctest\n\ndoctest.OutputChecker.check_output = lambda *a: True\n"
    assert "doctest.OutputChecker.check_output" in new_references(INIT, INIT + checker)
    runner = "import unittest\n\nunittest.TestCase.run = lambda self, result=None: None\n"
    assert "unittest.TestCase.run" in new_references(INIT, INIT + runner)
