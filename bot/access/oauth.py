"""GitHub as a signed-in person sees it: the App's OAuth endpoints, who they are, and whether
they can read a repository (cached briefly)."""

# The run pages show prompts, answers, code and test output. Whether someone may see a run is
# asked of GitHub with their own user access token: such a token sees exactly the repositories
# that both the person and the App's installations can see, which is the rule the pages want.

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

import httpx
from pydantic import BaseModel, SecretStr

from bot.errors import BotError

ACCESS_TTL = 60.0  # seconds an answer about someone's access is reused
ACCESS_ENTRIES = 10_000  # answers kept at most (oldest dropped first)
API_HEADERS = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}


class SignInError(BotError):
    """GitHub refused a sign-in or could not answer about access; never carries a token."""


class TokenRevoked(SignInError):
    """The person's token no longer works (expired or revoked): they must sign in again."""


class UserToken(BaseModel):
    """A user access token from the sign-in, and when it stops working (epoch seconds)."""

    value: SecretStr
    expires_at: float | None = None


@dataclass(frozen=True)
class OAuthClient:
    """The App's OAuth client: its id and its secret (never shown)."""

    client_id: str
    client_secret: str = field(repr=False)


class GitHubUsers:
    """The App's OAuth endpoints on GitHub's web root and the API with a person's token."""

    def __init__(
        self,
        *,
        web_url: str,
        api_url: str,
        client: OAuthClient,
        http: httpx.Client,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._web = web_url.rstrip("/")
        self._api = api_url.rstrip("/")
        self.client_id = client.client_id
        self._secret = client.client_secret
        self._http = http
        self._clock = clock

    def authorize_url(self, redirect_uri: str, state: str) -> str:
        """Where the browser goes to approve the sign-in."""
        query = urlencode(
            {
                "client_id": self.client_id,
                "redirect_uri": redirect_uri,
                "state": state,
                "allow_signup": "false",
            }
        )
        return f"{self._web}/login/oauth/authorize?{query}"

    def exchange(self, code: str, redirect_uri: str) -> UserToken:
        """Trade the one-time code for the person's token; SignInError when GitHub refuses."""
        form = {
            "client_id": self.client_id,
            "client_secret": self._secret,
            "code": code,
            "redirect_uri": redirect_uri,
        }
        answer = self._json(
            "POST",
            f"{self._web}/login/oauth/access_token",
            data=form,
            headers={"Accept": "application/json"},
        )
        token = answer.get("access_token")
        if not isinstance(token, str) or not token:
            raise SignInError(
                f"GitHub refused the sign-in ({_text(answer.get('error'))}: "
                f"{_text(answer.get('error_description'))})"
            )
        expires_in = answer.get("expires_in")
        expires = self._clock() + float(expires_in) if isinstance(expires_in, int) else None
        return UserToken(value=SecretStr(token), expires_at=expires)

    def login(self, token: str) -> str:
        """The login of the person the token belongs to."""
        login = self._json("GET", f"{self._api}/user", headers=_bearer(token)).get("login")
        if not isinstance(login, str) or not login:
            raise SignInError("GitHub's answer about the signed-in user has no login")
        return login

    def can_read(self, token: str, repository: str) -> bool:
        """Whether the person can read `repository` (a 404 or 403 means no)."""
        url = f"{self._api}/repos/{quote(repository, safe='/')}"
        response = self._send("GET", url, headers=_bearer(token))
        if response.status_code in (403, 404):
            return False
        body = _checked(response)
        permissions = body.get("permissions")
        return not isinstance(permissions, dict) or bool(permissions.get("pull", True))

    def revoke(self, token: str) -> None:
        """Revoke the person's token at GitHub (at sign-out); an unknown token is fine."""
        url = f"{self._api}/applications/{quote(self.client_id, safe='')}/token"
        response = self._send(
            "DELETE",
            url,
            json={"access_token": token},
            auth=(self.client_id, self._secret),
            headers=API_HEADERS,
        )
        if response.status_code not in (204, 404, 422):
            _checked(response)

    def _json(self, method: str, url: str, **kw: Any) -> dict[str, Any]:
        return _checked(self._send(method, url, **kw))

    def _send(self, method: str, url: str, **kw: Any) -> httpx.Response:
        try:
            return self._http.request(method, url, **kw)
        except httpx.HTTPError as exc:
            raise SignInError(f"could not reach GitHub ({type(exc).__name__})") from exc


def _bearer(token: str) -> dict[str, str]:
    return {**API_HEADERS, "Authorization": f"Bearer {token}"}


def _checked(response: httpx.Response) -> dict[str, Any]:
    """The JSON object of a 2xx answer; TokenRevoked for 401, SignInError otherwise."""
    if response.status_code == 401:
        raise TokenRevoked("GitHub no longer accepts this sign-in")
    if not response.is_success:
        raise SignInError(f"GitHub answered {response.status_code}")
    try:
        body = response.json()
    except ValueError as exc:
        raise SignInError("GitHub's answer is not JSON") from exc
    if not isinstance(body, dict):
        raise SignInError("GitHub's answer is not a JSON object")
    return body


def _text(value: object) -> str:
    return str(value)[:200] if value else "no reason given"


class AccessCache:
    """Answers to "can LOGIN read REPOSITORY", each kept `ttl` seconds; thread-safe."""

    def __init__(
        self,
        *,
        ttl: float = ACCESS_TTL,
        entries: int = ACCESS_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl, self._entries, self._clock = ttl, entries, clock
        self._answers: OrderedDict[tuple[str, str], tuple[float, bool]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, login: str, repository: str) -> bool | None:
        """The cached answer, or None when there is none or it is too old."""
        key = (login, repository)
        with self._lock:
            found = self._answers.get(key)
            if found is None or found[0] <= self._clock():
                self._answers.pop(key, None)
                return None
            return found[1]

    def put(self, login: str, repository: str, readable: bool) -> None:
        """Remember an answer; the oldest go when there are too many."""
        with self._lock:
            self._answers[(login, repository)] = (self._clock() + self._ttl, readable)
            self._answers.move_to_end((login, repository))
            while len(self._answers) > self._entries:
                self._answers.popitem(last=False)

    def forget_repositories(self, owner: str | None, repositories: Iterable[str] = ()) -> None:
        """Drop every answer about the repositories of an account (`owner`) and about those
        named (the App's installation on them was removed, suspended or narrowed)."""
        names = {name.casefold() for name in repositories}
        prefix = f"{owner.casefold()}/" if owner else None
        with self._lock:
            for key in [
                k
                for k in self._answers
                if k[1].casefold() in names
                or (prefix is not None and k[1].casefold().startswith(prefix))
            ]:
                del self._answers[key]

    def forget(self, login: str) -> None:
        """Drop every answer about one person (they signed out)."""
        with self._lock:
            for key in [k for k in self._answers if k[0] == login]:
                del self._answers[key]
