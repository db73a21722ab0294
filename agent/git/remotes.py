"""Git's network side: a repository's bare mirror, kept fetched, and a branch pushed to a URL.

A URL never carries credentials (CredentialsInUrl): a token travels only in a call's `env`
(GIT_ASKPASS), so it is never written into a mirror's config or echoed in an error.
"""

from __future__ import annotations

import re
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from agent.errors import CredentialsInUrl, GitError
from agent.git.repo import not_an_option, resolve_commit, run_git


def reject_credentials(url: str) -> str:
    """`url` unchanged, or CredentialsInUrl when it carries a password or an http(s) user."""
    parts = urlsplit(url)
    has_user = "@" in parts.netloc
    if parts.password is not None or (has_user and parts.scheme in ("http", "https")):
        host = parts.netloc.rsplit("@", 1)[1]
        raise CredentialsInUrl(parts._replace(netloc=f"***@{host}").geturl())
    return url


def mirror_sync(
    url: str, mirror: Path, *, env: Mapping[str, str] | None = None, timeout: float = 1800
) -> Path:
    """Clone `url` as a bare mirror at `mirror`, or fetch it (pruning) when it exists.

    Branches checked out in the mirror's worktrees are excluded from the fetch: git would
    refuse to update them, and pruning would delete a running worktree's branch.
    """
    reject_credentials(url)
    if (mirror / "HEAD").is_file():
        run_git(["config", "remote.origin.url", url], mirror)
        keep = [f"^{ref}" for ref in _checked_out_refs(mirror)]
        run_git(
            ["fetch", "--prune", "--quiet", "origin", "+refs/*:refs/*", *keep],
            mirror,
            env=env,
            timeout=timeout,
        )
        return mirror
    mirror.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=mirror.parent, prefix=f".{mirror.name}.") as scratch:
        partial = Path(scratch) / "mirror.git"
        run_git(
            ["clone", "--mirror", "--quiet", "--", url, str(partial)],
            mirror.parent,
            env=env,
            timeout=timeout,
        )
        partial.rename(mirror)  # atomic: an interrupted clone never looks like a mirror
    return mirror


def _checked_out_refs(repo: Path) -> list[str]:
    """The branch refs checked out by the worktrees of `repo`."""
    return [
        line.removeprefix("branch ")
        for line in run_git(["worktree", "list", "--porcelain"], repo).splitlines()
        if line.startswith("branch ")
    ]


def push_branch(
    repo: Path,
    url: str,
    branch: str,
    *,
    env: Mapping[str, str] | None = None,
    replacing: str | None = None,
    timeout: float = 600,
) -> None:
    """Push local `branch` to the same branch at `url` (a URL, never a remote name): a
    fast-forward, or with `replacing` over exactly that commit of the remote branch ("": the
    branch must not exist there), whatever the histories (`--force-with-lease`).

    Pushing to the URL sidesteps a mirror's `remote.origin.mirror`, which would turn a push to
    `origin` into a push of every ref. Credentials come only through `env` (GIT_ASKPASS).
    """
    reject_credentials(url)
    ref = f"refs/heads/{not_an_option(branch, 'branch')}"
    if replacing:
        not_an_option(replacing, "commit")
    flags = [] if replacing is None else [f"--force-with-lease={ref}:{replacing}"]
    run_git(
        ["push", "--no-verify", "--quiet", *flags, "--", url, f"{ref}:{ref}"],
        repo,
        env=env,
        timeout=timeout,
    )


def fetch_branch(
    repo: Path,
    url: str,
    branch: str,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 600,
) -> str | None:
    """The commit `branch` is at on `url` (a URL, never a remote name), its objects fetched
    into `repo` — no ref of `repo` changes —; None when `url` has no such branch."""
    reject_credentials(url)
    ref = f"refs/heads/{not_an_option(branch, 'branch')}"
    if not run_git(["ls-remote", "--", url, ref], repo, env=env, timeout=timeout).strip():
        return None
    scratch = f"refs/cra-fetched/{uuid.uuid4().hex}"  # its own: runs share a mirror
    run_git(
        ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", url, f"+{ref}:{scratch}"],
        repo,
        env=env,
        timeout=timeout,
    )
    try:
        return resolve_commit(repo, scratch)
    finally:
        run_git(["update-ref", "-d", scratch], repo)


# git push's report of a ref it did not update: " ! [rejected]        b -> b (fetch first)", or
# " ! [remote rejected] b -> b (protected branch hook declined)".
_PUSH_REJECTED = re.compile(
    r"^\s*! \[(?P<who>remote )?rejected\]\s+\S+ -> \S+ \((?P<why>[^)]*)\)", re.MULTILINE
)


def push_stale(error: GitError) -> bool:
    """Whether git itself refused a failed push_branch: the remote branch moved on from the
    commit the push was to replace (or a fast-forward from)."""
    found = _PUSH_REJECTED.search(error.stderr) if "push" in error.argv else None
    return found is not None and found["who"] is None


def push_busy(error: GitError) -> bool:
    """Whether a failed push_branch was refused only because the remote's ref was locked: a
    concurrent update there, or a receive of its own that crashed (worth trying again)."""
    return "push" in error.argv and "cannot lock ref" in error.stderr


def push_rejection(error: GitError) -> str | None:
    """Why a failed push_branch was refused, in words for the person who asked: the branch
    moved on (someone pushed to it meanwhile) or the remote refused it (its reason quoted);
    None when the push failed otherwise (network, credentials)."""
    if "push" not in error.argv:
        return None
    found = _PUSH_REJECTED.search(error.stderr)
    if found is None:
        return None
    if found["who"] is None:  # git refused before sending: the remote moved on from what
        #                         the run started from (fetch first, stale info)
        return "the branch changed on GitHub while cra worked (someone pushed to it)"
    why = " ".join(found["why"].split())[:200] or "no reason given"
    return f"GitHub refused it ({why})"
