"""Publishing a run's branch: its push tried again after a passing failure, a few times.

A push fails for passing reasons — the network, GitHub answering 5xx, its ref locked by an
update in progress there (or by a receive that crashed) — and those are tried again after a
growing wait. A push GitHub refused (a protected branch) is final, and so is one the branch
moved on from — unless what moved it holds only cra's commits (`ours`): the push of an earlier
run whose worker was killed mid-push, landing late because its git outlived it. That one is
replaced, as cra's attempts are (bot.run.branches), instead of being blamed on someone.

A try that landed though its answer was lost (the connection broke between GitHub's update and
its report) needs nothing more: the next try finds the branch at the run's commit, and git
reports it up to date — its lease is not even consulted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from agent.errors import GitError
from agent.git import remotes

log = logging.getLogger(__name__)
PUSH_ATTEMPTS = 3
PUSH_BACKOFF = 5.0  # seconds before the second try; doubled before each next one
Ours = Callable[[str], bool]  # whether the commit a branch moved to brought only cra's commits


@dataclass(frozen=True)
class BranchPush:
    """One branch pushed from a mirror to GitHub: `env` carries git's credentials; `replacing`
    is the commit the push replaces ("": no branch yet; None: a fast-forward push) and `ours`,
    when given, says whether a commit the branch moved to brought only cra's commits."""

    mirror: Path
    url: str
    branch: str
    env: Mapping[str, str]
    replacing: str | None
    ours: Ours | None = None


@dataclass(frozen=True)
class Retries:
    """How often a push is tried and how long it waits between tries (an injected sleep)."""

    sleep: Callable[[float], None]
    attempts: int = PUSH_ATTEMPTS
    backoff: float = PUSH_BACKOFF


def push(branch_push: BranchPush, retries: Retries) -> None:
    """Push the branch as remotes.push_branch does, up to `retries.attempts` times; the last
    failure (GitError) when none got through, at once when GitHub refused it. With `ours`, a
    push replacing `replacing` replaces what the branch moved to instead, when that brought
    only cra's commits."""
    attempts, branch = retries.attempts, branch_push.branch
    for attempt in range(1, attempts + 1):
        try:
            remotes.push_branch(
                branch_push.mirror,
                branch_push.url,
                branch,
                env=branch_push.env,
                replacing=branch_push.replacing,
            )
            return
        except GitError as exc:
            if attempt < attempts and (late := _late_push(exc, branch_push)):
                log.warning(
                    "%s moved to %s, an earlier run's push landing late: replaced", branch, late
                )
                branch_push = replace(branch_push, replacing=late)
                continue
            if not _passing(exc) or attempt == attempts:
                raise
            wait = retries.backoff * 2 ** (attempt - 1)
            log.warning(
                "the push of %s failed (%s); try %d of %d in %g s",
                branch,
                exc.summary,
                attempt + 1,
                attempts,
                wait,
            )
            retries.sleep(wait)


def _late_push(error: GitError, branch_push: BranchPush) -> str | None:
    """The commit the branch moved to while the run worked, when it brought only cra's
    commits; None otherwise (a person's push, a fast-forward push, no `ours`)."""
    replacing, ours = branch_push.replacing, branch_push.ours
    if replacing is None or ours is None or not remotes.push_stale(error):
        return None
    branch = branch_push.branch
    try:
        moved = remotes.fetch_branch(
            branch_push.mirror, branch_push.url, branch, env=branch_push.env
        )
    except GitError as exc:  # the push's own failure says enough
        log.warning("could not fetch %s to see who moved it: %s", branch, exc.summary)
        return None
    return moved if moved is not None and moved != replacing and ours(moved) else None


def _passing(error: GitError) -> bool:
    """A failure worth another try: anything but GitHub's refusal, or a refusal only because
    the ref was locked there."""
    return remotes.push_rejection(error) is None or remotes.push_busy(error)
