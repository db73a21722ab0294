"""Where GitHub tokens come from: a static token, or a GitHub App's JWT and installation tokens.

Tokens never appear in a repr, an error or a log line.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import jwt
from github import Auth

from bot.errors import GitHubError
from bot.github.calls import Retrier, bare_client, repo_path

JWT_BACKDATE_S = 60  # GitHub's advice against clock drift
JWT_LIFETIME_S = 9 * 60  # GitHub accepts at most 10 minutes
REFRESH_MARGIN_S = 5 * 60


class TokenProvider(Protocol):
    """Where API and git tokens come from."""

    def token(self, installation_id: int | None) -> str:
        """A live token for the installation (None: the provider's only token)."""
        ...


class Generations(Protocol):
    """How often each installation was removed, suspended or changed, as webhooks told."""

    def generation(self, installation_id: int) -> int:
        """The installation's count of such changes (0: none known)."""
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
    """An installation token, when it expires (epoch seconds), and the installation's
    generation when it was minted."""

    token: str = field(repr=False)
    expires_at: float
    generation: int = 0


class AppTokens:
    """Installation tokens of a GitHub App: JWT → access token, cached until 5 min before expiry
    or until the installation is removed, suspended or changed (its generation moves on: given
    `generations`, every token asked for is checked against it, whichever process heard)."""

    def __init__(
        self,
        app_id: int,
        private_key: str,
        api_url: str,
        *,
        retrier: Retrier | None = None,
        generations: Generations | None = None,
    ) -> None:
        self.app_id = app_id
        self._generations = generations
        self.api_url = api_url
        self._key = private_key
        self._retrier = retrier or Retrier()  # its clock also tells a token's expiry
        self._clock = self._retrier.clock
        self._cache: dict[int, _Cached] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AppTokens(app_id={self.app_id}, api_url={self.api_url!r})"

    def token(self, installation_id: int | None) -> str:
        """A token of the installation, minted when none is cached, it expires within 5 min, or
        the installation changed since it was minted."""
        if installation_id is None:
            raise GitHubError("an installation id is needed for a GitHub App token")
        generation = (
            0
            if self._generations is None  # read before a mint: a change after
            else self._generations.generation(installation_id)
        )  # it drops the token
        with self._lock:
            cached = self._cache.get(installation_id)
            if (
                cached is None
                or cached.generation != generation
                or cached.expires_at - REFRESH_MARGIN_S <= self._clock()
            ):
                self._cache.pop(installation_id, None)  # a refused mint leaves nothing stale
                cached = self._mint(installation_id, generation)
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
        data = self._as_app(
            f"installation of {repo}", "GET", f"/repos/{repo_path(repo)}/installation"
        )
        return int(data["id"])

    def _mint(self, installation_id: int, generation: int) -> _Cached:
        """A new installation access token, of the installation's generation."""
        data = self._as_app(
            f"token for installation {installation_id}",
            "POST",
            f"/app/installations/{installation_id}/access_tokens",
        )
        expires = datetime.fromisoformat(str(data["expires_at"]).replace("Z", "+00:00"))
        return _Cached(str(data["token"]), expires.timestamp(), generation)

    def _as_app(self, action: str, verb: str, path: str) -> dict[str, Any]:
        """One API call authenticated as the app (a fresh JWT per attempt)."""

        def call() -> dict[str, Any]:
            with bare_client(self.api_url, Auth.AppAuthToken(self.app_jwt())) as client:
                _, data = client.requester.requestJsonAndCheck(verb, path)
                return dict(data)

        return self._retrier.run(action, call)
