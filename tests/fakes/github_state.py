"""What the fake GitHub knows: its records and the World holding them under one lock."""

from __future__ import annotations

import itertools
import re
import secrets
import string
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fakes.repos import git_env

REACTIONS = frozenset({"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"})
ROLES = ("admin", "maintain", "write", "triage", "read")
LEGACY_PERMISSION = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
    "none": "none",
}
CHECK_STATUSES = frozenset({"queued", "in_progress", "completed"})
CHECK_CONCLUSIONS = frozenset(
    {
        "action_required",
        "cancelled",
        "failure",
        "neutral",
        "success",
        "skipped",
        "stale",
        "timed_out",
    }
)


class ManualClock:
    """A clock for tests: a fixed epoch time that moves only when told."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock forward."""
        self.now += seconds


def iso(ts: float | None) -> str | None:
    """GitHub's timestamp format (UTC, seconds), or None."""
    return None if ts is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


@dataclass(frozen=True)
class User:
    """An account: a person ("User") or an app's bot ("Bot")."""

    login: str
    type: str = "User"


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it: header names lower-case, Authorization left out."""

    kind: str  # "api" | "git" | "oauth"
    method: str
    path: str  # without the query, API paths without the /api/v3 prefix
    query: dict[str, str]
    headers: dict[str, str]
    json: Any
    token: str | None  # the token it authenticated with, if any


@dataclass
class Comment:
    """An issue (or pull request conversation) comment."""

    id: int
    issue_number: int
    body: str
    user: User
    created_at: float
    updated_at: float


@dataclass
class ReviewComment:
    """A pull request review (diff line) comment."""

    id: int
    pull_number: int
    body: str
    user: User
    path: str
    line: int
    created_at: float


@dataclass
class Review:
    """A submitted pull request review: its summary body (None when left empty) and verdict."""

    id: int
    pull_number: int
    body: str | None
    user: User
    state: str  # APPROVED, CHANGES_REQUESTED or COMMENTED
    submitted_at: float


@dataclass
class Reaction:
    """A reaction on an issue (comment_id None) or on one of its comments."""

    id: int
    content: str
    user: User
    issue_number: int | None
    comment_id: int | None
    created_at: float


@dataclass
class Issue:
    """An issue; a Pull is one too (numbers are shared, as on GitHub)."""

    number: int
    title: str
    body: str | None
    user: User
    labels: list[str]
    state: str
    locked: bool
    created_at: float
    updated_at: float
    closed_at: float | None = None


@dataclass
class Pull(Issue):
    """A pull request: an issue with a head and a base."""

    head_ref: str = ""
    base_ref: str = ""
    head_repo: str = ""
    draft: bool = False
    head_sha: str | None = None  # fixed SHA of a fork head, else the last seen branch SHA


@dataclass
class CheckRun:
    """A check run created by the app."""

    id: int
    name: str
    head_sha: str
    status: str
    conclusion: str | None
    title: str | None
    summary: str | None
    text: str | None
    details_url: str | None
    external_id: str | None
    started_at: float
    completed_at: float | None


@dataclass
class Repo:
    """A repository: a bare git repository plus its issues, pulls, comments and checks."""

    full_name: str
    id: int
    path: Path
    default_branch: str
    private: bool = False
    collaborators: dict[str, str] = field(default_factory=dict)
    issues: dict[int, Issue] = field(default_factory=dict)
    comments: dict[int, Comment] = field(default_factory=dict)
    review_comments: dict[int, ReviewComment] = field(default_factory=dict)
    reviews: dict[int, Review] = field(default_factory=dict)
    reactions: list[Reaction] = field(default_factory=list)
    check_runs: dict[int, CheckRun] = field(default_factory=dict)
    next_number: int = 1

    @property
    def owner(self) -> str:
        """The owner's login."""
        return self.full_name.split("/", 1)[0]

    def take_number(self, number: int | None = None) -> int:
        """`number` (reserved) or the next free issue / pull request number."""
        if number is None:
            number, self.next_number = self.next_number, self.next_number + 1
            return number
        if number in self.issues:
            raise ValueError(f"#{number} exists in {self.full_name}")
        self.next_number = max(self.next_number, number + 1)
        return number

    def branch_sha(self, branch: str) -> str | None:
        """The commit a branch points at, or None."""
        proc = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"],
            cwd=self.path,
            env=git_env(),
            capture_output=True,
            text=True,
            check=False,
        )
        return proc.stdout.strip() or None

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Whether commit `ancestor` is reachable from `descendant`."""
        proc = subprocess.run(
            ["git", "merge-base", "--is-ancestor", ancestor, descendant],
            cwd=self.path,
            env=git_env(),
            capture_output=True,
            check=False,
        )
        return proc.returncode == 0


@dataclass
class Token:
    """An access token: an installation's (expiring), a static one (Actions' GITHUB_TOKEN), or
    a user's (kind "user", from the App's OAuth flow: it sees what the user and the App both can).
    """

    value: str = field(repr=False)
    installation_id: int | None
    expires_at: float | None
    actor: User
    kind: str = "app"


@dataclass
class Installation:
    """An installation of the app; `repositories` None means all of them."""

    id: int
    repositories: frozenset[str] | None
    suspended: bool = False


@dataclass
class Failure:
    """An injected failure for the next `times` requests matching method and path."""

    method: str
    pattern: re.Pattern[str]
    status: int
    retry_after: str | None
    times: int
    body: dict[str, Any]
    headers: dict[str, str]


TOKEN_TTL_S = 3600
_TOKEN_ALPHABET = string.ascii_letters + string.digits


class World:
    """Everything the fake GitHub knows; callers hold `lock` while reading or changing it."""

    def __init__(self, clock: Callable[[], float], bot: User, installation_id: int) -> None:
        self.lock = threading.RLock()
        self.clock = clock
        self.bot = bot
        self.repos: dict[str, Repo] = {}
        self.installations = {installation_id: Installation(installation_id, None)}
        self.tokens: dict[str, Token] = {}
        self.failures: list[Failure] = []
        self.requests: list[RecordedRequest] = []
        self._ids = itertools.count(1_000_001)

    def next_id(self) -> int:
        """A fresh id for a comment, reaction or check run."""
        return next(self._ids)

    def repo(self, full_name: str) -> Repo:
        """A repository, or KeyError naming it."""
        try:
            return self.repos[full_name]
        except KeyError:
            raise KeyError(f"no repository {full_name!r} in the fake") from None

    def mint(self, installation_id: int) -> Token:
        """A new installation token ("ghs_" + 520 characters), valid for an hour."""
        value = "ghs_" + "".join(secrets.choice(_TOKEN_ALPHABET) for _ in range(520))
        token = Token(value, installation_id, int(self.clock()) + TOKEN_TTL_S, self.bot)
        self.tokens[value] = token
        return token

    def revoke_tokens(self, installation_id: int) -> None:
        """Revoke every token of an installation (it was removed or suspended)."""
        for value in [v for v, t in self.tokens.items() if t.installation_id == installation_id]:
            del self.tokens[value]

    def live_token(self, value: str) -> Token | None:
        """The token `value` names, unless unknown or expired."""
        token = self.tokens.get(value)
        if token is None or (token.expires_at is not None and token.expires_at <= self.clock()):
            return None
        return token

    def can_see(self, token: Token, repo: Repo) -> bool:
        """Whether a token's installation covers `repo` (static tokens see everything); a user's
        token sees an installed repository that is public or that the user collaborates on."""
        if token.kind == "user":
            return self.installed(repo) and self.user_can_read(token.actor.login, repo)
        if token.installation_id is None:
            return True
        repos = self.installations[token.installation_id].repositories
        return repos is None or repo.full_name in repos

    def installed(self, repo: Repo) -> bool:
        """Whether some installation of the app covers `repo`."""
        return any(
            i.repositories is None or repo.full_name in i.repositories
            for i in self.installations.values()
        )

    def user_can_read(self, login: str, repo: Repo) -> bool:
        """Whether a person can read `repo`: it is public, or they have a role on it."""
        return not repo.private or repo.collaborators.get(login, "none") != "none"

    def head_sha(self, repo: Repo, pull: Pull) -> str:
        """The current head SHA of a pull request (its branch, else the last one seen)."""
        if pull.head_repo == repo.full_name:
            sha = repo.branch_sha(pull.head_ref)
            if sha is not None:
                pull.head_sha = sha
        return pull.head_sha or "0" * 40
