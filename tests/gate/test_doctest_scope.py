"""Which files' doctests a repository's tests run, from its test command and test files."""

from __future__ import annotations

from agent.gate.doctest_scope import doctest_scope

PYTEST = "python -m pytest -q"


def test_without_doctests_only_pytests_default_text_files_are_run() -> None:
    scope = doctest_scope([], PYTEST)
    assert not scope.covers("calc/ops.py") and not scope.covers("README.rst")
    assert scope.covers("tests/test_usage.txt") and scope.covers("test_intro.txt")


def test_doctest_modules_in_the_runner_config_runs_the_docstrings_of_source_files() -> None:
    for path, line in [
        ("pytest.ini", "addopts = --doctest-modules"),
        ("pyproject.toml", '  "--doctest-modules",'),
        ("setup.cfg", "addopts = -q --doctest-modules"),
        ("tox.ini", "commands = pytest --doctest-modules src"),
    ]:
        assert doctest_scope([(path, line)], PYTEST).covers("src/calc/ops.py"), path


def test_doctest_modules_in_the_test_command() -> None:
    assert doctest_scope([], f"{PYTEST} --doctest-modules").covers("calc/ops.py")


def test_a_test_that_runs_a_modules_doctests() -> None:
    for line in [
        "    doctest.testmod(calc.ops)",
        "from doctest import testmod",
        "    tests.addTests(doctest.DocTestSuite(ops))",
    ]:
        assert doctest_scope([("tests/test_docs.py", line)], PYTEST).covers("calc/ops.py")


def test_doctest_glob_runs_matching_text_files() -> None:
    scope = doctest_scope([("pytest.ini", "addopts = --doctest-glob='*.rst'")], PYTEST)
    assert scope.covers("docs/usage.rst") and scope.covers("README.rst")
    assert not scope.covers("README.md") and not scope.covers("calc/ops.py")


def test_a_test_that_runs_a_named_text_file() -> None:
    line = '    failures, _ = doctest.testfile("../README.md")'
    scope = doctest_scope([("tests/test_readme.py", line)], PYTEST)
    assert scope.covers("README.md") and not scope.covers("docs/other.md")
    suite = 'suite = doctest.DocFileSuite("docs/usage.rst", module_relative=False)'
    assert doctest_scope([("tests/test_docs.py", suite)], PYTEST).covers("docs/usage.rst")


def test_a_doctest_runner_as_the_test_command_runs_every_text_file() -> None:
    for command in [
        "python -m doctest -v README.rst calc/ops.py",
        "make doctest",
        "sphinx-build -b doctest docs docs/_build",
    ]:
        scope = doctest_scope([], command)
        assert scope.covers("docs/index.rst") and scope.covers("calc/ops.py"), command


def test_doctests_mentioned_outside_the_tests_and_their_config_do_not_count() -> None:
    lines = [
        ("README.md", "Run `pytest --doctest-modules` to check the examples."),
        ("docs/conf.py", "extensions = ['sphinx.ext.doctest']"),
        ("calc/ops.py", "    doctest.testmod()"),
    ]
    scope = doctest_scope(lines, PYTEST)
    assert not scope.covers("calc/ops.py") and not scope.covers("docs/index.rst")


def test_cargo_test_runs_rust_doc_tests_unless_it_selects_other_targets() -> None:
    for command, runs in [
        ("cargo test --offline --no-fail-fast", True),
        ("make test", True),
        ("cargo test --lib", False),
        ("cargo test --tests", False),
        ("cargo test --lib --doc", True),
        ("cargo nextest run", False),
        ("cargo test -- --test-threads=1", True),
    ]:
        assert doctest_scope([], command).covers("src/lib.rs") is runs, command
