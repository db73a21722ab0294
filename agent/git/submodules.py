"""A run's worktree and the repository's submodules.

A worktree starts without its submodules' files, as `git clone` does without
`--recurse-submodules`. A submodule the repository already holds (initialised in the checkout cra
runs on, its objects in that checkout's git dir) is checked out from that copy, at the commit the
tree records, with every network protocol off: nothing is fetched, and no URL of `.gitmodules`
(the repository's to choose) is ever used. Each other submodule is named in a note, so that a
test needing its files does not fail without a word. The bot's mirrors are bare and hold none.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent.errors import GitError
from agent.git.repo import run_git

GITLINK = "160000"  # the mode of a submodule's entry in the index
# Only the local copy may be read: no other protocol, whatever a URL says.
LOCAL_ONLY = ("-c", "protocol.allow=never", "-c", "protocol.file.allow=always")


@dataclass(frozen=True)
class Submodule:
    """A submodule of a tree: its name in .gitmodules, its path, the commit the tree records."""

    name: str
    path: str
    commit: str


def submodules(worktree: Path) -> list[Submodule]:
    """The submodules of `worktree`'s index (its gitlinks), named as .gitmodules names them."""
    links: dict[str, str] = {}
    for entry in run_git(["ls-files", "--stage", "-z"], worktree).split("\0"):
        info, _, path = entry.partition("\t")
        mode, _, rest = info.partition(" ")
        if mode == GITLINK and path:
            links[path] = rest.split(" ", 1)[0]
    if not links:
        return []
    names = _names(worktree)
    return [
        Submodule(names.get(path, path), path, commit) for path, commit in sorted(links.items())
    ]


def _names(worktree: Path) -> dict[str, str]:
    """.gitmodules' path → name (empty without the file, or when git cannot read it)."""
    if not (worktree / ".gitmodules").is_file():
        return {}
    try:  # `--file` follows no include: the repository's file cannot make git read another
        out = run_git(
            ["config", "--file", ".gitmodules", "-z", "--get-regexp", r"^submodule\..*\.path$"],
            worktree,
        )
    except GitError:  # none listed (exit 1), or a malformed file
        return {}
    names: dict[str, str] = {}
    for entry in filter(None, out.split("\0")):
        key, _, path = entry.partition("\n")
        names[path] = key.removeprefix("submodule.").removesuffix(".path")
    return names


def held_copy(repo: Path, submodule: Submodule) -> Path | None:
    """The git dir of `repo`'s own copy of `submodule` when `repo` has initialised it, else
    None (a bare mirror initialises none)."""
    key = f"submodule.{submodule.name}.url"
    if "\n" in submodule.name or run_git_ok(["config", "--get", key], repo) is None:
        return None
    listed = run_git_ok(
        ["rev-parse", "--path-format=absolute", "--git-path", f"modules/{submodule.name}"], repo
    )
    candidates = [Path(listed.strip())] if listed else []
    candidates.append(repo / submodule.path / ".git")  # an old-style clone inside the tree
    return next((path for path in candidates if (path / "HEAD").is_file()), None)


def run_git_ok(args: list[str], cwd: Path) -> str | None:
    """git's output, or None when it fails."""
    try:
        return run_git(args, cwd)
    except GitError:
        return None


def check_out_submodules(repo: Path, worktree: Path) -> list[str]:
    """Check out each submodule of `worktree` (a worktree of `repo`) that `repo` holds, from
    that copy; a note on each one left out, and why."""
    try:
        found = submodules(worktree)
    except GitError as exc:
        return [f"the submodules were not looked for ({exc.summary})"]
    notes: list[str] = []
    missing: list[str] = []
    for submodule in found:
        source = held_copy(repo, submodule)
        if source is None:
            missing.append(submodule.path)
            continue
        problem = _check_out(worktree, submodule, source)
        if problem:
            notes.append(
                f"the submodule {submodule.path} could not be checked out at "
                f"{submodule.commit[:12]} from this checkout's copy ({problem}); "
                "`git submodule update` in the checkout fetches it"
            )
    if missing:
        notes.append(
            f"not checked out: the submodule{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)} (cra never fetches a submodule; it copies only those "
            "a local checkout has initialised): tests that need their files fail "
            "before and after the change"
        )
    return notes


def _check_out(worktree: Path, submodule: Submodule, source: Path) -> str | None:
    """`git submodule update` of one submodule from `source`; what went wrong, or None."""
    env = {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"submodule.{submodule.name}.url",
        "GIT_CONFIG_VALUE_0": str(source),
    }
    try:
        run_git(
            [
                *LOCAL_ONLY,
                "submodule",
                "--quiet",
                "update",
                "--no-recommend-shallow",
                "--",
                submodule.path,
            ],
            worktree,
            env=env,
        )
    except GitError as exc:
        return exc.summary
    head = run_git_ok(["-C", submodule.path, "rev-parse", "HEAD"], worktree)
    if head is None or head.strip() != submodule.commit:
        return "git checked out nothing"
    return None
