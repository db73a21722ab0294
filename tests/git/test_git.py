"""agent.git.repo against real repositories in tmp_path."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agent.errors import CredentialsInUrl, GitError
from agent.git import remotes, worktrees
from agent.git import repo as git
from agent.git.branches import unique_branch
from tests.fakes.repos import (
    ISOLATED_GIT_ENV,
    MUL_BUG,
    MUL_FIX,
    commit_file,
    git_in,
    make_bare_remote,
    make_python_project,
)


@pytest.fixture(autouse=True)
def _isolated_git(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ISOLATED_GIT_ENV.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_python_project(tmp_path / "project")


@pytest.fixture
def worktree(project: Path, tmp_path: Path) -> Path:
    return worktrees.add_worktree(
        project, tmp_path / "wt", commit=git.head_commit(project), branch="cra/work"
    )


def snapshot(repo: Path) -> dict[str, str]:
    """What a user would notice: status, index, HEAD, the branch they are on."""
    return {
        "status": git_in(repo, "status", "--porcelain", "--untracked-files=all"),
        "index": git_in(repo, "ls-files", "--stage"),
        "head": git_in(repo, "rev-parse", "HEAD"),
        "branch": git_in(repo, "symbolic-ref", "HEAD"),
        "ops": (repo / "calc" / "ops.py").read_text(),
    }


def branches(repo: Path) -> set[str]:
    return set(git_in(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads").split())


def replace_in(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text().replace(old, new))


# --- worktrees -------------------------------------------------------------------------------


def test_worktree_from_a_checkout_leaves_the_users_tree_index_and_head_alone(
    project: Path, tmp_path: Path
) -> None:
    replace_in(project / "calc" / "ops.py", MUL_BUG, "    return 0  # user's edit\n")
    (project / "notes.txt").write_text("staged by the user\n")
    git_in(project, "add", "notes.txt")
    before, before_branches = snapshot(project), branches(project)

    wt = worktrees.add_worktree(
        project, tmp_path / "wt", commit=git.head_commit(project), branch="cra/fix-mul"
    )
    replace_in(wt / "calc" / "ops.py", MUL_BUG, MUL_FIX)
    git.commit_all(wt, "Fix mul", author_name="cra", author_email="cra@example.com")

    assert snapshot(project) == before
    assert branches(project) == before_branches | {"cra/fix-mul"}
    assert git.current_branch(wt) == "cra/fix-mul"
    assert git.head_commit(wt) != before["head"]


def test_worktree_of_an_existing_branch_is_a_git_error_unless_forced(
    project: Path, tmp_path: Path
) -> None:
    base = git.head_commit(project)
    git_in(project, "branch", "taken")
    with pytest.raises(GitError, match="already exists"):
        worktrees.add_worktree(project, tmp_path / "wt", commit=base, branch="taken")

    worktrees.add_worktree(project, tmp_path / "wt2", commit=base, branch="taken", force=True)
    assert git.current_branch(tmp_path / "wt2") == "taken"


def test_worktree_from_a_mirror_of_a_file_remote(tmp_path: Path) -> None:
    remote = make_bare_remote(tmp_path)
    mirror = remotes.mirror_sync(remote.as_uri(), tmp_path / "mirrors" / "calc.git")
    base = git.resolve_commit(mirror, "main")

    wt = worktrees.add_worktree(mirror, tmp_path / "wt", commit=base, branch="cra/issue-1")

    assert git.head_commit(wt) == base == git_in(remote, "rev-parse", "main").strip()
    assert (wt / "calc" / "ops.py").is_file()
    assert git.current_branch(wt) == "cra/issue-1"


def test_mirror_sync_fetches_new_commits_and_spares_branches_checked_out_in_worktrees(
    tmp_path: Path,
) -> None:
    source = make_python_project(tmp_path / "source")
    remote = make_bare_remote(tmp_path, source)
    mirror = remotes.mirror_sync(remote.as_uri(), tmp_path / "calc.git")
    wt = worktrees.add_worktree(
        mirror, tmp_path / "wt", commit=git.resolve_commit(mirror, "main"), branch="cra/issue-1"
    )
    (wt / "new.txt").write_text("work in progress\n")
    ours = git.commit_all(wt, "WIP", author_name="cra", author_email="cra@example.com")
    new_main = commit_file(source, "README.md", "# calc\n", "Add a README")
    git_in(source, "push", "--quiet", str(remote), "main")

    remotes.mirror_sync(remote.as_uri(), tmp_path / "calc.git")

    assert git.resolve_commit(mirror, "main") == new_main
    assert git.resolve_commit(mirror, "cra/issue-1") == ours


def test_push_branch_from_a_mirror_worktree_pushes_only_that_branch(tmp_path: Path) -> None:
    remote = make_bare_remote(tmp_path)
    before = git_in(remote, "for-each-ref")
    mirror = remotes.mirror_sync(remote.as_uri(), tmp_path / "calc.git")
    wt = worktrees.add_worktree(
        mirror, tmp_path / "wt", commit=git.resolve_commit(mirror, "main"), branch="cra/issue-7"
    )
    (wt / "new.txt").write_text("fix\n")
    sha = git.commit_all(wt, "Fix", author_name="cra", author_email="cra@example.com")
    git_in(mirror, "branch", "local-only")

    remotes.push_branch(wt, remote.as_uri(), "cra/issue-7")

    after = git_in(remote, "for-each-ref")
    assert git_in(remote, "rev-parse", "cra/issue-7").strip() == sha
    assert set(after.splitlines()) - set(before.splitlines()) == {
        f"{sha} commit\trefs/heads/cra/issue-7"
    }


def _pushed_twice(tmp_path: Path) -> tuple[Path, Path]:
    """A remote and a mirror worktree on cra/issue-7 with a commit to push."""
    remote = make_bare_remote(tmp_path)
    mirror = remotes.mirror_sync(remote.as_uri(), tmp_path / "calc.git")
    wt = worktrees.add_worktree(
        mirror, tmp_path / "wt", commit=git.resolve_commit(mirror, "main"), branch="cra/issue-7"
    )
    (wt / "new.txt").write_text("fix\n")
    git.commit_all(wt, "Fix", author_name="cra", author_email="cra@example.com")
    return remote, wt


def test_a_push_onto_a_branch_that_moved_on_says_so(tmp_path: Path) -> None:
    remote, wt = _pushed_twice(tmp_path)
    main = git_in(remote, "rev-parse", "main").strip()
    theirs = git_in(remote, "commit-tree", f"{main}^{{tree}}", "-p", main, "-m", "Theirs").strip()
    git_in(remote, "update-ref", "refs/heads/cra/issue-7", theirs)

    with pytest.raises(GitError) as caught:
        remotes.push_branch(wt, remote.as_uri(), "cra/issue-7")

    assert remotes.push_rejection(caught.value) == (
        "the branch changed on GitHub while cra worked (someone pushed to it)"
    )
    assert git_in(remote, "rev-parse", "cra/issue-7").strip() == theirs


def test_a_push_the_remote_refuses_quotes_its_reason(tmp_path: Path) -> None:
    remote, wt = _pushed_twice(tmp_path)
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'error: GH006: Protected branch update failed' >&2\nexit 1\n")
    hook.chmod(0o755)

    with pytest.raises(GitError) as caught:
        remotes.push_branch(wt, remote.as_uri(), "cra/issue-7", replacing="")

    assert remotes.push_rejection(caught.value) == ("GitHub refused it (pre-receive hook declined)")


def test_a_push_onto_a_moved_branch_is_stale_and_one_the_remote_refuses_is_not(
    tmp_path: Path,
) -> None:
    remote, wt = _pushed_twice(tmp_path)
    main = git_in(remote, "rev-parse", "main").strip()
    git_in(remote, "update-ref", "refs/heads/cra/issue-7", main)
    with pytest.raises(GitError) as moved:
        remotes.push_branch(wt, remote.as_uri(), "cra/issue-7", replacing="")
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    with pytest.raises(GitError) as refused:
        remotes.push_branch(wt, remote.as_uri(), "cra/issue-7", replacing=main)

    assert remotes.push_stale(moved.value) and not remotes.push_stale(refused.value)
    assert not remotes.push_busy(refused.value)


def test_fetch_branch_brings_a_remote_branch_in_without_changing_a_ref(tmp_path: Path) -> None:
    remote, _ = _pushed_twice(tmp_path)
    main = git_in(remote, "rev-parse", "main").strip()
    theirs = git_in(remote, "commit-tree", f"{main}^{{tree}}", "-p", main, "-m", "Theirs").strip()
    git_in(remote, "update-ref", "refs/heads/cra/issue-7", theirs)
    mirror = tmp_path / "calc.git"
    refs = git_in(mirror, "for-each-ref")

    assert remotes.fetch_branch(mirror, remote.as_uri(), "cra/issue-7") == theirs
    assert remotes.fetch_branch(mirror, remote.as_uri(), "cra/issue-8") is None
    assert git_in(mirror, "cat-file", "-t", theirs).strip() == "commit"
    assert git_in(mirror, "for-each-ref") == refs


def test_other_git_failures_are_no_push_rejection(tmp_path: Path) -> None:
    _, wt = _pushed_twice(tmp_path)
    with pytest.raises(GitError) as caught:
        remotes.push_branch(wt, (tmp_path / "nowhere.git").as_uri(), "cra/issue-7")
    assert remotes.push_rejection(caught.value) is None
    with pytest.raises(GitError) as caught:
        git.resolve_commit(wt, "no-such-branch")
    assert remotes.push_rejection(caught.value) is None


def test_mirror_sync_rejects_a_url_with_credentials_without_echoing_them(
    tmp_path: Path,
) -> None:
    with pytest.raises(CredentialsInUrl) as caught:
        remotes.mirror_sync("https://x-access-token:ghs_s3cret@github.com/o/r.git", tmp_path / "m")
    assert "ghs_s3cret" not in str(caught.value)
    assert "github.com" in caught.value.url
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(
    "url",
    [
        "https://ghp_token@github.com/o/r.git",
        "ssh://git:hunter2@example.com/r.git",
    ],
)
def test_reject_credentials_refuses_userinfo_secrets(url: str) -> None:
    with pytest.raises(CredentialsInUrl):
        remotes.reject_credentials(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/o/r.git",
        "ssh://git@github.com/o/r.git",
        "git@github.com:o/r.git",
        "file:///srv/git/r.git",
    ],
)
def test_reject_credentials_accepts_plain_urls(url: str) -> None:
    assert remotes.reject_credentials(url) == url


def test_reset_clean_removes_untracked_files_but_keeps_ignored_ones(worktree: Path) -> None:
    base = git.head_commit(worktree)
    replace_in(worktree / "calc" / "ops.py", MUL_BUG, MUL_FIX)
    (worktree / "scratch.py").write_text("x = 1\n")
    (worktree / "calc" / "extra").mkdir()
    (worktree / "calc" / "extra" / "mod.py").write_text("y = 2\n")
    (worktree / ".venv").mkdir()
    (worktree / ".venv" / "marker").write_text("keep me\n")

    worktrees.reset_clean(worktree, base)

    assert MUL_BUG in (worktree / "calc" / "ops.py").read_text()
    assert not (worktree / "scratch.py").exists()
    assert not (worktree / "calc" / "extra").exists()
    assert (worktree / ".venv" / "marker").read_text() == "keep me\n"


def test_remove_worktree_deletes_the_dir_and_only_a_named_branch(
    project: Path, tmp_path: Path
) -> None:
    base = git.head_commit(project)
    kept = worktrees.add_worktree(project, tmp_path / "kept", commit=base, branch="cra/kept")
    gone = worktrees.add_worktree(project, tmp_path / "gone", commit=base, branch="cra/gone")
    (kept / "dirty.txt").write_text("uncommitted\n")

    worktrees.remove_worktree(project, kept)
    worktrees.remove_worktree(project, gone, branch="cra/gone")

    assert not kept.exists() and not gone.exists()
    assert git.branch_exists(project, "cra/kept")
    assert not git.branch_exists(project, "cra/gone")


def test_prune_worktrees_forgets_vanished_ones_and_deletes_stale_dirs(tmp_path: Path) -> None:
    remote = make_bare_remote(tmp_path)
    mirror = remotes.mirror_sync(remote.as_uri(), tmp_path / "old.git")
    parent = tmp_path / "worktrees"
    base = git.resolve_commit(mirror, "main")
    live = worktrees.add_worktree(mirror, parent / "live", commit=base, branch="live")
    vanished = worktrees.add_worktree(mirror, parent / "vanished", commit=base, branch="vanished")
    orphan = worktrees.add_worktree(mirror, parent / "orphan", commit=base, branch="orphan")
    (parent / "unrelated").mkdir()
    shutil.rmtree(vanished)
    (mirror / "worktrees" / "orphan").rename(tmp_path / "admin-moved-away")

    removed = worktrees.prune_worktrees(mirror, parent)

    assert removed == [orphan]
    assert live.is_dir() and (parent / "unrelated").is_dir() and not orphan.exists()
    listed = git_in(mirror, "worktree", "list", "--porcelain")
    assert str(live) in listed and str(vanished) not in listed


def test_unique_branch_appends_a_counter_when_taken(project: Path) -> None:
    assert unique_branch(project, "cra/fix") == "cra/fix"
    git_in(project, "branch", "cra/fix")
    git_in(project, "branch", "cra/fix-2")
    assert unique_branch(project, "cra/fix") == "cra/fix-3"


def test_unique_branch_steps_around_branches_that_share_its_namespace(project: Path) -> None:
    git_in(project, "branch", "cra/fix/old")  # then no branch cra/fix can exist
    assert unique_branch(project, "cra/fix") == "cra/fix-2"
    git_in(project, "branch", "-D", "cra/fix/old")
    git_in(project, "branch", "cra")  # then no branch cra/… can exist at all
    with pytest.raises(
        GitError,
        match="a branch named 'cra' exists, so no branch 'cra/fix' "
        "can be made: rename or delete 'cra'",
    ):
        unique_branch(project, "cra/fix")


def test_refs_resolve_to_full_shas_and_the_current_branch(project: Path) -> None:
    sha = git_in(project, "rev-parse", "HEAD").strip()
    assert git.resolve_commit(project, "main") == sha == git.head_commit(project)
    assert len(sha) == 40
    assert git.current_branch(project) == "main"
    git_in(project, "checkout", "--quiet", "--detach")
    assert git.current_branch(project) is None


def test_is_work_tree_tells_a_checkout_from_a_plain_dir(project: Path, tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    assert git.is_work_tree(project)
    assert not git.is_work_tree(tmp_path / "plain")


# --- commits and diffs -----------------------------------------------------------------------


def test_commit_all_sets_author_committer_and_trailers(worktree: Path) -> None:
    replace_in(worktree / "calc" / "ops.py", MUL_BUG, MUL_FIX)
    (worktree / "tests" / "__init__.py").unlink()
    (worktree / "CHANGES.md").write_text("# fixed mul\n")

    sha = git.commit_all(
        worktree,
        "Fix mul (#12)\n\n#12 was an off-by-one.",
        author_name="cra bot",
        author_email="cra@example.com",
        co_authors=["Ada <ada@example.com>"],
        trailers={"Cra-Run": "run-1"},
    )

    assert sha == git.head_commit(worktree)
    assert git_in(worktree, "log", "-1", "--format=%an <%ae>|%cn <%ce>").strip() == (
        "cra bot <cra@example.com>|cra bot <cra@example.com>"
    )
    assert git_in(worktree, "log", "-1", "--format=%B") == (
        "Fix mul (#12)\n\n#12 was an off-by-one.\n\n"
        "Co-authored-by: Ada <ada@example.com>\nCra-Run: run-1\n\n"
    )
    assert git_in(worktree, "show", "--name-status", "--format=", "HEAD").split("\n")[:3] == [
        "A\tCHANGES.md",
        "M\tcalc/ops.py",
        "D\ttests/__init__.py",
    ]


def test_commit_all_returns_none_when_nothing_changed(worktree: Path) -> None:
    head = git.head_commit(worktree)
    assert git.commit_all(worktree, "nothing", author_name="a", author_email="a@x") is None
    assert git.head_commit(worktree) == head


def test_commit_all_never_runs_the_repositorys_hooks(worktree: Path, project: Path) -> None:
    hooks = project / ".git" / "hooks"
    for name in ("pre-commit", "commit-msg", "post-commit"):
        (hooks / name).write_text(f"#!/bin/sh\ntouch {worktree}/hook-{name}-ran\nexit 1\n")
        (hooks / name).chmod(0o755)
    replace_in(worktree / "calc" / "ops.py", MUL_BUG, MUL_FIX)

    assert git.commit_all(worktree, "Fix", author_name="a", author_email="a@x") is not None
    assert not list(worktree.glob("hook-*"))


def test_diff_of_the_working_tree_includes_new_untracked_files(worktree: Path) -> None:
    base = git.head_commit(worktree)
    replace_in(worktree / "calc" / "ops.py", MUL_BUG, MUL_FIX)
    (worktree / "calc" / "div.py").write_text("def div(a, b):\n    return a // b\n")

    text = git.diff(worktree, base)
    stats = git.diff_stats(worktree, base)
    assert git.diff_with_stats(worktree, base) == (text, stats)  # one process, the same answer

    assert "diff --git a/calc/ops.py b/calc/ops.py" in text
    assert "-    return a * b + 1\n+    return a * b\n" in text
    assert "new file mode 100644" in text and "+++ b/calc/div.py" in text
    assert (stats.files_changed, stats.insertions, stats.deletions) == (2, 3, 1)
    assert stats.files == ["calc/div.py", "calc/ops.py"]
    assert git_in(worktree, "status", "--porcelain") == " M calc/ops.py\n?? calc/div.py\n"


def test_diffs_name_files_as_they_are_not_in_gits_octal_escapes(worktree: Path) -> None:
    base = git.head_commit(worktree)
    (worktree / "calc" / "öps ü.py").write_text("x = 1\n")

    patch, stats = git.diff_with_stats(worktree, base)

    assert stats.files == ["calc/öps ü.py"]
    assert "+++ b/calc/öps ü.py" in patch


def test_diff_between_commits(worktree: Path) -> None:
    base = git.head_commit(worktree)
    replace_in(worktree / "calc" / "ops.py", MUL_BUG, MUL_FIX)
    head = git.commit_all(worktree, "Fix", author_name="a", author_email="a@x")
    assert head is not None
    (worktree / "later.txt").write_text("not committed\n")

    text = git.diff(worktree, base, head)

    assert "calc/ops.py" in text and "later.txt" not in text
    assert git.diff_stats(worktree, base, head).files == ["calc/ops.py"]
    assert git.diff_with_stats(worktree, base, head) == (text, git.diff_stats(worktree, base, head))


def test_diff_with_stats_of_binary_mode_and_empty_changes(worktree: Path) -> None:
    base = git.head_commit(worktree)
    (worktree / "blob.bin").write_bytes(b"\x00\x01\x02")
    (worktree / "calc" / "ops.py").chmod(0o755)
    (worktree / "a\tb.txt").write_text("tab in the name\n")
    head = git.commit_all(worktree, "Odd changes", author_name="cra", author_email="c@e.x")
    assert head is not None
    text, stats = git.diff_with_stats(worktree, base, head)
    assert text == git.diff(worktree, base, head) and "Binary files" in text
    assert stats == git.diff_stats(worktree, base, head) and stats.files_changed == 3
    assert git.diff_with_stats(worktree, head, head) == ("", git.diff_stats(worktree, head, head))


def test_apply_diff_applies_a_worktree_diff_to_the_users_tree(
    project: Path, worktree: Path
) -> None:
    base = git.head_commit(worktree)
    replace_in(worktree / "calc" / "ops.py", MUL_BUG, MUL_FIX)
    (worktree / "calc" / "div.py").write_text("def div(a, b):\n    return a // b\n")

    git.apply_diff(project, git.diff(worktree, base))

    assert MUL_FIX in (project / "calc" / "ops.py").read_text()
    assert (project / "calc" / "div.py").is_file()
    assert git_in(project, "diff", "--cached", "--name-only") == ""


def test_apply_diff_that_does_not_apply_changes_nothing(project: Path, worktree: Path) -> None:
    base = git.head_commit(worktree)
    replace_in(worktree / "calc" / "ops.py", MUL_BUG, MUL_FIX)
    (worktree / "calc" / "div.py").write_text("def div(a, b):\n    return a // b\n")
    (worktree / "tests" / "test_ops.py").write_text("# rewritten\n")
    patch = git.diff(worktree, base)
    (project / "tests" / "test_ops.py").write_text("# the user's own rewrite\n")
    before = snapshot(project)

    with pytest.raises(GitError) as caught:
        git.apply_diff(project, patch)

    assert "tests/test_ops.py" in caught.value.stderr
    assert snapshot(project) == before
    assert not (project / "calc" / "div.py").exists()


# --- errors ----------------------------------------------------------------------------------


def test_git_error_carries_argv_exit_code_and_stderr(project: Path) -> None:
    with pytest.raises(GitError) as caught:
        git.resolve_commit(project, "no-such-branch")
    assert caught.value.argv[:2] == ["rev-parse", "--verify"]
    assert caught.value.returncode != 0

    with pytest.raises(GitError) as caught:
        git.run_git(["checkout", "no-such-branch"], project)
    assert "no-such-branch" in caught.value.stderr
    assert "no-such-branch" in str(caught.value)


def test_a_ref_that_looks_like_an_option_is_refused(project: Path, tmp_path: Path) -> None:
    with pytest.raises(GitError, match="invalid"):
        worktrees.add_worktree(project, tmp_path / "wt", commit="--orphan", branch="x")
    with pytest.raises(GitError, match="invalid"):
        git.resolve_commit(project, "--all")


def test_run_git_env_extras_reach_git_but_no_config_file(project: Path) -> None:
    out = git.run_git(
        ["var", "GIT_AUTHOR_IDENT"],
        project,
        env={"GIT_AUTHOR_NAME": "Env Only", "GIT_AUTHOR_EMAIL": "env@x"},
    )
    assert out.startswith("Env Only <env@x>")
    assert "Env Only" not in (project / ".git" / "config").read_text()


def test_run_git_ignores_an_inherited_git_dir(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = make_python_project(tmp_path / "other")
    commit_file(other, "x.txt", "x\n", "Another commit")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    assert git.head_commit(project) == git_in(project, "rev-parse", "HEAD").strip()


def test_a_token_passed_through_askpass_never_reaches_a_credential_helper(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "git-credentials"
    config = tmp_path / "gitconfig"
    config.write_text(f"[credential]\n\thelper = store --file {store}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    approve = "protocol=https\nhost=example.com\nusername=x-access-token\npassword=ghs_s3cret\n\n"

    git.run_git(
        ["credential", "approve"],
        project,
        input=approve,
        env={"GIT_ASKPASS": str(tmp_path / "askpass.sh")},
    )
    assert not store.exists()

    git.run_git(["credential", "approve"], project, input=approve)  # the control: no askpass
    assert "ghs_s3cret" in store.read_text()


def test_a_git_errors_summary_is_the_command_and_gits_reason_without_the_argv(
    tmp_path: Path,
) -> None:
    with pytest.raises(GitError) as caught:
        remotes.mirror_sync((tmp_path / "gone.git").as_uri(), tmp_path / "mirror.git")
    summary = caught.value.summary
    assert summary.startswith("git clone failed: fatal: ")  # git names the remote, and
    assert "mirror.git" not in summary and "--mirror" not in summary  # nothing of this machine
    hinted = GitError(
        ["-c", "core.hooksPath=/dev/null", "push", "--", "u"],
        1,
        " ! [rejected] a -> a (fetch first)\nerror: failed to push some refs to "
        "'u'\nhint: Updates were rejected\n",
    )
    assert hinted.summary == "git push failed: error: failed to push some refs to 'u'"
    assert GitError(["status"], 3, "").summary == "git status failed: exit status 3"


def test_crlf_and_lone_cr_survive_a_diff_and_its_apply(project: Path, tmp_path: Path) -> None:
    """A file's CRLF endings and lone CRs are content: git's output is not newline-translated."""
    base = git.head_commit(project)
    (project / "data.toml").write_bytes(b'a = 1\r\nb = "x\rin"\r\n')
    git_in(project, "add", "data.toml")
    git_in(project, "commit", "-q", "-m", "CRLF data")
    head = git.head_commit(project)
    assert git.read_file(project, head, "data.toml") == 'a = 1\r\nb = "x\rin"\r\n'
    diff = git.diff(project, base, head)
    tree = worktrees.add_worktree(project, tmp_path / "wt", commit=base, branch="cra/crlf")
    git.apply_diff(tree, diff)
    assert (tree / "data.toml").read_bytes() == b'a = 1\r\nb = "x\rin"\r\n'


def commit(wt: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (wt / name).write_text(text)
    found = git.commit_all(wt, message, author_name="cra", author_email="cra@example.com")
    assert found is not None
    return found


def test_commits_are_carried_onto_another_base_in_order(worktree: Path) -> None:
    base = git.head_commit(worktree)
    old = commit(worktree, {"test_a.py": "old test\n"}, "Old test")
    commit(worktree, {"NOTES.md": "one\n"}, "Step one")
    head = commit(worktree, {"NOTES.md": "one\ntwo\n"}, "Step two")
    worktrees.reset_clean(worktree, base)
    commit(worktree, {"test_b.py": "new test\n"}, "New test")

    assert git.carry_commits(worktree, old, head, name="cra", email="cra@example.com")

    log = git_in(worktree, "log", "--format=%s", f"{base}..HEAD").splitlines()
    assert log == ["Step two", "Step one", "New test"]
    assert (worktree / "NOTES.md").read_text() == "one\ntwo\n"
    assert not (worktree / "test_a.py").exists()
    assert git.carry_commits(worktree, head, head, name="cra", email="cra@example.com")


def test_a_commit_that_does_not_carry_leaves_the_worktree_as_it_was(worktree: Path) -> None:
    base = git.head_commit(worktree)
    old = commit(worktree, {"test_a.py": "old test\n"}, "Old test")
    head = commit(worktree, {"test_a.py": "old test, changed\n"}, "Step")
    worktrees.reset_clean(worktree, base)
    new = commit(worktree, {"test_a.py": "another test\n"}, "New test")

    assert not git.carry_commits(worktree, old, head, name="cra", email="cra@example.com")

    assert git.head_commit(worktree) == new
    assert (worktree / "test_a.py").read_text() == "another test\n"
    assert git_in(worktree, "status", "--porcelain") == ""
