"""Files that are test configuration only in parts: their test sections put back as they were,
the rest left as the step made it (for the run of the original tests)."""

from __future__ import annotations

import json
import tomllib

from agent.gate.testing_sections import testing_sections as sections_of
from agent.gate.testing_sections import with_testing_sections_of

PYPROJECT = '''[project]
name = "pkg"
version = "1.0"

[tool.pytest.ini_options]
addopts = "-q"

[tool.tox]
legacy_tox_ini = """
[tox]
envlist = py311
[testenv]
commands = pytest
"""
'''


def test_pyproject_keeps_its_new_metadata_and_takes_back_its_test_sections() -> None:
    after = (
        PYPROJECT.replace('version = "1.0"', 'version = "2.0"')
        .replace('addopts = "-q"', 'addopts = "-q --deselect tests/t.py::test_x"')
        .replace("[testenv]\n", "")
    )
    spliced = with_testing_sections_of("pyproject.toml", after, PYPROJECT)
    assert spliced is not None
    assert tomllib.loads(spliced)["project"]["version"] == "2.0"
    assert sections_of("pyproject.toml", spliced) == sections_of("pyproject.toml", PYPROJECT)


def test_a_test_section_that_is_not_a_whole_table_cannot_be_spliced() -> None:
    before = '[tool]\npytest.ini_options.addopts = "-q"\n'
    after = '[tool]\npytest.ini_options.addopts = "-x"\n'
    assert with_testing_sections_of("pyproject.toml", after, before) is None


def test_package_json_keeps_its_dependencies_and_takes_back_its_scripts() -> None:
    before = json.dumps({"name": "p", "scripts": {"test": "jest"}, "dependencies": {"a": "1"}})
    after = json.dumps({"name": "p", "scripts": {"test": "true"}, "dependencies": {"a": "2"}})
    spliced = json.loads(with_testing_sections_of("package.json", after, before) or "{}")
    assert spliced == {"name": "p", "scripts": {"test": "jest"}, "dependencies": {"a": "2"}}


def test_setup_cfg_takes_back_its_pytest_section() -> None:
    before = "[metadata]\nname = p\n\n[tool:pytest]\naddopts = -q\n"
    after = "[metadata]\nname = q\n\n[tool:pytest]\naddopts = -p no:x\n"
    assert with_testing_sections_of("setup.cfg", after, before) == (
        "[metadata]\nname = q\n\n[tool:pytest]\naddopts = -q\n"
    )
