"""The fake GitHub's side of signing in with a GitHub App: the authorize page, the code exchange
for a user access token, /user and the revocation of a token.

As on GitHub, `GET /login/oauth/authorize` is a page on the web root where a person approves the
App (here: types a login and presses "Authorize"); approving sends the browser to the App's
redirect URI with a one-time code and the App's state; `POST /login/oauth/access_token` trades
the code (with the client id and secret and the same redirect URI) for a user access token, which
sees what the user and the App's installations both can (github_state.World.can_see).
"""

from __future__ import annotations

import base64
import html
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from tests.fakes.github_api import Answer, HttpError
from tests.fakes.github_state import Token, User, World

CODE_TTL_S = 600  # GitHub's codes expire after ten minutes
USER_TOKEN_TTL_S = 8 * 3600  # and its expiring user tokens after eight hours
OAUTH_ERROR_URI = "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors"


@dataclass
class Grant:
    """A one-time code: who approved, for which redirect URI, until when."""

    login: str
    redirect_uri: str
    expires_at: float


class OAuth:
    """The App's OAuth client and the codes and user tokens it issued; callers hold world.lock."""

    def __init__(self, world: World, *, client_id: str, client_secret: str, app_name: str) -> None:
        self.world = world
        self.client_id = client_id
        self.client_secret = client_secret
        self.app_name = app_name
        self.callback_urls: list[str] = []  # none registered: any redirect URI is accepted
        self.grants: dict[str, Grant] = {}

    # --- the browser's side ----------------------------------------------------------------

    def authorize_page(self, query: dict[str, str]) -> tuple[int, str]:
        """The approval page for a sign-in request, or an error page."""
        problem = self._request_problem(query)
        if problem:
            return 400, _page("Sign-in error", f'<p id="error">{html.escape(problem)}</p>')
        hidden = "".join(
            f'<input type="hidden" name="{k}" value="{html.escape(query.get(k, ""), quote=True)}">'
            for k in ("client_id", "redirect_uri", "state")
        )
        form = (
            f"<p>Authorize <b>{html.escape(self.app_name)}</b> to know who you are.</p>"
            '<form method="post" action="/login/oauth/authorize">'
            + hidden
            + '<label>Signed in to GitHub as <input id="login" name="login"></label> '
            '<button id="authorize" type="submit">Authorize</button></form>'
        )
        return 200, _page("Authorize application", form)

    def approve(self, form: dict[str, str]) -> tuple[int, str]:
        """(302, redirect with code and state) for an approval, or (400, error page)."""
        problem = self._request_problem(form) or ("" if form.get("login") else "no login given")
        if problem:
            return 400, _page("Sign-in error", f'<p id="error">{html.escape(problem)}</p>')
        code = secrets.token_hex(10)
        self.grants[code] = Grant(
            form["login"], form["redirect_uri"], self.world.clock() + CODE_TTL_S
        )
        query = urlencode({"code": code, "state": form.get("state", "")})
        separator = "&" if "?" in form["redirect_uri"] else "?"
        return 302, form["redirect_uri"] + separator + query

    def _request_problem(self, query: dict[str, str]) -> str:
        """Why a sign-in request is refused, or ""."""
        if query.get("client_id") != self.client_id:
            return "unknown client_id"
        uri = query.get("redirect_uri", "")
        if not uri.startswith(("http://", "https://")):
            return "redirect_uri must be an http(s) URL"
        if self.callback_urls and not any(uri.startswith(u) for u in self.callback_urls):
            return "The redirect_uri is not associated with this application."
        return ""

    # --- the App's side --------------------------------------------------------------------

    def exchange(self, form: dict[str, str]) -> dict[str, Any]:
        """POST /login/oauth/access_token: a user token, or GitHub's error fields (status 200)."""
        if (form.get("client_id"), form.get("client_secret")) != (
            self.client_id,
            self.client_secret,
        ):
            return _error(
                "incorrect_client_credentials",
                "The client_id and/or client_secret passed are incorrect.",
            )
        grant = self.grants.pop(form.get("code", ""), None)
        if grant is None or grant.expires_at <= self.world.clock():
            return _error("bad_verification_code", "The code passed is incorrect or expired.")
        if form.get("redirect_uri") and form["redirect_uri"] != grant.redirect_uri:
            return _error(
                "redirect_uri_mismatch",
                "The redirect_uri MUST match the registered callback URL for this application.",
            )
        token = self.mint_user_token(grant.login)
        return {
            "access_token": token.value,
            "token_type": "bearer",
            "scope": "",
            "expires_in": USER_TOKEN_TTL_S,
            "refresh_token": "ghr_" + secrets.token_hex(20),
            "refresh_token_expires_in": 15897600,
        }

    def mint_user_token(self, login: str) -> Token:
        """A user access token for `login` ("ghu_…"), valid for eight hours."""
        value = "ghu_" + secrets.token_hex(18)
        token = Token(value, None, self.world.clock() + USER_TOKEN_TTL_S, User(login), "user")
        self.world.tokens[value] = token
        return token

    def revoke(self, authorization: str | None, body: Any) -> Answer:
        """DELETE /applications/{client_id}/token: the client (Basic) revokes a user token."""
        if _basic(authorization) != (self.client_id, self.client_secret):
            raise HttpError(401, "Requires authentication")
        value = body.get("access_token") if isinstance(body, dict) else None
        token = self.world.tokens.get(value) if isinstance(value, str) else None
        if token is None or token.kind != "user":
            raise HttpError(404)
        del self.world.tokens[token.value]
        return Answer(204, None)


def _error(code: str, description: str) -> dict[str, Any]:
    return {"error": code, "error_description": description, "error_uri": OAUTH_ERROR_URI}


def _basic(header: str | None) -> tuple[str, str] | None:
    """(user, password) of a Basic Authorization header."""
    scheme, _, value = (header or "").strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, _, password = base64.b64decode(value.strip(), validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    return user, password


def _page(title: str, body: str) -> str:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}'
        f"</title></head><body><h1>{title}</h1>{body}</body></html>"
    )
