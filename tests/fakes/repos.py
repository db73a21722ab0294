"""Builders of real git repositories in temporary directories, isolated from the user's git config.

`make_python_project` builds a small package whose `mul` is wrong when `bug=True`; its cra.toml runs
pytest with the interpreter running the tests. SHAs are reproducible: fixed identity and dates.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

# For monkeypatch.setenv in tests that call agent.git.repo: the user's git config stays out.
ISOLATED_GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}
IDENTITY_ENV = {
    "GIT_AUTHOR_NAME": "Ada Tester",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+0000",
    "GIT_COMMITTER_NAME": "Ada Tester",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+0000",
}
_REDIRECTS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG_PARAMETERS")

TEST_COMMAND = f"{shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider"
DEFAULT_CRA_TOML = f"[testing]\ntest_command = {json.dumps(TEST_COMMAND)}\ntimeout = 120\n"

MUL_BUG = "    return a * b + 1\n"
MUL_FIX = "    return a * b\n"
FAILING_TEST = "tests/test_ops.py::test_mul"
PASSING_TESTS = ("tests/test_ops.py::test_add", "tests/test_ops.py::test_sub")

GITIGNORE = "__pycache__/\n*.pyc\n.venv/\n.pytest_cache/\n"
INIT_PY = '''"""A tiny calculator."""

from calc.ops import add, mul, sub

__all__ = ["add", "mul", "sub"]
'''
OPS_PY = '''"""Arithmetic on integers."""


def add(a: int, b: int) -> int:
    """Return a + b."""
    return a + b


def sub(a: int, b: int) -> int:
    """Return a - b."""
    return a - b


def mul(a: int, b: int) -> int:
    """Return a * b."""
{body}'''
TEST_OPS_PY = """from calc import add, mul, sub


def test_add():
    assert add(2, 3) == 5


def test_sub():
    assert sub(5, 3) == 2


def test_mul():
    assert mul(2, 3) == 6
"""


def git_env() -> dict[str, str]:
    """The environment of a test git call: isolated config, fixed identity and dates."""
    env = {k: v for k, v in os.environ.items() if k not in _REDIRECTS}
    return {**env, **ISOLATED_GIT_ENV, **IDENTITY_ENV}


def git_in(path: Path, *args: str) -> str:
    """Run `git args…` in `path` and return stdout; a failure raises CalledProcessError."""
    proc = subprocess.run(
        ["git", *args], cwd=path, env=git_env(), capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, proc.args, proc.stdout, proc.stderr)
    return proc.stdout


def write_files(root: Path, files: dict[str, str]) -> None:
    """Write `files` (relative path → content) under `root`, creating directories."""
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")


def project_files(*, bug: bool, config: str | None) -> dict[str, str]:
    """The files of the calc project."""
    files = {
        ".gitignore": GITIGNORE,
        "calc/__init__.py": INIT_PY,
        "calc/ops.py": OPS_PY.format(body=MUL_BUG if bug else MUL_FIX),
        "tests/__init__.py": "",
        "tests/test_ops.py": TEST_OPS_PY,
    }
    if config is not None:
        files["cra.toml"] = config
    return files


def init_repo(root: Path) -> Path:
    """An empty repository on branch main at `root`."""
    root.mkdir(parents=True, exist_ok=True)
    git_in(root, "init", "--quiet", "--initial-branch=main")
    return root


def make_python_project(
    root: Path, *, bug: bool = True, config: str | None = DEFAULT_CRA_TOML
) -> Path:
    """A committed calc project at `root`; `tests/test_ops.py::test_mul` fails when `bug`."""
    init_repo(root)
    write_files(root, project_files(bug=bug, config=config))
    git_in(root, "add", "--all")
    git_in(root, "commit", "--quiet", "--no-verify", "-m", "Initial calc project")
    return root


def commit_file(repo: Path, rel: str, content: str, message: str) -> str:
    """Write `rel`, commit it, and return the new commit's SHA."""
    write_files(repo, {rel: content})
    git_in(repo, "add", "--", rel)
    git_in(repo, "commit", "--quiet", "--no-verify", "-m", message)
    return git_in(repo, "rev-parse", "HEAD").strip()


def make_bare_remote(tmp: Path, source: Path | None = None) -> Path:
    """A bare clone of `source` (default: a new calc project) at `tmp/remote.git`.

    Use `path.as_uri()` for its `file://` URL.
    """
    if source is None:
        source = make_python_project(tmp / "source")
    remote = tmp / "remote.git"
    git_in(tmp, "clone", "--quiet", "--bare", str(source), str(remote))
    return remote
