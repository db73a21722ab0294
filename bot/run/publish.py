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
from pathlib import Path

from agent.errors import GitError
from agent.git import remotes

log = logging.getLogger(__name__)
PUSH_ATTEMPTS = 3
PUSH_BACKOFF = 5.0  # seconds before the second try; doubled before each next one
Ours = Callable[[str], bool]  # whether the commit a branch moved to brought only cra's commits


def push(
    mirror: Path,
    url: str,
    branch: str,
    *,
    env: Mapping[str, str],
    replacing: str | None,
    sleep: Callable[[float], None],
    ours: Ours | None = None,
    attempts: int = PUSH_ATTEMPTS,
    backoff: float = PUSH_BACKOFF,
) -> None:
    """Push `branch` of `mirror` to `url` as remotes.push_branch does, up to `attempts` times;
    the last failure (GitError) when none got through, at once when GitHub refused it. With
    `ours`, a push replacing `replacing` replaces what the branch moved to instead, when that
    brought only cra's commits."""
    for attempt in range(1, attempts + 1):
        try:
            remotes.push_branch(mirror, url, branch, env=env, replacing=replacing)
            return
        except GitError as exc:
            if attempt < attempts and (
                late := _late_push(exc, mirror, url, branch, env, replacing, ours)
            ):
                log.warning(
                    "%s moved to %s, an earlier run's push landing late: replaced", branch, late
                )
                replacing = late
                continue
            if not _passing(exc) or attempt == attempts:
                raise
            wait = backoff * 2 ** (attempt - 1)
            log.warning(
                "the push of %s failed (%s); try %d of %d in %g s",
                branch,
                exc.summary,
                attempt + 1,
                attempts,
                wait,
            )
            sleep(wait)


def _late_push(
    error: GitError,
    mirror: Path,
    url: str,
    branch: str,
    env: Mapping[str, str],
    replacing: str | None,
    ours: Ours | None,
) -> str | None:
    """The commit the branch moved to while the run worked, when it brought only cra's
    commits; None otherwise (a person's push, a fast-forward push, no `ours`)."""
    if replacing is None or ours is None or not remotes.push_stale(error):
        return None
    try:
        moved = remotes.fetch_branch(mirror, url, branch, env=env)
    except GitError as exc:  # the push's own failure says enough
        log.warning("could not fetch %s to see who moved it: %s", branch, exc.summary)
        return None
    return moved if moved is not None and moved != replacing and ours(moved) else None


def _passing(error: GitError) -> bool:
    """A failure worth another try: anything but GitHub's refusal, or a refusal only because
    the ref was locked there."""
    return remotes.push_rejection(error) is None or remotes.push_busy(error)
