"""A repository whose history holds the kinds of commits `cra bench mine` must tell apart."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from agent.bench.trees import TestBed
from agent.config.files import load_config
from agent.sandbox.bwrap import build_sandbox
from tests.fakes.repos import TEST_COMMAND, git_in, init_repo, write_files
from tests.fakes.sandboxes import test_sandbox_kind

SOURCE = '''def double(x):
    """Twice x."""
    return x * 3


def inc(x):
    """x plus one."""
    return x + 2


def neg(x):
    """Minus x."""
    return -x


def half(x):
    """Half of x."""
    return x / 3
'''
TESTS = """from pkg.mathx import neg


def test_neg():
    assert neg(2) == -2
"""


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    write_files(repo, files)
    git_in(repo, "add", "-A")
    git_in(repo, "commit", "-q", "-m", message)
    return git_in(repo, "rev-parse", "HEAD").strip()


def replace(repo: Path, rel: str, old: str, new: str) -> str:
    text = (repo / rel).read_text()
    assert old in text, (rel, old)
    return text.replace(old, new, 1)


@dataclass
class History:
    repo: Path
    fix_double: str  # a fix and its test: a task
    tests_pass_already: str  # source and a test that passed before: no task
    never_passes: str  # source and a test that fails after too: no task
    only_tests: str  # a test alone: no task
    docs_and_fix: str  # a fix, its test and a README change: a task (README in the patch)
    fix_inc: str  # a fix naming issue #5: a task whose statement is the issue
    data_only: str  # a data file and a test: no code changed, no task


def build_history(root: Path) -> History:
    repo = init_repo(root)
    config = f"[testing]\ntest_command = {json.dumps(TEST_COMMAND)}\ntimeout = 120\n"
    commit(
        repo,
        {
            "cra.toml": config,
            "pkg/__init__.py": "",
            "pkg/mathx.py": SOURCE,
            "tests/__init__.py": "",
            "tests/test_mathx.py": TESTS,
            "README.md": "# mathx\n",
        },
        "Initial",
    )
    fix_double = commit(
        repo,
        {
            "pkg/mathx.py": replace(repo, "pkg/mathx.py", "return x * 3", "return x * 2"),
            "tests/test_double.py": "from pkg.mathx import double\n\n\ndef test_double():\n"
            "    assert double(4) == 8\n",
        },
        "Fix double: it tripled",
    )
    tests_pass_already = commit(
        repo,
        {
            "pkg/mathx.py": replace(repo, "pkg/mathx.py", '"""Minus x."""', '"""The negation."""'),
            "tests/test_neg_more.py": "from pkg.mathx import neg\n\n\ndef test_neg_zero():\n"
            "    assert neg(0) == 0\n",
        },
        "Document neg better",
    )
    never_passes = commit(
        repo,
        {
            "pkg/mathx.py": replace(repo, "pkg/mathx.py", '"""Half of x."""', '"""Half."""'),
            "tests/test_half.py": "from pkg.mathx import half\n\n\ndef test_half():\n"
            "    assert half(4) == 2\n",
        },
        "Try to fix half",
    )
    only_tests = commit(
        repo,
        {
            "tests/test_neg_big.py": "from pkg.mathx import neg\n\n\ndef test_neg_big():\n"
            "    assert neg(10**9) == -(10**9)\n",
        },
        "More tests",
    )
    docs_and_fix = commit(
        repo,
        {
            "pkg/mathx.py": replace(repo, "pkg/mathx.py", "return x / 3", "return x / 2"),
            "README.md": "# mathx\n\nhalf() halves.\n",
        },
        "Fix half and say so",
    )
    write_files(
        repo,
        {
            "tests/test_half.py": "from pkg.mathx import half\n\n\n"
            "def test_half():\n    assert half(4) == 2\n\n\n"
            "def test_half_odd():\n    assert half(3) == 1.5\n"
        },
    )
    git_in(repo, "add", "-A")
    git_in(repo, "commit", "-q", "--amend", "--no-edit")
    docs_and_fix = git_in(repo, "rev-parse", "HEAD").strip()
    fix_inc = commit(
        repo,
        {
            "pkg/mathx.py": replace(repo, "pkg/mathx.py", "return x + 2", "return x + 1"),
            "tests/test_inc.py": "from pkg.mathx import inc\n\n\ndef test_inc():\n"
            "    assert inc(1) == 2\n",
        },
        "Fix inc (closes #5)",
    )
    data_only = commit(
        repo,
        {
            "pkg/data.txt": "numbers\n",
            "tests/test_data.py": "def test_data():\n    assert open('pkg/data.txt').read()\n",
        },
        "Ship the data file",
    )
    return History(
        repo,
        fix_double,
        tests_pass_already,
        never_passes,
        only_tests,
        docs_and_fix,
        fix_inc,
        data_only,
    )


def bed(repo: Path, tmp: Path) -> TestBed:
    """What mining `repo` runs its tests with: its config, the tests' sandbox, this process's
    environment, work folders under `tmp`."""
    config = load_config(repo)
    return TestBed(
        testing=config.testing,
        sandbox=build_sandbox(test_sandbox_kind()),
        environ=dict(os.environ),
        work_dir=tmp / "work",
    )
