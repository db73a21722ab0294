"""The branch an issue's run works on, and what its push may replace.

An issue's runs share one branch, `cra/issue-<n>`. A new run starts again from the default
branch and replaces cra's earlier attempt there, but never a person's work: when the branch
carries commits someone else made (a fix-up pushed to cra's pull request, a merge of the
default branch), the run builds on top of them instead. Either way the push replaces only the
commit the branch had when the run started (`--force-with-lease`), so a push made to the
branch while the run worked is never overwritten: the run says so instead — unless all it
brought is cra's own commits: an earlier run's push landing late (its worker was killed
mid-push, and its git outlived it), replaced like any attempt of cra's (bot.run.publish).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent.git import repo as git
from agent.run.landing.attempt import AUTHOR_EMAIL


@dataclass(frozen=True)
class IssueBranch:
    """Where an issue's run starts and what its push may replace."""

    name: str
    base_ref: str  # the default branch, or the branch itself when others' commits are on it
    replacing: str  # the branch's commit on GitHub as the run starts; "" when it has none
    builds_on_others: bool


def issue_branch(mirror: Path, default_branch: str, name: str) -> IssueBranch:
    """How a run uses its issue's branch `name`, in a freshly synced mirror of the repository."""
    if not git.branch_exists(mirror, name):
        return IssueBranch(name, default_branch, "", builds_on_others=False)
    head = git.resolve_commit(mirror, f"refs/heads/{name}")
    others = not only_cra(mirror, f"refs/heads/{default_branch}", head)
    return IssueBranch(name, name if others else default_branch, head, builds_on_others=others)


def only_cra(mirror: Path, since: str, head: str) -> bool:
    """Whether every commit `head` has that `since` has not is cra's own (none a person's)."""
    authors = git.run_git(["log", "--format=%ae", f"{since}..{head}", "--"], mirror).split()
    return all(author == AUTHOR_EMAIL for author in authors)
