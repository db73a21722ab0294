"""agent.gate.verdict: files that are no gate files by their names, and are by what changed in
them —
doctest examples where the tests run them, code that reaches into the test runner."""

from __future__ import annotations

from agent.gate.gate_files import gate_changes
from agent.gate.verdict import rejection_text

OPS = '''"""Arithmetic."""


def mul(a, b):
    """Return a * b.

    >>> mul(2, 3)
    6
    """
    return a * b + 1
'''
FIXED = OPS.replace("a * b + 1", "a * b")
WEAKENED = OPS.replace("    6\n", "    7\n")
USAGE = "Usage\n=====\n\n>>> from calc import mul\n>>> mul(2, 3)\n6\n"
INIT = '"""A calculator."""\n\nfrom calc.ops import mul\n'
PATCHES_PYTEST = INIT + "import _pytest.reports\n\n_pytest.reports.TestReport.outcome = 'passed'\n"


def run_everywhere(path: str) -> bool:
    return True


def run_nowhere(path: str) -> bool:
    return False


def test_a_changed_doctest_expected_value_is_a_test_change_where_the_tests_run_doctests() -> None:
    [change] = gate_changes({"calc/ops.py": (OPS, WEAKENED)}, None, run_everywhere)
    assert (change.path, change.role, change.status, change.tests_only) == (
        "calc/ops.py",
        "test",
        "modified",
        True,
    )
    assert "doctest examples changed or removed (mul)" in change.reason


def test_a_removed_doctest_example_is_a_test_change() -> None:
    removed = FIXED.replace("    >>> mul(2, 3)\n    6\n", "")
    assert gate_changes({"calc/ops.py": (OPS, removed)}, None, run_everywhere)


def test_doctest_examples_are_no_tests_where_the_tests_do_not_run_them() -> None:
    assert gate_changes({"calc/ops.py": (OPS, WEAKENED)}, None, run_nowhere) == []
    assert gate_changes({"calc/ops.py": (OPS, WEAKENED)}, None) == []


def test_a_fix_and_new_doctest_examples_are_no_gate_change() -> None:
    more = FIXED.replace("    6\n", "    6\n    >>> mul(4, 5)\n    20\n")
    assert gate_changes({"calc/ops.py": (OPS, more)}, None, run_everywhere) == []
    assert gate_changes({"calc/new.py": (None, OPS)}, None, run_everywhere) == []


def test_the_repository_is_asked_whether_it_runs_doctests_only_when_examples_changed() -> None:
    asked: list[str] = []

    def runs_doctests(path: str) -> bool:
        asked.append(path)
        return True

    gate_changes({"calc/ops.py": (OPS, FIXED), "README.md": ("a\n", "b\n")}, None, runs_doctests)
    assert asked == []
    gate_changes({"calc/ops.py": (OPS, WEAKENED)}, None, runs_doctests)
    assert asked == ["calc/ops.py"]


def test_a_doctest_text_file_the_tests_run_is_a_test() -> None:
    weakened = USAGE.replace("6\n", "7\n")
    [change] = gate_changes({"docs/usage.rst": (USAGE, weakened)}, None, run_everywhere)
    assert (change.role, change.tests_only) == ("test", True)
    assert "(the file)" in change.reason
    assert (
        gate_changes({"docs/usage.rst": (USAGE, USAGE + "\nMore prose.\n")}, None, run_everywhere)
        == []
    )


def test_a_rewritten_rust_doc_test_is_a_test_change_even_beside_changed_test_items() -> None:
    lib = (
        "/// ```\n/// assert_eq!(calc::mul(2, 3), 6);\n/// ```\n"
        "pub fn mul(a: i64, b: i64) -> i64 {\n    a + b\n}\n\n"
        "#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n"
    )
    weakened = lib.replace("3), 6)", "3), 5)")
    [change] = gate_changes({"src/lib.rs": (lib, weakened)}, None, run_everywhere)
    assert (change.role, change.tests_only) == ("test", True)
    assert "(its doc comments)" in change.reason
    both = weakened.replace("fn t() {}", "fn t() { assert!(true); }")
    [change] = gate_changes({"src/lib.rs": (lib, both)}, None, run_everywhere)
    assert "doctest examples changed" in change.reason


def test_package_code_that_patches_pytest_is_a_runner_config_change() -> None:
    [change] = gate_changes({"calc/__init__.py": (INIT, PATCHES_PYTEST)}, None)
    assert (change.role, change.status, change.tests_only) == ("runner_config", "modified", False)
    assert change.reason.startswith(
        "calc/__init__.py now reaches into the test runner (`_pytest`, "
    )
    assert "like a conftest.py" in change.reason


def test_a_new_module_that_hooks_into_pytest_is_a_created_runner_config_file() -> None:
    hook = "def pytest_collection_modifyitems(items):\n    items.clear()\n"
    [change] = gate_changes({"calc/_compat.py": (None, hook)}, None)
    assert (change.role, change.status) == ("runner_config", "created")
    assert "`def pytest_collection_modifyitems`" in change.reason


def test_pytest_in_a_test_helper_is_a_test_change_not_a_reach() -> None:
    helper = "import pytest\n\n\ndef skip_slow():\n    pytest.skip('slow')\n"
    [change] = gate_changes({"tests/helpers.py": ("", helper)}, None)
    assert (change.role, change.reason) == ("test", "")


def test_a_fix_that_adds_no_pytest_reference_is_no_gate_change() -> None:
    plugin = "import pytest\n\n\ndef check(x):\n    if not x:\n        pytest.fail('no')\n"
    fixed = plugin.replace("if not x:", "if x is None:")
    assert gate_changes({"pytest_calc/plugin.py": (plugin, fixed)}, None) == []
    assert gate_changes({"calc/ops.py": (OPS, FIXED)}, None) == []


def test_a_pytest11_entry_point_is_a_runner_config_change() -> None:
    pyproject = '[project]\nname = "calc"\n'
    cfg = "[metadata]\nname = calc\n"
    plugins = {
        "pyproject.toml": (
            pyproject,
            pyproject + '\n[project.entry-points.pytest11]\ncalc = "calc._plugin"\n',
        ),
        "setup.cfg": (cfg, cfg + "[options.entry_points]\npytest11 =\n    calc = calc._p\n"),
        "setup.py": (
            "from setuptools import setup\nsetup()\n",
            "from setuptools import setup\nsetup(entry_points={'pytest11': []})\n",
        ),
    }
    changes = gate_changes(plugins, None)
    assert [(c.path, c.role) for c in changes] == [
        ("pyproject.toml", "runner_config"),
        ("setup.cfg", "runner_config"),
        ("setup.py", "runner_config"),
    ]


def test_the_rejection_asks_to_leave_doctests_and_pytest_alone() -> None:
    text = rejection_text(["x"], original=True)
    assert "expected output of existing doctest examples" in text
    assert "pytest imports, patches, hooks or plugins" in text
