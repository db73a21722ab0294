"""Signing in to the run pages with GitHub, and the gate in front of them.

Sign-in is the App's own user authorisation (GitHub's web flow with the App's client id and
secret). The session lives in a cookie that Flask signs; the person's user access token inside
it is encrypted as well (it can act for them on GitHub within the App's permissions), and it is
revoked at GitHub on sign-out. With CRA_RUN_PAGES=public none of this applies.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit

import httpx
from cryptography.fernet import Fernet, InvalidToken
from flask import (
    Blueprint,
    Flask,
    Request,
    current_app,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask.sessions import SecureCookieSession, SecureCookieSessionInterface
from flask.typing import ResponseReturnValue
from pydantic import BaseModel, SecretStr

from bot.access.oauth import AccessCache, GitHubUsers, OAuthClient, SignInError, TokenRevoked
from bot.settings import BotSettings

log = logging.getLogger(__name__)

EXTENSION = "cra.signin"
COOKIE_NAME = "cra_session"
SESSION_LIFETIME = timedelta(hours=8)  # as long as GitHub's user access tokens live
DEFAULT_NEXT = "/runs"

blueprint = Blueprint("signin", __name__, template_folder="../templates")


class Viewer(BaseModel):
    """The person signed in to this browser, with their GitHub token."""

    login: str
    token: SecretStr


@dataclass
class Gate:
    """What the gate needs: the mode, GitHub as people see it, answers cached, the cipher."""

    public: bool
    users: GitHubUsers | None
    cache: AccessCache
    cipher: Fernet | None
    callback_url: str | None


class SessionCookies(SecureCookieSessionInterface):
    """Flask's signed cookie session, `Secure` whenever the public URL or the request is HTTPS;
    none at all on the paths machines call (webhooks, health checks, metrics)."""

    def __init__(self, sessionless: Iterable[str] = ()) -> None:
        self.sessionless = frozenset(sessionless)

    def open_session(self, app: Flask, request: Request) -> SecureCookieSession | None:
        """The request's session; a null one on a sessionless path, where building the signer
        for a cookie no machine sends cost more per delivery than checking its signature."""
        if request.path in self.sessionless:
            return self.make_null_session(app)
        return super().open_session(app, request)

    def get_cookie_secure(self, app: Flask) -> bool:
        """Secure behind HTTPS: CRA_PUBLIC_URL says https, or this request came over it."""
        return bool(app.config["SESSION_COOKIE_SECURE"]) or request.is_secure


def session_key(settings: BotSettings) -> bytes | None:
    """The key of the sign-in cookies: CRA_SESSION_SECRET, else one derived from the client
    secret; None when neither is set."""
    for secret in (settings.session_secret, settings.client_secret):
        if secret is not None and secret.get_secret_value():
            return _derive(secret.get_secret_value().encode(), b"cra session")
    return None


def _derive(key: bytes, purpose: bytes) -> bytes:
    """A key for one purpose from a secret (HMAC-SHA256), so that no two uses share a key."""
    return hmac.new(key, purpose, hashlib.sha256).digest()


def install(
    app: Flask,
    settings: BotSettings,
    users: GitHubUsers | None = None,
    *,
    sessionless: Iterable[str] = (),
) -> None:
    """Cookie settings, the /auth views and the gate's state for `app`; the `sessionless`
    paths get no session."""
    key = session_key(settings)
    if key is not None:
        app.secret_key = _derive(key, b"cookie signature")
    app.session_interface = SessionCookies(sessionless)
    app.config.update(
        SESSION_COOKIE_NAME=COOKIE_NAME,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        PERMANENT_SESSION_LIFETIME=SESSION_LIFETIME,
        SESSION_COOKIE_SECURE=(settings.public_url or "").startswith("https://"),
    )
    private = settings.run_pages == "private"
    if users is None and private and settings.client_id and settings.client_secret:
        users = GitHubUsers(
            web_url=settings.github_url,
            api_url=settings.github_api_url,
            client=OAuthClient(settings.client_id, settings.client_secret.get_secret_value()),
            http=httpx.Client(timeout=10.0),
        )
    cipher = None if key is None else Fernet(base64.urlsafe_b64encode(_derive(key, b"token")))
    callback = f"{settings.public_url.rstrip('/')}/auth/callback" if settings.public_url else None
    app.extensions[EXTENSION] = Gate(
        public=not private,
        users=users if key else None,
        cache=AccessCache(),
        cipher=cipher,
        callback_url=callback,
    )
    app.register_blueprint(blueprint)


def _gate() -> Gate:
    gate: Gate = current_app.extensions[EXTENSION]
    return gate


# --- who is signed in, and what they may read ------------------------------------------------


def current_viewer() -> Viewer | None:
    """The person signed in to this request's session, or None."""
    gate = _gate()
    login, sealed, expires = session.get("login"), session.get("token"), session.get("expires")
    if gate.users is None or gate.cipher is None:  # sign-in is not (or no longer) set up
        return None
    if not isinstance(login, str) or not isinstance(sealed, str):
        return None
    if isinstance(expires, (int, float)) and expires <= time.time():
        return None
    try:
        token = gate.cipher.decrypt(sealed.encode()).decode()
    except InvalidToken:
        return None
    return Viewer(login=login, token=SecretStr(token))


def forget_repositories(owner: str | None, repositories: Iterable[str] = ()) -> None:
    """Forget what GitHub said of people's access to an account's repositories and to those
    named: the App's installation on them was removed, suspended or narrowed."""
    _gate().cache.forget_repositories(owner, repositories)


def may_read(viewer: Viewer, repository: str) -> bool:
    """Whether `viewer` can read `repository`, asked of GitHub at most once a minute."""
    gate = _gate()
    known = gate.cache.get(viewer.login, repository)
    if known is not None:
        return known
    assert gate.users is not None, "a viewer exists only when sign-in is set up"
    readable = gate.users.can_read(viewer.token.get_secret_value(), repository)
    gate.cache.put(viewer.login, repository, readable)
    return readable


def run_gate(repository: str | None) -> ResponseReturnValue | None:
    """None when this request may see a run of `repository`; else what to answer instead: the
    sign-in page for nobody signed in, 404 for a missing run or one they cannot read."""
    if _gate().public:
        return None
    viewer = current_viewer()
    if viewer is None:
        return sign_in_page()
    if repository is None or not may_read(viewer, repository):
        return not_found()
    return None


def list_gate() -> ResponseReturnValue | None:
    """None when this request may list runs (signed in, or public pages); else the sign-in."""
    return None if _gate().public or current_viewer() is not None else sign_in_page()


def readable(repositories: Iterable[str]) -> set[str]:
    """Those of `repositories` the signed-in person can read (all of them on public pages)."""
    wanted = set(repositories)
    viewer = None if _gate().public else current_viewer()
    if viewer is None:
        return wanted if _gate().public else set()
    return {name for name in wanted if may_read(viewer, name)}


# --- answers ---------------------------------------------------------------------------------


def sign_in_page(message: str | None = None, status: int = 401) -> ResponseReturnValue:
    """The page asking to sign in (JSON for ?format=json), never any run's content."""
    gate = _gate()
    ready = gate.users is not None
    own = request.method != "GET" or request.path.startswith("/auth/")
    target = _local(None if own else request.full_path)
    if request.args.get("format") == "json":
        return {
            "error": message or "sign in with GitHub to see cra's runs",
            "sign_in": url_for("signin.login", next=target) if ready else None,
        }, status
    page = render_template(
        "signin.html", message=message, ready=ready, login_url=url_for("signin.login", next=target)
    )
    return page, status, {"Cache-Control": "no-store"}


def not_found() -> ResponseReturnValue:
    """The same 404 for a run that does not exist and one this person cannot read."""
    if request.args.get("format") == "json":
        return {"error": "no such run"}, 404
    return render_template("not_found.html"), 404, {"Cache-Control": "no-store"}


@blueprint.app_errorhandler(TokenRevoked)
def _revoked(_: TokenRevoked) -> ResponseReturnValue:
    """GitHub no longer accepts the person's token: sign them out and ask them to sign in."""
    session.clear()
    return sign_in_page("Your GitHub sign-in has ended; sign in again.")


@blueprint.app_errorhandler(SignInError)
def _unavailable(exc: SignInError) -> ResponseReturnValue:
    """GitHub could not say who may read what: show nothing rather than guess."""
    log.warning("access check failed: %s", exc)
    return sign_in_page("cra could not check your access with GitHub just now; try again.", 503)


@blueprint.app_context_processor
def _viewer_login() -> dict[str, str | None]:
    """`cra_viewer`: the signed-in login for the page header."""
    if EXTENSION not in current_app.extensions or _gate().public:
        return {"cra_viewer": None}
    viewer = current_viewer()
    return {"cra_viewer": viewer.login if viewer else None}


def _local(target: str | None) -> str:
    """`target` if it is a path on this server, else the run list (no open redirects): no
    scheme, no host, no backslash, and no whitespace or control character anywhere — browsers
    drop a tab or a newline from a URL, so `/\t/evil.example` would go to //evil.example."""
    if (
        not target
        or not target.startswith("/")
        or target.startswith("//")
        or "\\" in target
        or any(c.isspace() or not c.isprintable() for c in target)
    ):
        return DEFAULT_NEXT
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return DEFAULT_NEXT
    return target.rstrip("?") or DEFAULT_NEXT


# --- the /auth views -------------------------------------------------------------------------


def _callback_url() -> str:
    return _gate().callback_url or url_for("signin.callback", _external=True)


@blueprint.get("/auth/login")
def login() -> ResponseReturnValue:
    """Send the browser to GitHub to approve the sign-in, remembering where it was going."""
    gate = _gate()
    if gate.public:
        return redirect(_local(request.args.get("next")))
    if gate.users is None:
        return sign_in_page(status=503)
    state = secrets.token_urlsafe(24)
    session.clear()
    session["oauth_state"], session["next"] = state, _local(request.args.get("next"))
    return redirect(gate.users.authorize_url(_callback_url(), state))


@blueprint.get("/auth/callback")
def callback() -> ResponseReturnValue:
    """GitHub's answer: check the state, trade the code, start the session, go on."""
    gate = _gate()
    if gate.users is None or gate.cipher is None:
        return sign_in_page(status=503)
    expected, target = session.pop("oauth_state", None), session.pop("next", DEFAULT_NEXT)
    state, code = request.args.get("state", ""), request.args.get("code", "")
    if request.args.get("error"):
        return sign_in_page("GitHub did not sign you in (the request was declined).")
    if not isinstance(expected, str) or not code or not hmac.compare_digest(state, expected):
        return sign_in_page("This sign-in did not start here or has expired; sign in again.", 400)
    token = gate.users.exchange(code, _callback_url())
    login = gate.users.login(token.value.get_secret_value())
    lifetime = time.time() + SESSION_LIFETIME.total_seconds()
    session.clear()
    session.permanent = True
    session["login"] = login
    session["token"] = gate.cipher.encrypt(token.value.get_secret_value().encode()).decode()
    session["expires"] = min(lifetime, token.expires_at or lifetime)
    return redirect(_local(target))


@blueprint.post("/auth/logout")
def logout() -> ResponseReturnValue:
    """End the session, revoke the person's token at GitHub, go back to the page (whose
    sign-in page then offers to sign in again)."""
    gate, viewer = _gate(), current_viewer()
    session.clear()
    if viewer is not None and gate.users is not None:
        gate.cache.forget(viewer.login)
        try:
            gate.users.revoke(viewer.token.get_secret_value())
        except SignInError as exc:  # the cookie is gone either way
            log.warning("could not revoke the token of %s at sign-out: %s", viewer.login, exc)
    return redirect(_local(request.form.get("next")))
