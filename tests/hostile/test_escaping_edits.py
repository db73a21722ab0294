"""Edits that leave the repository: a model's edit to an absolute path, through `..`, into
`.git/`, through a symlink leading out, into a submodule or a nested repository, or to a
protected path (workflows, which a repository's config cannot unprotect), each refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.errors import UnsafePath
from agent.execute.edits.patch import apply_edits, check_path
from agent.models import PatchEdit
from bot.run.repo_config import effective_config
from tests.bot.run.test_runner_parts import settings, write


def edit_of(path: str, search: str, replacement: str) -> PatchEdit:
    return PatchEdit(file_path=path, search=search, replacement=replacement)


def tree_of(root: Path, files: dict[str, str]) -> Path:
    for rel, content in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(content)
    return root


@pytest.mark.parametrize("rel", ["../x.py", "src/../../x.py", "a/../b.py"])
def test_attack_edit_climbing_out_with_dotdot_is_refused(tmp_path: Path, rel: str) -> None:
    with pytest.raises(UnsafePath, match=r"'\.\.' in the path"):
        check_path(tmp_path, rel)


@pytest.mark.parametrize("rel", ["/etc/passwd", "C:/Windows/x.py", "\\\\server\\share"])
def test_attack_edit_to_an_absolute_path_is_refused(tmp_path: Path, rel: str) -> None:
    with pytest.raises(UnsafePath, match="absolute path"):
        check_path(tmp_path, rel)


def test_attack_edit_through_a_symlinked_folder_leaving_the_tree_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "repo", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "vendor").symlink_to(outside)
    with pytest.raises(UnsafePath, match="leaves the repository through a symlink"):
        check_path(root, "vendor/x.py")


def test_attack_edit_of_a_symlinked_file_pointing_outside_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "config.py").symlink_to(tmp_path / "nowhere.py")
    with pytest.raises(UnsafePath, match="through a symlink"):
        check_path(root, "config.py")


def test_attack_edit_through_a_symlink_into_dot_git_is_refused(tmp_path: Path) -> None:
    tree_of(tmp_path, {".git/config": "[core]\n"})
    (tmp_path / "settings").symlink_to(".git")
    with pytest.raises(UnsafePath, match=r"inside \.git/"):
        check_path(tmp_path, "settings/config")


@pytest.mark.parametrize("rel", [".git/config", ".git/hooks/pre-commit", "sub/.git/HEAD", ".GIT/x"])
def test_attack_edit_inside_dot_git_is_refused(tmp_path: Path, rel: str) -> None:
    with pytest.raises(UnsafePath, match=r"inside \.git/"):
        check_path(tmp_path, rel)


@pytest.mark.parametrize("rel", [".github/workflows/ci.yml", ".github/workflows/sub/x.yml"])
def test_attack_edit_of_a_workflow_is_refused(tmp_path: Path, rel: str) -> None:
    with pytest.raises(UnsafePath, match=r"protected path \(matches '\.github/workflows/\*\*'\)"):
        check_path(tmp_path, rel)


def test_attack_edit_applied_through_a_symlink_leaving_the_tree_writes_nothing_outside(
    tmp_path: Path,
) -> None:
    root = tree_of(tmp_path / "repo", {"a.py": "x = 1\n"})
    tree_of(tmp_path / "outside", {"secret.py": "key = 1\n"})
    (root / "lib").symlink_to(tmp_path / "outside")
    result = apply_edits([edit_of("lib/secret.py", "key = 1", "key = 2")], root)
    assert not result.success
    assert "symlink" in (result.error_info or "")
    assert (tmp_path / "outside/secret.py").read_text() == "key = 1\n"


@pytest.mark.parametrize(
    "listed", ["path = vendor/lib", 'path = "vendor/lib"', "PATH = ./vendor/lib/ "]
)
def test_attack_edit_inside_a_submodule_is_refused(tmp_path: Path, listed: str) -> None:
    root = tree_of(
        tmp_path,
        {
            ".gitmodules": f'[submodule "lib"]\r\n\t{listed}\r\n\turl = ../lib\n',
            "vendor/library/ok.py": "x = 1\n",
        },
    )
    (root / "vendor/lib").mkdir(parents=True)  # a submodule not checked out: an empty directory
    for rel in ("vendor/lib/new.py", "vendor/lib/deep/er.py", "vendor/lib"):
        with pytest.raises(UnsafePath, match="inside the submodule vendor/lib/"):
            check_path(root, rel)
    assert check_path(root, "vendor/library/ok.py") == (root / "vendor/library/ok.py").resolve()
    assert check_path(root, "vendor/lib.py") == (root / "vendor/lib.py").resolve()


def test_attack_edit_inside_a_nested_repository_is_refused(tmp_path: Path) -> None:
    root = tree_of(
        tmp_path,
        {"tools/clone/.git": "gitdir: /elsewhere\n", "tools/clone/a.py": "", "tools/b.py": ""},
    )
    with pytest.raises(UnsafePath, match="inside tools/clone/, another git repository"):
        check_path(root, "tools/clone/a.py")
    assert check_path(root, "tools/b.py") == (root / "tools/b.py").resolve()


def test_attack_repository_config_unprotecting_workflows_is_ignored(tmp_path: Path) -> None:
    write(tmp_path, '[orchestrator]\nprotected_paths = ["secrets/**"]\n')
    protected = effective_config(tmp_path, settings()).orchestrator.protected_paths
    assert protected == [".github/workflows/**", "secrets/**"]
