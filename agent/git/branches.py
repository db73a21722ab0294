"""A run's branches: a name not yet taken (`cra`, `cra-2` …, checked as git checks them), and
a branch deleted."""

from __future__ import annotations

import re
from pathlib import Path

from agent.errors import GitError
from agent.git.repo import branch_exists, not_an_option, run_git

# Branch names git accepts under any rule: components of letters, digits, `_` and `-` (the
# slugs cra makes). Any other name is checked by `git check-ref-format`.
PLAIN_BRANCH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*(/[A-Za-z0-9_][A-Za-z0-9_-]*)*")


def unique_branch(repo: Path, base_name: str) -> str:
    """`base_name`, or `base_name-2`, `-3` … : the first that is not taken in `repo`."""
    not_an_option(base_name, "branch")
    if not PLAIN_BRANCH.fullmatch(base_name) or base_name == "HEAD":
        run_git(["check-ref-format", "--branch", base_name], repo)
    parts = base_name.split("/")
    for prefix in ("/".join(parts[:end]) for end in range(1, len(parts))):
        if branch_exists(repo, prefix):  # git keeps `cra` and `cra/x` in one namespace
            raise GitError(
                ["branch", base_name],
                1,
                f"fatal: a branch named '{prefix}' "
                f"exists, so no branch '{base_name}' can be made: rename or delete "
                f"'{prefix}'",
            )
    name, n = base_name, 1
    while branch_exists(repo, name) or _branches_under(repo, name):
        n += 1
        name = f"{base_name}-{n}"
    return name


def _branches_under(repo: Path, name: str) -> bool:
    """Whether a branch `name/…` exists (then no branch `name` can)."""
    return bool(
        run_git(
            ["for-each-ref", "--count=1", "--format=%(refname)", f"refs/heads/{name}/"], repo
        ).strip()
    )


def delete_branch(repo: Path, name: str) -> None:
    """Delete local branch `name` (merged or not)."""
    run_git(["branch", "-D", "--", not_an_option(name, "branch")], repo)
