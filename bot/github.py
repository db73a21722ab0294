"""The GitHub side of the bot: app and installation tokens, and the REST calls a run makes.

Built on PyGithub with its own retries switched off: `Retrier` retries 5xx answers, 429s and
secondary-rate-limit 403s (honouring Retry-After, sleeping through an injectable `sleep`), and
PyGithub's exceptions become bot.errors. Tokens never appear in a repr, an error or a log line;
for git they travel only in the environment of the git process (`git_auth_env`).
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, TypeVar
from urllib.parse import quote

import jwt
import requests
from github import Auth, Github, GithubException
from github.GithubObject import NotSet, Opt
from github.IssueComment import IssueComment
from github.NamedUser import NamedUser
from github.Organization import Organization
from github.PullRequest import PullRequest
from github.Repository import Repository
from pydantic import BaseModel, ConfigDict

from bot.errors import GitHubError, NotFound, PermissionDenied

log = logging.getLogger(__name__)

T = TypeVar("T")
Role = Literal["admin", "maintain", "write", "triage", "read", "none"]
ROLES: tuple[Role, ...] = ("admin", "maintain", "write", "triage", "read")
RUN_ROLES = frozenset({"admin", "maintain", "write"})
Reaction = Literal["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"]
JWT_BACKDATE_S = 60  # GitHub's advice against clock drift
JWT_LIFETIME_S = 9 * 60  # GitHub accepts at most 10 minutes
REFRESH_MARGIN_S = 5 * 60
TIMEOUT_S = 30


class _Model(BaseModel):
    """Unknown keys are a bug."""

    model_config = ConfigDict(extra="forbid")


class IssueInfo(_Model):
    """What a run needs to know about an issue (or the issue side of a pull request)."""

    number: int
    title: str
    body: str
    state: str
    locked: bool
    is_pull_request: bool
    html_url: str


class PullInfo(_Model):
    """What a run needs to know about a pull request; head_repo None when the fork is gone."""

    number: int
    title: str
    body: str
    head_ref: str
    head_sha: str
    head_repo: str | None
    base_ref: str
    html_url: str
    draft: bool
    state: str


# --- errors and retries ----------------------------------------------------------------------


def _header(headers: Mapping[str, Any] | None, name: str) -> str | None:
    """A response header by case-insensitive name."""
    for key, value in (headers or {}).items():
        if key.lower() == name:
            return str(value)
    return None


def _message(exc: GithubException) -> str:
    """GitHub's `message` of an error answer (with a validation error's details)."""
    data = exc.data
    if not isinstance(data, dict):
        return exc.message or f"HTTP {exc.status}"
    text = str(data.get("message") or exc.message or f"HTTP {exc.status}")
    details = [e.get("message") or e.get("code") for e in data.get("errors") or []
               if isinstance(e, dict)]
    return f"{text} ({'; '.join(str(d) for d in details)})" if details else text


def _is_rate_limit(exc: GithubException) -> bool:
    """A 429, or a 403 that is a (primary or secondary) rate limit rather than a refusal."""
    if exc.status == 429:
        return True
    return exc.status == 403 and (
        _header(exc.headers, "retry-after") is not None
        or _header(exc.headers, "x-ratelimit-remaining") == "0"
        or "rate limit" in _message(exc).lower()
    )


def _retry_after(exc: GithubException, now: float) -> float | None:
    """Seconds GitHub asks us to wait: Retry-After, else until X-RateLimit-Reset when spent."""
    value = _header(exc.headers, "retry-after")
    if value is not None:
        try:
            return max(0.0, float(value))
        except ValueError:
            return None
    reset = _header(exc.headers, "x-ratelimit-reset")
    if _header(exc.headers, "x-ratelimit-remaining") == "0" and reset and reset.isdigit():
        return max(0.0, float(reset) - now)
    return None


def to_bot_error(exc: GithubException, action: str, now: float) -> GitHubError:
    """The bot.errors form of a PyGithub exception: 404 NotFound, 401/403 PermissionDenied."""
    status, wait = exc.status, _retry_after(exc, now)
    text = f"{action}: GitHub answered {status}: {_message(exc)}"
    if status == 404:
        return NotFound(text, status=status)
    if status in (401, 403) and not _is_rate_limit(exc):
        return PermissionDenied(text, status=status)
    return GitHubError(text, status=status, retry_after=wait)


@dataclass
class Retrier:
    """Runs a GitHub call, retrying transient failures with backoff that honours Retry-After."""

    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    max_retries: int = 3
    backoff_s: float = 1.0
    max_wait_s: float = 60.0  # a longer wait (a spent primary limit) is the caller's decision

    def run(self, action: str, call: Callable[[], T]) -> T:
        """`call()`, retried on 5xx, 429, secondary rate limits and connection errors."""
        attempt = 0
        while True:
            try:
                return call()
            except GithubException as exc:
                error: GitHubError = to_bot_error(exc, action, self.clock())
                wait = self._wait(exc, attempt)
            except requests.RequestException as exc:
                error = GitHubError(f"{action}: {type(exc).__name__}: {str(exc)[:300]}")
                wait = self.backoff_s * 2**attempt
            if wait is None or attempt >= self.max_retries:
                raise error from None
            log.warning("%s failed (%s); retry %d in %.1f s", action, error.status,
                        attempt + 1, wait)
            self.sleep(wait)
            attempt += 1

    def _wait(self, exc: GithubException, attempt: int) -> float | None:
        """Seconds to wait before retrying `exc`, or None when it is not worth retrying."""
        if exc.status >= 500:
            wait = _retry_after(exc, self.clock())
            wait = self.backoff_s * 2**attempt if wait is None else wait
        elif _is_rate_limit(exc):
            wait = _retry_after(exc, self.clock())
            wait = 60.0 if wait is None else wait  # GitHub: "wait at least one minute"
        else:
            return None
        return wait if wait <= self.max_wait_s else None


# --- tokens ----------------------------------------------------------------------------------


class TokenProvider(Protocol):
    """Where API and git tokens come from."""

    def token(self, installation_id: int | None) -> str:
        """A live token for the installation (None: the provider's only token)."""
        ...


class StaticToken:
    """One fixed token (Actions mode: GITHUB_TOKEN), whatever the installation."""

    def __init__(self, token: str) -> None:
        self._token = token

    def token(self, installation_id: int | None) -> str:
        """The token."""
        return self._token

    def __repr__(self) -> str:
        return "StaticToken(<redacted>)"


@dataclass
class _Cached:
    """An installation token and when it expires (epoch seconds)."""

    token: str = field(repr=False)
    expires_at: float


def _client(api_url: str, auth: Auth.Auth) -> Github:
    """A PyGithub client without its own retries or throttling (Retrier decides)."""
    return Github(base_url=api_url, auth=auth, retry=None, lazy=True, per_page=100,
                  timeout=TIMEOUT_S, seconds_between_requests=None, seconds_between_writes=None)


class AppTokens:
    """Installation tokens of a GitHub App: JWT → access token, cached until 5 min before expiry."""

    def __init__(
        self, app_id: int, private_key: str, api_url: str, *,
        clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep,
        max_retries: int = 3,
    ) -> None:
        self.app_id = app_id
        self.api_url = api_url
        self._key = private_key
        self._clock = clock
        self._retrier = Retrier(sleep=sleep, clock=clock, max_retries=max_retries)
        self._cache: dict[int, _Cached] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AppTokens(app_id={self.app_id}, api_url={self.api_url!r})"

    def token(self, installation_id: int | None) -> str:
        """A token of the installation, minted when none is cached or it expires within 5 min."""
        if installation_id is None:
            raise GitHubError("an installation id is needed for a GitHub App token")
        with self._lock:
            cached = self._cache.get(installation_id)
            if cached is None or cached.expires_at - REFRESH_MARGIN_S <= self._clock():
                cached = self._mint(installation_id)
                self._cache[installation_id] = cached
            return cached.token

    def forget(self, installation_id: int) -> None:
        """Drop a cached token (the app was uninstalled, or GitHub refused the token)."""
        with self._lock:
            self._cache.pop(installation_id, None)

    def app_jwt(self) -> str:
        """A JWT (RS256) authenticating as the app: issued 60 s ago, valid 9 minutes."""
        now = int(self._clock())
        claims = {"iat": now - JWT_BACKDATE_S, "exp": now + JWT_LIFETIME_S, "iss": str(self.app_id)}
        return jwt.encode(claims, self._key, algorithm="RS256")

    def installation_id(self, repo: str) -> int:
        """The id of the app's installation on `repo` ("owner/name")."""
        data = self._as_app(f"installation of {repo}", "GET", f"/repos/{_repo_path(repo)}"
                            "/installation")
        return int(data["id"])

    def _mint(self, installation_id: int) -> _Cached:
        """A new installation access token."""
        data = self._as_app(f"token for installation {installation_id}", "POST",
                            f"/app/installations/{installation_id}/access_tokens")
        expires = datetime.fromisoformat(str(data["expires_at"]).replace("Z", "+00:00"))
        return _Cached(str(data["token"]), expires.timestamp())

    def _as_app(self, action: str, verb: str, path: str) -> dict[str, Any]:
        """One API call authenticated as the app (a fresh JWT per attempt)."""
        def call() -> dict[str, Any]:
            with _client(self.api_url, Auth.AppAuthToken(self.app_jwt())) as gh:
                _, data = gh.requester.requestJsonAndCheck(verb, path)
                return dict(data)
        return self._retrier.run(action, call)


# --- the API ---------------------------------------------------------------------------------


def _repo_path(repo: str) -> str:
    """`owner/name` quoted for a URL path; anything else is a ValueError."""
    owner, _, name = repo.partition("/")
    if not owner or not name or "/" in name:
        raise ValueError(f"not an owner/name repository: {repo!r}")
    return f"{quote(owner, safe='')}/{quote(name, safe='')}"


def _role(data: Mapping[str, Any]) -> Role:
    """The role in a collaborator-permission answer (custom roles fall back to their base)."""
    for key in ("role_name", "permission"):
        value = data.get(key)
        for role in ROLES:
            if value == role:
                return role
    return "none"


def _opt(value: str | None) -> Opt[str]:
    """PyGithub's NotSet for None (leave the field alone)."""
    return NotSet if value is None else value


def _author_type(user: NamedUser | Organization | None) -> str:
    """"User", "Bot", … of a comment's author ("" for a deleted account)."""
    return "" if user is None else str(user.type)


def _pull_info(pr: PullRequest) -> PullInfo:
    """PullInfo of a PyGithub pull request."""
    head_repo = pr.head.repo.full_name if pr.head.repo is not None else None
    return PullInfo(number=pr.number, title=pr.title, body=pr.body or "", head_ref=pr.head.ref,
                    head_sha=pr.head.sha, head_repo=head_repo, base_ref=pr.base.ref,
                    html_url=pr.html_url, draft=bool(pr.draft), state=pr.state)


class GitHubAPI:
    """The REST calls of a run; each names its installation (None with a StaticToken)."""

    def __init__(
        self, api_url: str, github_url: str, tokens: TokenProvider, *,
        sleep: Callable[[float], None] = time.sleep, max_retries: int = 3,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.github_url = github_url.rstrip("/")
        self._tokens = tokens
        self._retrier = Retrier(sleep=sleep, clock=clock, max_retries=max_retries)

    def __repr__(self) -> str:
        return f"GitHubAPI(api_url={self.api_url!r}, github_url={self.github_url!r})"

    def installation_for(self, repo: str) -> int:
        """The App's installation on `repo` (App mode only)."""
        if not isinstance(self._tokens, AppTokens):
            raise GitHubError("installation ids exist only for a GitHub App")
        return self._tokens.installation_id(repo)

    def _call(self, installation_id: int | None, action: str, op: Callable[[Github], T]) -> T:
        """Run `op` against a client holding the installation's token, with retries."""
        def attempt() -> T:
            with _client(self.api_url, Auth.Token(self._tokens.token(installation_id))) as gh:
                return op(gh)
        return self._retrier.run(action, attempt)

    def _on_repo(self, installation_id: int | None, action: str, repo: str,
                 op: Callable[[Repository], T]) -> T:
        """`_call` with the (lazy, not fetched) repository object."""
        _repo_path(repo)
        return self._call(installation_id, action, lambda gh: op(gh.get_repo(repo)))

    # --- who may run ---------------------------------------------------------------------------

    def permission(self, repo: str, user: str, *, installation_id: int | None) -> Role:
        """The user's role on the repository; "none" when GitHub says 404 (not a collaborator)."""
        path = f"/repos/{_repo_path(repo)}/collaborators/{quote(user, safe='')}/permission"

        def op(gh: Github) -> Role:
            _, data = gh.requester.requestJsonAndCheck("GET", path)
            return _role(data)
        try:
            return self._call(installation_id, f"permission of {user} on {repo}", op)
        except NotFound:
            return "none"

    def can_start_runs(self, repo: str, user: str, *, installation_id: int | None) -> bool:
        """Whether `user` is admin, maintain or write on `repo`; any failure denies."""
        try:
            return self.permission(repo, user, installation_id=installation_id) in RUN_ROLES
        except Exception as exc:  # fail closed: whatever went wrong, nobody starts a run
            log.warning("permission check of %s on %s failed, denying: %s", user, repo, exc)
            return False

    # --- reading -------------------------------------------------------------------------------

    def issue(self, repo: str, number: int, *, installation_id: int | None) -> IssueInfo:
        """An issue (or the issue side of a pull request)."""
        def op(r: Repository) -> IssueInfo:
            i = r.get_issue(number)
            return IssueInfo(number=i.number, title=i.title, body=i.body or "", state=i.state,
                             locked=bool(i.locked), is_pull_request=i.pull_request is not None,
                             html_url=i.html_url)
        return self._on_repo(installation_id, f"issue {repo}#{number}", repo, op)

    def pull(self, repo: str, number: int, *, installation_id: int | None) -> PullInfo:
        """A pull request."""
        return self._on_repo(installation_id, f"pull request {repo}#{number}", repo,
                             lambda r: _pull_info(r.get_pull(number)))

    def review_comments(self, repo: str, number: int, *, installation_id: int | None
                        ) -> list[str]:
        """Bodies of a pull request's review and conversation comments by people, oldest first."""
        def op(r: Repository) -> list[str]:
            found = [(c.created_at, c.body, _author_type(c.user))
                     for c in r.get_pull(number).get_review_comments()]
            found += [(c.created_at, c.body, _author_type(c.user))
                      for c in r.get_issue(number).get_comments()]
            found.sort(key=lambda item: item[0])
            return [body for _, body, kind in found if kind != "Bot"]
        return self._on_repo(installation_id, f"comments of {repo}#{number}", repo, op)

    def default_branch(self, repo: str, *, installation_id: int | None) -> str:
        """The repository's default branch."""
        return self._on_repo(installation_id, f"repository {repo}", repo,
                             lambda r: str(r.default_branch))

    def find_pull(self, repo: str, head_branch: str, *, installation_id: int | None
                  ) -> PullInfo | None:
        """The open pull request from `head_branch` of this repository, if any."""
        owner = repo.partition("/")[0]

        def op(r: Repository) -> PullInfo | None:
            for pr in r.get_pulls(state="open", head=f"{owner}:{head_branch}"):
                return _pull_info(pr)
            return None
        return self._on_repo(installation_id, f"pull requests of {repo}", repo, op)

    # --- writing -------------------------------------------------------------------------------

    def create_pull(self, repo: str, *, title: str, body: str, head: str, base: str,
                    draft: bool, installation_id: int | None) -> PullInfo:
        """Open a pull request from branch `head` into `base`."""
        return self._on_repo(installation_id, f"new pull request on {repo}", repo, lambda r:
                             _pull_info(r.create_pull(base=base, head=head, title=title,
                                                      body=body, draft=draft)))

    def update_pull(self, repo: str, number: int, *, title: str | None = None,
                    body: str | None = None, installation_id: int | None) -> None:
        """Change a pull request's title and/or body."""
        if title is None and body is None:
            return
        self._on_repo(installation_id, f"update of {repo}#{number}", repo,
                      lambda r: r.get_pull(number).edit(title=_opt(title), body=_opt(body)))

    def comment(self, repo: str, issue_number: int, body: str, *,
                installation_id: int | None) -> int:
        """Post a comment on an issue or pull request; its id."""
        return self._on_repo(installation_id, f"comment on {repo}#{issue_number}", repo,
                             lambda r: int(r.get_issue(issue_number).create_comment(body).id))

    def edit_comment(self, repo: str, comment_id: int, body: str, *,
                     installation_id: int | None) -> None:
        """Replace a comment's body."""
        self._on_repo(installation_id, f"edit of comment {comment_id} on {repo}", repo,
                      lambda r: self._issue_comment(r, comment_id).edit(body))

    def react(self, repo: str, issue_number: int, content: Reaction, *,
              comment_id: int | None = None, installation_id: int | None) -> None:
        """React to an issue, or to one of its comments."""
        def op(r: Repository) -> None:
            if comment_id is None:
                r.get_issue(issue_number).create_reaction(content)
            else:
                self._issue_comment(r, comment_id).create_reaction(content)
        self._on_repo(installation_id, f"reaction on {repo}#{issue_number}", repo, op)

    def create_check_run(self, repo: str, head_sha: str, *, name: str, title: str, summary: str,
                         installation_id: int | None) -> int:
        """Start an in-progress check run on a commit; its id."""
        output: dict[str, str | list[dict[str, str | int]]] = {"title": title, "summary": summary}
        return self._on_repo(installation_id, f"check run on {repo}@{head_sha[:12]}", repo,
                             lambda r: int(r.create_check_run(name, head_sha,
                                                              status="in_progress",
                                                              output=output).id))

    def update_check_run(self, repo: str, check_run_id: int, *, status: str,
                         conclusion: str | None = None, title: str, summary: str,
                         installation_id: int | None) -> None:
        """Update a check run; a conclusion completes it."""
        output = {"title": title, "summary": summary}
        self._on_repo(installation_id, f"check run {check_run_id} on {repo}", repo,
                      lambda r: r.get_check_run(check_run_id).edit(
                          status=status, conclusion=_opt(conclusion), output=output))

    @staticmethod
    def _issue_comment(repo: Repository, comment_id: int) -> IssueComment:
        """A lazy issue comment by id (PyGithub only reaches one through an issue)."""
        return IssueComment(repo.requester, url=f"{repo.url}/issues/comments/{comment_id}")

    # --- git -----------------------------------------------------------------------------------

    def clone_url(self, repo: str) -> str:
        """The HTTPS clone URL, without credentials."""
        _repo_path(repo)
        return f"{self.github_url}/{repo}.git"

    def git_auth_env(self, installation_id: int | None) -> dict[str, str]:
        """Environment for one git process carrying the token as an http.extraheader."""
        basic = base64.b64encode(f"x-access-token:{self._tokens.token(installation_id)}".encode())
        return {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "http.extraheader",
            "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic.decode()}",
        }
