"""Git as a subprocess: refs, commits and diffs (argv lists, never shell strings); worktrees
are agent.git.worktrees, branch names agent.git.branches, mirrors and pushes agent.git.remotes,
git's files read without a process agent.git.files.

Every call goes through `run_git`, which controls the environment: no terminal prompts, the C
locale, and no inherited variable that would redirect git to another repository. Secrets (a
GIT_ASKPASS token for a push, say) travel only in a call's `env` extras and are never written
into any config file. Every call runs with `core.hooksPath=/dev/null`: a repository's hooks
(on commits, checkouts, index and ref updates) are its code, not ours to execute.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from agent.errors import GitError
from agent.git.files import head_in_tree, ref_exists_in_tree
from agent.models import DiffStats

# A commit ends by running `git maintenance run --auto` (`gc --auto` before git 2.29), one more
# process per step, which may repack the repository while the run's tests use the machine: the
# repository's own git commands keep that job.
NO_MAINTENANCE = ("-c", "maintenance.auto=false", "-c", "gc.auto=0")
# Every git call: no hook and no file-system monitor command of the repository's, and never a
# git process inside a submodule's checkout (whose `.git` file the repository's commands can
# rewrite to a git dir of their own, with a config that runs what it likes); settings on the
# command line outrank any config file.
INERT = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "diff.ignoreSubmodules=all",
    "-c",
    "submodule.recurse=false",
    "-c",
    "core.quotePath=false",
)  # and paths as they are: calc/öps.py, not "calc/\303…"
DIFF_FLAGS = (
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--no-renames",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)
# Variables that would point git at another repository, index or config injection.
_REDIRECTS = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_COMMON_DIR",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
    }
)
_CONTROLLED = {"GIT_TERMINAL_PROMPT": "0", "GCM_INTERACTIVE": "never", "LC_ALL": "C"}


# --- running git -----------------------------------------------------------------------------


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a git call: ours minus repository redirects, plus controls and extras."""
    # The process environment is inherited on purpose (PATH, HOME, SSH agent); only git's
    # redirecting variables are removed, so a caller inside a git hook cannot aim us elsewhere.
    env = {k: v for k, v in os.environ.items() if k not in _REDIRECTS}
    env.update(_CONTROLLED)
    env.update(extra or {})
    return env


def _git(
    args: Sequence[str],
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run git without judging the exit code; a missing git or a timeout is a GitError."""
    argv = list(args)
    # A token handed over through GIT_ASKPASS must not reach a configured credential helper,
    # which could store it (`credential.helper=store` writes ~/.git-credentials).
    guard = ["-c", "credential.helper="] if env and "GIT_ASKPASS" in env else []
    try:
        # Bytes in and out, decoded here without newline translation: a file's CRLF endings
        # and lone CRs are content (in a diff, in `git show`), and must survive a round trip.
        proc = subprocess.run(
            ["git", *guard, *INERT, *argv],
            cwd=cwd,
            env=git_env(env),
            input=None if input is None else input.encode("utf-8", "surrogateescape"),
            capture_output=True,
            stdin=None if input is not None else subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise GitError(argv, -1, f"timed out after {timeout:g} s") from exc
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise GitError(argv, 127, str(exc)) from exc
    return subprocess.CompletedProcess(
        proc.args,
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
    )


def run_git(
    args: Sequence[str],
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
    input: str | None = None,
) -> str:
    """Run git in `cwd` and return its stdout; a non-zero exit raises GitError with stderr."""
    proc = _git(args, cwd, env=env, timeout=timeout, input=input)
    if proc.returncode != 0:
        raise GitError(list(args), proc.returncode, proc.stderr)
    return proc.stdout


def not_an_option(value: str, what: str) -> str:
    """`value` unchanged, or a GitError when it would be read as a command-line option."""
    if not value or value.startswith("-"):
        raise GitError([what, value], 2, f"invalid {what}: {value!r}")
    return value


# --- refs ------------------------------------------------------------------------------------


def is_work_tree(path: Path) -> bool:
    """True when `path` is inside a git working tree."""
    try:
        proc = _git(["rev-parse", "--is-inside-work-tree"], path)
    except GitError:
        return False
    return proc.returncode == 0 and proc.stdout.strip() == "true"


def resolve_commit(repo: Path, ref: str) -> str:
    """The full SHA of the commit `ref` names in `repo`."""
    not_an_option(ref, "ref")
    return run_git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], repo).strip()


def read_file(repo: Path, commit: str, rel: str) -> str | None:
    """The text of `rel` at `commit` (a bare mirror works), or None when it does not exist."""
    not_an_option(commit, "commit")
    proc = _git(["show", f"{commit}:{rel}"], repo)
    return proc.stdout if proc.returncode == 0 else None


def ignored_paths(worktree: Path) -> list[str]:
    """Untracked paths .gitignore hides (a folder once, with a trailing slash)."""
    out = run_git(
        ["ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z"], worktree
    )
    return [p for p in out.split("\0") if p]


def head_commit(path: Path) -> str:
    """The full SHA of HEAD in `path` (read from git's files when they say it plainly)."""
    return head_in_tree(path) or resolve_commit(path, "HEAD")


def current_branch(path: Path) -> str | None:
    """The short name of the checked-out branch, or None on a detached HEAD."""
    proc = _git(["symbolic-ref", "--quiet", "--short", "HEAD"], path)
    return proc.stdout.strip() if proc.returncode == 0 else None


def branch_exists(repo: Path, name: str) -> bool:
    """True when `refs/heads/<name>` exists in `repo` (read from git's files when they say it
    plainly, else asked of git)."""
    not_an_option(name, "branch")
    known = ref_exists_in_tree(repo, f"refs/heads/{name}")
    if known is not None:
        return known
    return _git(["show-ref", "--verify", "--quiet", f"refs/heads/{name}"], repo).returncode == 0


# --- repository config -----------------------------------------------------------------------


_FORMAT_KEYS = (
    r"^(core\.(repositoryformatversion|bare|ignorecase|precomposeunicode)"
    r"|extensions\..*)$"
)


_FORMAT_CONFIGS: dict[tuple[str, int, int], str] = {}  # (path, mtime, size) → its format keys


def format_only_config(common: Path) -> str:
    """A config holding only the repository-format keys of `common`'s: no remotes, no secrets.

    Every sandboxed command asks for it; the answer is kept while the file is unchanged.
    """
    path = common / "config"
    try:
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
    except OSError:
        return _format_only_config(common)
    if key not in _FORMAT_CONFIGS:
        _FORMAT_CONFIGS[key] = _format_only_config(common)
    return _FORMAT_CONFIGS[key]


def _format_only_config(common: Path) -> str:
    """format_only_config, read by git."""
    proc = _git(["config", "--file", str(common / "config"), "--get-regexp", _FORMAT_KEYS], common)
    sections: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():
        key, _, value = line.partition(" ")
        section, _, name = key.partition(".")
        sections.setdefault(section, []).append(f"\t{name} = {value}")
    return "".join(
        f"[{section}]\n" + "\n".join(lines) + "\n" for section, lines in sections.items()
    )


# --- commits ---------------------------------------------------------------------------------


def commit_all(
    worktree: Path,
    message: str,
    *,
    author_name: str,
    author_email: str,
    co_authors: Sequence[str] = (),
    trailers: Mapping[str, str] | None = None,
    paths: Sequence[str] | None = None,
    new_paths: Sequence[str] = (),
) -> str | None:
    """Stage everything (deletions too) — or only `paths`, of which `new_paths` are untracked —
    and commit without hooks; the new SHA, or None if nothing was staged.

    Author and committer are both `author_name <author_email>`; `Co-authored-by:` and the other
    trailers follow the message after a blank line.
    """
    if paths is None:
        run_git(["add", "--all", "--", ".", *_skip_submodules(worktree)], worktree)
    elif new_paths:
        run_git(["add", "--", *new_paths], worktree)
    identity = {
        "GIT_AUTHOR_NAME": author_name,
        "GIT_AUTHOR_EMAIL": author_email,
        "GIT_COMMITTER_NAME": author_name,
        "GIT_COMMITTER_EMAIL": author_email,
    }
    argv = [
        *NO_MAINTENANCE,
        "-c",
        "commit.gpgsign=false",
        "commit",
        "--no-verify",
        "--quiet",
        "--cleanup=whitespace",
        "--file=-",
    ]
    if paths is not None:  # `--include`: stage these paths as they are, then commit
        argv += ["--include", "--", *paths]
    proc = _git(
        argv, worktree, env=identity, input=commit_message(message, co_authors, trailers or {})
    )
    if proc.returncode != 0:
        if _NOTHING_TO_COMMIT.search(proc.stdout):
            return None
        raise GitError(argv, proc.returncode, proc.stderr or proc.stdout)
    return head_commit(worktree)


def carry_commits(worktree: Path, start: str, end: str, *, name: str, email: str) -> bool:
    """The commits after `start` up to `end` copied onto the worktree's HEAD, in order, their
    authors and messages kept (`name <email>` commits them); False, with the worktree as it was,
    when one does not apply cleanly."""
    span = f"{not_an_option(start, 'commit')}..{not_an_option(end, 'commit')}"
    if not run_git(["rev-list", span], worktree).strip():
        return True  # nothing to carry
    identity = {"GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email}
    head = head_commit(worktree)
    argv = [*NO_MAINTENANCE, "-c", "commit.gpgsign=false", "cherry-pick", "--allow-empty", span]
    if _git(argv, worktree, env=identity).returncode == 0:
        return True
    _git(["cherry-pick", "--abort"], worktree)
    run_git(["reset", "--hard", "--quiet", head], worktree)
    return False


_NOTHING_TO_COMMIT = re.compile(
    r"^(nothing to commit|nothing added to commit|no changes added)", re.M
)


def commit_message(message: str, co_authors: Sequence[str], trailers: Mapping[str, str]) -> str:
    """`message` with `Co-authored-by:` and other trailers appended after a blank line."""
    lines = [f"Co-authored-by: {who}" for who in co_authors]
    lines += [f"{key}: {value}" for key, value in trailers.items()]
    body = message.strip()
    return f"{body}\n\n" + "\n".join(lines) + "\n" if lines else f"{body}\n"


# --- diffs -----------------------------------------------------------------------------------


def diff(worktree: Path, base: str, head: str | None = None) -> str:
    """The unified diff from `base` to `head`, or to the working tree (untracked files too)."""
    return _diff(worktree, base, head, [])


def diff_stats(worktree: Path, base: str, head: str | None = None) -> DiffStats:
    """Files changed, insertions and deletions from `base` to `head` or the working tree."""
    return _numstat(_diff(worktree, base, head, ["--numstat"]))


def diff_with_stats(worktree: Path, base: str, head: str | None = None) -> tuple[str, DiffStats]:
    """diff() and diff_stats() from one git process: its numstat lines, a blank line, the
    patch."""
    out = _diff(worktree, base, head, ["--numstat", "--patch"])
    numstat, _, patch = out.partition("\n\n")
    return patch, _numstat(numstat)


def _numstat(out: str) -> DiffStats:
    """The DiffStats of `git diff --numstat` lines."""
    files: list[str] = []
    insertions = deletions = 0
    for line in out.splitlines():
        added, removed, name = line.split("\t", 2)
        files.append(name)
        insertions += int(added) if added.isdigit() else 0  # "-" marks a binary file
        deletions += int(removed) if removed.isdigit() else 0
    return DiffStats(
        files_changed=len(files), insertions=insertions, deletions=deletions, files=files
    )


def _diff(worktree: Path, base: str, head: str | None, extra: list[str]) -> str:
    """Run `git diff` between commits, or against a throwaway index holding the whole tree."""
    not_an_option(base, "commit")
    if head is not None:
        return run_git(
            ["diff", *DIFF_FLAGS, *extra, base, not_an_option(head, "commit"), "--"], worktree
        )
    # A temporary copy of the index takes `add --all`, so untracked files show up as new
    # without leaving intent-to-add entries (or anything else) in the real index.
    with tempfile.TemporaryDirectory(prefix="cra-index-") as scratch:
        index = Path(scratch) / "index"
        real = worktree / run_git(["rev-parse", "--git-path", "index"], worktree).strip()
        if real.is_file():
            shutil.copyfile(real, index)
        env = {"GIT_INDEX_FILE": str(index)}
        run_git(["add", "--all", "--", ".", *_skip_submodules(worktree)], worktree, env=env)
        return run_git(["diff", "--cached", *DIFF_FLAGS, *extra, base, "--"], worktree, env=env)


def _skip_submodules(worktree: Path) -> list[str]:
    """Pathspecs leaving out every submodule (gitlink) of the index: `git add` runs a git
    process inside each one that holds a `.git` (whatever diff.ignoreSubmodules says), with
    that folder's config — its filters, its fsmonitor. A repository command can put a `.git`
    there whether or not cra ever checked the submodule out (a file `gitdir: ../x` pointing at
    a git dir the repository commits), and cra's git runs outside the sandbox."""
    out = run_git(["ls-files", "--stage", "-z"], worktree)
    return [
        f":(exclude,literal){path}"
        for info, _, path in (entry.partition("\t") for entry in out.split("\0"))
        if info.startswith("160000 ")
    ]


def check_diff(path: Path, diff_text: str) -> None:
    """GitError when the unified diff would not apply cleanly to the working tree at `path`;
    nothing is touched either way."""
    if diff_text.strip():
        run_git(["apply", "--check", "--whitespace=nowarn", "-"], path, input=diff_text)


def apply_diff(path: Path, diff_text: str) -> None:
    """Apply a unified diff to the working tree at `path` (the repository root), or change
    nothing: a diff that does not apply cleanly raises GitError before any file is touched."""
    if not diff_text.strip():
        return
    check_diff(path, diff_text)
    run_git(["apply", "--whitespace=nowarn", "-"], path, input=diff_text)
