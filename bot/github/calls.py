"""One GitHub call made safely: a bare PyGithub client, errors as bot.errors, retries.

PyGithub's own retries and throttling are off: `Retrier` retries 5xx answers, 429s and
secondary-rate-limit 403s (honouring Retry-After, sleeping through an injectable `sleep`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

import requests
from github import Auth, Github, GithubException

from bot.errors import GitHubError, NotFound, PermissionDenied

log = logging.getLogger(__name__)

T = TypeVar("T")
TIMEOUT_S = 30


def bare_client(api_url: str, auth: Auth.Auth) -> Github:
    """A PyGithub client without its own retries or throttling (Retrier decides)."""
    return Github(
        base_url=api_url,
        auth=auth,
        retry=None,
        lazy=True,
        per_page=100,
        timeout=TIMEOUT_S,
        seconds_between_requests=None,
        seconds_between_writes=None,
    )


def repo_path(repo: str) -> str:
    """`owner/name` quoted for a URL path; anything else is a ValueError."""
    owner, _, name = repo.partition("/")
    if not owner or not name or "/" in name:
        raise ValueError(f"not an owner/name repository: {repo!r}")
    return f"{quote(owner, safe='')}/{quote(name, safe='')}"


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
    details = [
        e.get("message") or e.get("code") for e in data.get("errors") or [] if isinstance(e, dict)
    ]
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
            log.warning(
                "%s failed (%s); retry %d in %.1f s", action, error.status, attempt + 1, wait
            )
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
