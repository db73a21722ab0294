"""Repository tricks: a repository (or its commands) that plants git config, filters,
`core.fsmonitor` and hooks for cra's own git to run, repoints `.git` or a submodule's git dir,
replaces a folder with a link out, or records a submodule commit only its URL has; none of it
runs or is fetched outside the sandbox."""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest

from agent.git import branches, worktrees
from agent.git import repo as git
from agent.git.workspace import close_workspace, open_workspace, scratch_tree
from agent.sandbox.commands import run_command
from tests.fakes.probes import PATH, MakeBwrap
from tests.fakes.repos import MUL_BUG, MUL_FIX, git_in, make_python_project, write_files
from tests.git.test_submodules import with_submodule

pytestmark = pytest.mark.usefixtures("isolated_git")


# A git dir of the command's making, whose config runs a command (writing `marker`) when git
# refreshes its index or cleans a file: what a test command would point cra's own git at.
HOSTILE_GIT_DIR = textwrap.dedent("""\
    evil="$PWD/$1"; real="$2"
    mkdir -p "$evil/objects/info" "$evil/refs/heads" "$evil/info"
    echo "$real/objects" > "$evil/objects/info/alternates"
    cat "$real/HEAD" > "$evil/HEAD"; cp "$real/index" "$evil/index"
    printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = "touch {marker}; false"\\n[filter "x"]\\n\\tclean = "touch {marker}; cat"\\n' > "$evil/config"
    echo '* filter=x' > "$evil/info/attributes"
""")  # noqa: E501


def test_attack_repointing_the_worktrees_git_at_a_hostile_git_dir_is_refused(
    bwrap: MakeBwrap, tmp_path: Path
) -> None:
    from agent.git import repo as git

    source = make_python_project(tmp_path / "source", bug=False)
    tree = tmp_path / "tree"
    git_in(source, "worktree", "add", "--quiet", "--detach", str(tree), "HEAD")
    marker = tmp_path / "marker"
    admin = (tree / ".git").read_text()
    script = HOSTILE_GIT_DIR.format(marker=marker) + textwrap.dedent("""\
        printf 'gitdir: %s\\n' "$evil" > .git || echo rewrite refused
        rm -f .git || echo removal refused
        mv .git moved || echo move refused
    """)
    real = git_in(tree, "rev-parse", "--absolute-git-dir").strip()

    result = run_command(
        f"set -- calc/evil {real}\n{script}",
        tree,
        sandbox=bwrap(),
        timeout=60,
        env={"PATH": PATH},
        max_output_chars=5000,
    )

    refused = [line for line in result.output.splitlines() if line.endswith("refused")]
    assert refused == ["rewrite refused", "removal refused", "move refused"]
    assert (tree / ".git").read_text() == admin
    (tree / "calc" / "ops.py").write_text("# changed\n")
    worktrees.status_entries(tree), git.diff(tree, "HEAD"), worktrees.reset_clean(tree, "HEAD")
    assert not marker.exists()


def test_attack_submodule_repointed_at_a_hostile_git_dir_never_runs_its_filter(
    bwrap: MakeBwrap, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent.git import repo as git
    from agent.git.workspace import open_workspace

    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    lib = make_python_project(tmp_path / "lib", bug=False)
    source = make_python_project(tmp_path / "source", bug=False)
    git_in(
        source,
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "--quiet",
        "add",
        str(lib),
        "vendor/lib",
    )
    git_in(source, "commit", "--quiet", "-m", "Add lib")
    ws = open_workspace(source, work_dir=tmp_path / "work", run_id="r1", branch_hint="x")
    tree, marker = ws.worktree, tmp_path / "marker"
    real = git_in(tree / "vendor/lib", "rev-parse", "--absolute-git-dir").strip()
    script = HOSTILE_GIT_DIR.format(marker=marker) + textwrap.dedent("""\
        printf 'gitdir: ../../evil\\n' > vendor/lib/.git
        echo '* filter=x' > vendor/lib/.gitattributes; touch vendor/lib/calc/ops.py
        echo changed >> calc/ops.py
    """)

    result = run_command(
        f"set -- evil {real}\n{script}",
        tree,
        sandbox=bwrap(),
        timeout=60,
        env={"PATH": PATH},
        max_output_chars=5000,
    )

    assert result.exit_code == 0, result.output
    assert "calc/ops.py" in git.diff(tree, ws.base)  # the worktree's diff, via `git add --all`
    worktrees.status_entries(tree), git.diff_stats(tree, ws.base)
    git.commit_all(tree, "all", author_name="a", author_email="a@example.com")
    worktrees.reset_clean(tree, ws.base)
    assert not marker.exists()


def test_attack_unchecked_out_submodule_given_a_hostile_git_dir_never_runs_its_filter(
    bwrap: MakeBwrap, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bot's mirrors are bare: no submodule is ever checked out. A repository that commits
    a git dir under another name (with a clean filter) and a file `gitdir: ../evil` has its
    command link that file into the gitlink's empty folder (a hard link keeps the checkout's
    owner, which git's ownership check asks for); `git add --all` would run `git status` in
    there, outside the sandbox, and with it the filter."""
    from agent.git import repo as git
    from agent.git.workspace import open_workspace

    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    marker = tmp_path / "marker"
    source = make_python_project(tmp_path / "source", bug=False)
    template = make_python_project(tmp_path / "template", bug=False)
    evil = source / "evil"
    for folder in ("objects/info", "refs/heads", "info"):
        (evil / folder).mkdir(parents=True)
        (evil / folder / ".keep").write_text("")
    (evil / "HEAD").write_text("ref: refs/heads/main\n")
    shutil.copyfile(template / ".git" / "index", evil / "index")
    (evil / "config").write_text(
        f'[core]\n\trepositoryformatversion = 0\n[filter "x"]\n\tclean = "touch {marker}; cat"\n'
    )
    (evil / "info" / "attributes").write_text("* filter=x\n")
    (source / "gitfile").write_text("gitdir: ../evil\n")
    git_in(source, "add", ".")
    git_in(source, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},lib")
    git_in(source, "commit", "--quiet", "-m", "A submodule nobody checks out")
    mirror = tmp_path / "mirror.git"
    git_in(tmp_path, "clone", "--quiet", "--mirror", str(source), str(mirror))
    ws = open_workspace(mirror, work_dir=tmp_path / "work", run_id="r1", branch_hint="x")
    tree = ws.worktree
    script = (
        "ln gitfile lib/.git && cp calc/ops.py lib/ && touch -d 2001-01-01 lib/ops.py"
        " && echo changed >> calc/ops.py"
    )

    result = run_command(
        script, tree, sandbox=bwrap(), timeout=60, env={"PATH": PATH}, max_output_chars=5000
    )

    assert result.exit_code == 0, result.output
    assert "calc/ops.py" in git.diff(tree, ws.base)
    git.diff_stats(tree, ws.base)
    git.commit_all(tree, "all", author_name="a", author_email="a@example.com")
    assert not marker.exists()


def test_attack_repository_hooks_never_run(tmp_path: Path) -> None:
    """Hooks that run on checkouts, index and ref updates too, not only on commits."""
    project = make_python_project(tmp_path / "project")
    marks = tmp_path / "marks"
    marks.mkdir()
    hooks = project / ".git" / "hooks"
    names = (
        "post-checkout",
        "post-index-change",
        "reference-transaction",
        "pre-commit",
        "post-commit",
        "pre-auto-gc",
        "post-rewrite",
    )
    for name in names:
        (hooks / name).write_text(f"#!/bin/sh\ntouch {marks}/{name}\n")
        (hooks / name).chmod(0o755)
    worktree = worktrees.add_worktree(
        project,
        tmp_path / "wt",
        commit=git.head_commit(project),
        branch=branches.unique_branch(project, "cra/hooks"),
    )
    ops = worktree / "calc" / "ops.py"
    ops.write_text(ops.read_text().replace(MUL_BUG, MUL_FIX))
    assert git.commit_all(worktree, "Fix", author_name="a", author_email="a@x") is not None
    worktrees.reset_clean(worktree, git.head_commit(project))
    worktrees.remove_worktree(project, worktree)
    branches.delete_branch(project, "cra/hooks")

    assert sorted(p.name for p in marks.iterdir()) == []


def test_attack_tests_folder_replaced_with_a_link_out_is_never_written_through(
    tmp_path: Path,
) -> None:
    """A test command (in the sandbox) may replace the worktree's tests folder with a symlink
    to anywhere; putting the original tests in place (as the worker, outside the sandbox) then
    writes and deletes in the copy, never where the link points."""
    repo = make_python_project(tmp_path / "repo")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test_ops.py").write_text("kept\n")
    (outside / "test_new.py").write_text("kept\n")
    shutil.rmtree(repo / "tests")
    (repo / "tests").symlink_to(outside)
    restore = {"tests/test_ops.py": "def test_a():\n    pass\n", "tests/test_new.py": None}

    with scratch_tree(repo, restore, parent=tmp_path / "scratch") as tree:
        assert not (tree / "tests").is_symlink()
        assert (tree / "tests/test_ops.py").read_text() == "def test_a():\n    pass\n"
        assert not (tree / "tests/test_new.py").exists()

    assert sorted((p.name, p.read_text()) for p in outside.iterdir()) == [
        ("test_new.py", "kept\n"),
        ("test_ops.py", "kept\n"),
    ]


def test_attack_submodule_commit_only_its_url_has_is_never_fetched(
    tmp_path: Path,
) -> None:
    repo, lib, _ = with_submodule(tmp_path)
    write_files(lib, {"helper.py": "def three():\n    return 3\n"})
    git_in(lib, "commit", "--quiet", "--all", "-m", "newer")
    newer = git_in(lib, "rev-parse", "HEAD").strip()
    # The superproject records the newer commit, which only the library's URL has.
    git_in(repo, "update-index", "--cacheinfo", f"160000,{newer},vendor/lib")
    git_in(repo, "commit", "--quiet", "-m", "Use the newer library")

    ws = open_workspace(repo, work_dir=tmp_path / "work", run_id="r3", branch_hint="fix")

    [note] = ws.notes
    assert note.startswith(
        f"the submodule vendor/lib could not be checked out at {newer[:12]} "
        "from this checkout's copy ("
    )
    assert note.endswith("`git submodule update` in the checkout fetches it")
    assert not (ws.worktree / "vendor/lib/helper.py").exists()
    close_workspace(ws, keep_branch=False)
    assert not ws.worktree.exists()
