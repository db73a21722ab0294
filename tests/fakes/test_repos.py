"""The repository builders: real, reproducible, isolated from the user's git config."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest

from tests.fakes.repos import (
    DEFAULT_CRA_TOML,
    FAILING_TEST,
    MUL_BUG,
    TEST_COMMAND,
    commit_file,
    git_in,
    make_bare_remote,
    make_python_project,
)


def run_tests(project: Path) -> subprocess.CompletedProcess[str]:
    """Run the project's configured test command the way a user would."""
    command = tomllib.loads((project / "cra.toml").read_text())["testing"]["test_command"]
    return subprocess.run(
        command,
        shell=True,
        cwd=project,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
        check=False,
    )


def test_the_buggy_project_fails_exactly_test_mul(tmp_path: Path) -> None:
    project = make_python_project(tmp_path / "calc")
    proc = run_tests(project)
    assert proc.returncode == 1
    assert f"FAILED {FAILING_TEST}" in proc.stdout
    assert "1 failed, 2 passed" in proc.stdout


def test_the_fixed_project_passes(tmp_path: Path) -> None:
    project = make_python_project(tmp_path / "calc", bug=False)
    proc = run_tests(project)
    assert proc.returncode == 0, proc.stdout
    assert git_in(project, "status", "--porcelain") == ""  # caches are ignored


def test_the_project_is_one_commit_on_main_with_a_cra_toml(tmp_path: Path) -> None:
    project = make_python_project(tmp_path / "calc")
    assert git_in(project, "rev-list", "--count", "HEAD").strip() == "1"
    assert git_in(project, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert (project / "cra.toml").read_text() == DEFAULT_CRA_TOML
    assert tomllib.loads(DEFAULT_CRA_TOML)["testing"]["test_command"] == TEST_COMMAND
    assert MUL_BUG in (project / "calc" / "ops.py").read_text()


def test_config_none_leaves_out_cra_toml(tmp_path: Path) -> None:
    project = make_python_project(tmp_path / "calc", config=None)
    assert not (project / "cra.toml").exists()


def test_builds_are_reproducible(tmp_path: Path) -> None:
    first = make_python_project(tmp_path / "one")
    second = make_python_project(tmp_path / "two")
    assert git_in(first, "rev-parse", "HEAD") == git_in(second, "rev-parse", "HEAD")


def test_the_users_global_git_config_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hostile = tmp_path / "gitconfig"
    hostile.write_text("[user]\n\tname = Someone Else\n[commit]\n\tgpgsign = true\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(hostile))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Someone Else")
    project = make_python_project(tmp_path / "calc")
    assert git_in(project, "log", "-1", "--format=%an").strip() == "Ada Tester"


def test_commit_file_returns_the_new_head(tmp_path: Path) -> None:
    project = make_python_project(tmp_path / "calc")
    sha = commit_file(project, "docs/README.md", "# calc\n", "Add docs")
    assert sha == git_in(project, "rev-parse", "HEAD").strip()
    assert git_in(project, "log", "-1", "--format=%s").strip() == "Add docs"


def test_make_bare_remote_is_a_cloneable_file_url(tmp_path: Path) -> None:
    remote = make_bare_remote(tmp_path)
    assert git_in(remote, "rev-parse", "--is-bare-repository").strip() == "true"
    git_in(tmp_path, "clone", "--quiet", remote.as_uri(), str(tmp_path / "clone"))
    assert (tmp_path / "clone" / "calc" / "ops.py").is_file()
