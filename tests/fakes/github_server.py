"""FakeGitHub: a stateful loopback GitHub — the REST API under /api/v3, git smart-HTTP at the root.

PyGithub talks to it as to GitHub Enterprise: `Github(base_url=fake.api_url)` with
`api_url = http://127.0.0.1:PORT/api/v3`; clone URLs are `{git_url}/{owner}/{name}.git`, served by
`git http-backend` from real bare repositories. Every API call needs a live token (an installation
token minted with a JWT signed by `private_key_pem`, or a static token); git needs one too, as
Basic credentials (what `http.extraheader` sends). Tests arrange and inspect state through the
methods below; the endpoints live in github_api.py, the records in github_state.py.
"""

from __future__ import annotations

import base64
import copy
import functools
import gzip
import json
import re
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.git_http import cgi_env, request_body, serve_http_backend
from tests.fakes.github_api import (
    DOCS,
    MESSAGES,
    SECONDARY_RATE_LIMIT,
    Answer,
    Api,
    Call,
    HttpError,
)
from tests.fakes.github_oauth import OAuth
from tests.fakes.github_pages import pull_page
from tests.fakes.github_shapes import Shapes
from tests.fakes.github_state import (
    ROLES,
    CheckRun,
    Comment,
    Failure,
    Installation,
    Issue,
    ManualClock,
    Pull,
    Reaction,
    RecordedRequest,
    Repo,
    Review,
    ReviewComment,
    Token,
    User,
    World,
)
from tests.fakes.repos import git_in

__all__ = ["API_PREFIX", "SECONDARY_RATE_LIMIT", "FakeGitHub", "ManualClock", "RecordedRequest"]

API_PREFIX = "/api/v3"
POLL_INTERVAL_S = 0.02
JWT_MAX_AHEAD_S = 600
JWT_LEEWAY_S = 60
_PULL_PAGE = re.compile(r"^/(?P<owner>[^/]+)/(?P<name>[^/]+)/pull/(?P<n>\d+)$")
_GIT_PATH = re.compile(r"^/(?P<owner>[^/]+)/(?P<name>[^/]+?)\.git(?P<rest>/.*)$")
_APP_TOKEN_PATH = re.compile(r"^/applications/[^/]+/token$")
OAUTH_AUTHORIZE = "/login/oauth/authorize"
OAUTH_ACCESS_TOKEN = "/login/oauth/access_token"


@functools.lru_cache(maxsize=1)
def _test_key() -> rsa.RSAPrivateKey:
    """The app's RSA key pair, generated once per test process."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _parse_auth(header: str | None) -> tuple[str, str] | None:
    """(scheme, secret) of an Authorization header; Basic yields its password."""
    if not header or " " not in header.strip():
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return (scheme.lower(), value.strip())
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return ("basic", "")
    return ("basic", decoded.partition(":")[2])


class FakeGitHub:
    """A stateful fake GitHub on 127.0.0.1: REST API, installation tokens, git over HTTP."""

    def __init__(
        self,
        *,
        app_id: int = 12345,
        installation_id: int = 67890,
        app_slug: str = "cra",
        clock: Callable[[], float] = time.time,
        root: Path | None = None,
    ) -> None:
        self.app_id = app_id
        self.installation_id = installation_id
        self.app_slug = app_slug
        self.clock = clock
        self._own_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix="fake-github-")) if root is None else root
        self._world = World(clock, User(f"{app_slug}[bot]", "Bot"), installation_id)
        self.client_id = f"Iv1.{app_id:012d}"
        self.client_secret = secrets.token_hex(20)
        self._oauth = OAuth(
            self._world,
            client_id=self.client_id,
            client_secret=self.client_secret,
            app_name=app_slug,
        )
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._api: Api | None = None

    # --- lifecycle --------------------------------------------------------------------------

    def start(self) -> FakeGitHub:
        """Listen on a free loopback port and serve in a daemon thread."""
        self._server = _Server(self)
        shapes = Shapes(self.api_url, self.git_url, self.app_id, self.app_slug)
        self._api = Api(self._world, shapes, self.api_url, self.app_id, self.app_slug)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            args=(POLL_INTERVAL_S,),
            name="fake-github",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, join the threads, close the socket, remove the repositories."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server, self._thread = None, None
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def git_url(self) -> str:
        """The web root: clone URLs are `{git_url}/{owner}/{name}.git` (settings.github_url)."""
        if self._server is None:
            raise RuntimeError("FakeGitHub is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def api_url(self) -> str:
        """The REST API root: PyGithub's base_url, settings.github_api_url."""
        return self.git_url + API_PREFIX

    @property
    def private_key_pem(self) -> str:
        """The app's private key (PKCS#8 PEM), for AppTokens / Auth.AppAuth."""
        return (
            _test_key()
            .private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            .decode()
        )

    @property
    def bot_login(self) -> str:
        """The login the app's installation tokens write as."""
        return self._world.bot.login

    # --- arranging state --------------------------------------------------------------------

    def add_repo(
        self, full_name: str, source: Path | None = None, *, default_branch: str = "main"
    ) -> Path:
        """A repository backed by a bare clone of `source` (empty without one); its path."""
        owner, _, name = full_name.partition("/")
        if not owner or not name or "/" in name:
            raise ValueError(f"not owner/name: {full_name!r}")
        path = self.root / owner / f"{name}.git"
        path.parent.mkdir(parents=True, exist_ok=True)
        if source is None:
            git_in(path.parent, "init", "--quiet", "--bare", str(path))
        else:
            git_in(path.parent, "clone", "--quiet", "--bare", str(source), str(path))
        git_in(path, "symbolic-ref", "HEAD", f"refs/heads/{default_branch}")
        with self._world.lock:
            repos = self._world.repos
            repos[full_name] = Repo(full_name, 500 + len(repos), path, default_branch)
        return path

    def set_private(self, repo: str, private: bool = True) -> None:
        """Make a repository private (only its collaborators read it) or public."""
        with self._world.lock:
            self._world.repo(repo).private = private

    def user_token(self, login: str) -> str:
        """A user access token for `login`, as the App's sign-in flow would get it."""
        with self._world.lock:
            return self._oauth.mint_user_token(login).value

    def register_callback(self, url: str) -> None:
        """A callback URL of the App: sign-in redirects must start with one once any is set."""
        with self._world.lock:
            self._oauth.callback_urls.append(url)

    def add_installation(
        self, installation_id: int, repositories: tuple[str, ...] | None = None
    ) -> None:
        """Another installation of the app, on some repositories (None: all)."""
        with self._world.lock:
            repos = None if repositories is None else frozenset(repositories)
            self._world.installations[installation_id] = Installation(installation_id, repos)

    def remove_installation(self, installation_id: int) -> None:
        """Uninstall the app from an account: the installation and its tokens are gone."""
        with self._world.lock:
            del self._world.installations[installation_id]
            self._world.revoke_tokens(installation_id)

    def suspend_installation(self, installation_id: int, suspended: bool = True) -> None:
        """Suspend an installation (its tokens revoked, no new one minted), or lift that."""
        with self._world.lock:
            self._world.installations[installation_id].suspended = suspended
            if suspended:
                self._world.revoke_tokens(installation_id)

    def add_static_token(self, token: str, *, login: str = "github-actions[bot]") -> None:
        """A token that never expires (Actions' GITHUB_TOKEN), writing as `login`."""
        with self._world.lock:
            self._world.tokens[token] = Token(token, None, None, User(login, "Bot"))

    def issue_token(self, installation_id: int | None = None) -> str:
        """A fresh installation token without the JWT dance (for tests of git and the API)."""
        with self._world.lock:
            return self._world.mint(installation_id or self.installation_id).value

    def set_permission(self, repo: str, user: str, role: str) -> None:
        """Make `user` a collaborator with `role` (admin/maintain/write/triage/read/none)."""
        if role not in (*ROLES, "none"):
            raise ValueError(f"unknown role {role!r}")
        with self._world.lock:
            self._world.repo(repo).collaborators[user] = role

    def add_issue(
        self,
        repo: str,
        *,
        number: int | None = None,
        title: str = "An issue",
        body: str | None = "",
        user: str = "octocat",
        labels: tuple[str, ...] = (),
        state: str = "open",
        locked: bool = False,
    ) -> int:
        """An issue; its number."""
        with self._world.lock:
            r = self._world.repo(repo)
            number, now = r.take_number(number), self.clock()
            r.issues[number] = Issue(
                number,
                title,
                body,
                User(user),
                list(labels),
                state,
                locked,
                now,
                now,
                now if state == "closed" else None,
            )
            return number

    def add_pull(
        self,
        repo: str,
        *,
        head: str,
        base: str | None = None,
        title: str = "A change",
        body: str | None = "",
        user: str = "octocat",
        draft: bool = False,
        head_repo: str | None = None,
        head_sha: str | None = None,
        state: str = "open",
        number: int | None = None,
    ) -> int:
        """A pull request from `head` (a branch of `head_repo`, default this repo); its number.

        The head SHA follows the branch when it exists here; a fork's is `head_sha`.
        """
        with self._world.lock:
            r = self._world.repo(repo)
            number, now = r.take_number(number), self.clock()
            r.issues[number] = Pull(
                number,
                title,
                body,
                User(user),
                [],
                state,
                False,
                now,
                now,
                now if state == "closed" else None,
                head_ref=head,
                base_ref=base or r.default_branch,
                head_repo=head_repo or repo,
                draft=draft,
                head_sha=head_sha,
            )
            return number

    def add_comment(self, repo: str, issue_number: int, body: str, *, user: str = "octocat") -> int:
        """A person's comment on an issue or pull request; its id."""
        with self._world.lock:
            r = self._world.repo(repo)
            if issue_number not in r.issues:
                raise KeyError(f"no #{issue_number} in {repo}")
            return self._started_api.comment(r, issue_number, body, User(user)).id

    def add_review_comment(
        self,
        repo: str,
        pull_number: int,
        body: str,
        *,
        user: str = "octocat",
        path: str = "README.md",
        line: int = 1,
    ) -> int:
        """A review comment on a pull request's diff; its id."""
        with self._world.lock:
            r = self._world.repo(repo)
            cid = self._world.next_id()
            r.review_comments[cid] = ReviewComment(
                cid, pull_number, body, User(user), path, line, self.clock()
            )
            return cid

    def add_review(
        self,
        repo: str,
        pull_number: int,
        body: str | None,
        *,
        user: str = "octocat",
        state: str = "COMMENTED",
    ) -> int:
        """A submitted review of a pull request, with its summary body; its id. A login
        ending in "[bot]" is an app's bot, as on GitHub."""
        author = User(user, "Bot" if user.endswith("[bot]") else "User")
        with self._world.lock:
            r = self._world.repo(repo)
            rid = self._world.next_id()
            r.reviews[rid] = Review(rid, pull_number, body, author, state, self.clock())
            return rid

    def fail_next(
        self,
        method: str,
        path_regex: str,
        status: int,
        *,
        retry_after: str | float | None = None,
        times: int = 1,
        body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Answer the next `times` requests matching method and path (re.search) with `status`.

        API paths are matched without the /api/v3 prefix, git paths as sent. A 403 or 429
        without a `body` is a secondary rate limit. `retry_after` becomes the Retry-After header.
        """
        message = SECONDARY_RATE_LIMIT if status in (403, 429) else MESSAGES.get(status)
        with self._world.lock:
            self._world.failures.append(
                Failure(
                    method.upper(),
                    re.compile(path_regex),
                    status,
                    None if retry_after is None else str(retry_after),
                    times,
                    body or {"message": message or "Server Error", "documentation_url": DOCS},
                    dict(headers or {}),
                )
            )

    # --- inspecting state -------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far (API and git), in order."""
        with self._world.lock:
            return list(self._world.requests)

    def issue(self, repo: str, number: int) -> Issue:
        """A copy of an issue or pull request."""
        with self._world.lock:
            return copy.deepcopy(self._world.repo(repo).issues[number])

    def pull(self, repo: str, number: int) -> Pull:
        """A copy of a pull request."""
        found = self.issue(repo, number)
        if not isinstance(found, Pull):
            raise KeyError(f"#{number} of {repo} is not a pull request")
        return found

    def pulls(self, repo: str) -> list[Pull]:
        """Copies of every pull request, by number."""
        with self._world.lock:
            found = [i for i in self._world.repo(repo).issues.values() if isinstance(i, Pull)]
            return copy.deepcopy(sorted(found, key=lambda p: p.number))

    def comments(self, repo: str, issue_number: int | None = None) -> list[Comment]:
        """Copies of the issue comments (of one issue or all), oldest first."""
        with self._world.lock:
            found = self._world.repo(repo).comments.values()
            return copy.deepcopy([c for c in found if issue_number in (None, c.issue_number)])

    def reactions(
        self, repo: str, *, issue_number: int | None = None, comment_id: int | None = None
    ) -> list[Reaction]:
        """Copies of the reactions on an issue (not its comments) or on one comment."""
        with self._world.lock:
            return copy.deepcopy(
                [
                    r
                    for r in self._world.repo(repo).reactions
                    if (r.issue_number, r.comment_id) == (issue_number, comment_id)
                ]
            )

    def check_runs(self, repo: str) -> list[CheckRun]:
        """Copies of the check runs, oldest first."""
        with self._world.lock:
            return copy.deepcopy(list(self._world.repo(repo).check_runs.values()))

    def repo_path(self, repo: str) -> Path:
        """The bare repository behind `repo`."""
        with self._world.lock:
            return self._world.repo(repo).path

    def branch_sha(self, repo: str, branch: str) -> str | None:
        """The commit `branch` points at, or None."""
        with self._world.lock:
            found = self._world.repo(repo)
        return found.branch_sha(branch)

    def commits(self, repo: str, branch: str) -> list[tuple[str, str]]:
        """(sha, subject) of the commits on `branch`, newest first."""
        out = git_in(self.repo_path(repo), "log", "--format=%H %s", f"refs/heads/{branch}", "--")
        return [
            (sha, subject) for sha, _, subject in (line.partition(" ") for line in out.splitlines())
        ]

    def read_file(self, repo: str, ref: str, path: str) -> str:
        """The content of `path` at `ref`."""
        return git_in(self.repo_path(repo), "show", f"{ref}:{path}")

    # --- HTTP -------------------------------------------------------------------------------

    @property
    def _started_api(self) -> Api:
        """The endpoints (they need the server's URLs)."""
        if self._api is None:
            raise RuntimeError("FakeGitHub is not started")
        return self._api

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        """Answer one request: the API, git smart-HTTP, or 404."""
        if handler.headers.get("Expect", "").lower() == "100-continue":
            handler.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        split = urlsplit(handler.path)
        if split.path in (OAUTH_AUTHORIZE, OAUTH_ACCESS_TOKEN):
            self._handle_oauth(handler, split.path, dict(parse_qsl(split.query)))
        elif split.path == API_PREFIX or split.path.startswith(API_PREFIX + "/"):
            path = split.path[len(API_PREFIX) :] or "/"
            self._handle_api(handler, path, dict(parse_qsl(split.query)))
        elif match := _GIT_PATH.match(split.path):
            self._handle_git(handler, match, split.query)
        elif (match := _PULL_PAGE.match(split.path)) and handler.command == "GET":
            self._handle_pull_page(handler, match)
        else:
            _send_json(handler, 404, {"message": "Not Found", "documentation_url": DOCS})

    def _handle_api(
        self, handler: BaseHTTPRequestHandler, path: str, query: dict[str, str]
    ) -> None:
        """Record, maybe fail, authenticate and route an API request."""
        raw = b"".join(request_body(handler))
        if handler.headers.get("Content-Encoding", "").lower() == "gzip":
            raw = gzip.decompress(raw)
        body = _json_or_none(raw)
        auth = _parse_auth(handler.headers.get("Authorization"))
        self._record("api", handler, path, query, body, auth)
        try:
            answer = self._failure(handler.command, path) or self._route(
                handler.command, path, query, body, auth, handler.headers.get("Authorization")
            )
        except HttpError as err:
            answer = Answer(err.status, err.body(), tuple(err.headers.items()))
        _send_json(handler, answer.status, answer.payload, self._rate_headers(answer.headers))

    def _handle_oauth(
        self, handler: BaseHTTPRequestHandler, path: str, query: dict[str, str]
    ) -> None:
        """The web side of sign-in: the authorize page and its form, the code exchange."""
        raw = b"".join(request_body(handler))
        form = {**query, **_form_or_json(raw, handler.headers.get("Content-Type", ""))}
        self._record("oauth", handler, path, query, None, None)
        with self._world.lock:
            if path == OAUTH_ACCESS_TOKEN and handler.command == "POST":
                answer = self._oauth.exchange(form)
            elif path == OAUTH_AUTHORIZE and handler.command in ("GET", "POST"):
                status, text = (
                    self._oauth.authorize_page(query)
                    if handler.command == "GET"
                    else self._oauth.approve(form)
                )
                if status == 302:
                    _send(handler, 302, b"", "text/html", (("Location", text),))
                else:
                    _send(handler, status, text.encode(), "text/html; charset=utf-8", ())
                return
            else:
                answer = {"message": "Not Found"}
        if "json" in handler.headers.get("Accept", ""):
            _send_json(handler, 200, answer)
        else:  # GitHub's default answer to the exchange is form-encoded
            _send(handler, 200, urlencode(answer).encode(), "application/x-www-form-urlencoded", ())

    def _route(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        body: Any,
        auth: tuple[str, str] | None,
        authorization: str | None = None,
    ) -> Answer:
        """Find the route, authenticate the caller, run the handler under the lock."""
        if method == "DELETE" and _APP_TOKEN_PATH.match(path):
            with self._world.lock:
                return self._oauth.revoke(authorization, body)
        found = self._started_api.match(method, path)
        if found is None:
            raise HttpError(404)
        as_app, run, params = found
        token = None
        if as_app:
            self._authenticate_app(auth)
        else:
            token = self._authenticate(auth)
        with self._world.lock:
            return run(Call(method, path, params, query, body, token))

    def _handle_pull_page(self, handler: BaseHTTPRequestHandler, match: re.Match[str]) -> None:
        """A pull request's web page (its html_url), for people following a demo's link."""
        with self._world.lock:
            repo = self._world.repos.get(f"{unquote(match['owner'])}/{unquote(match['name'])}")
            pull = repo.issues.get(int(match["n"])) if repo is not None else None
            page = (
                pull_page(repo, pull, self._world.head_sha(repo, pull))
                if repo is not None and isinstance(pull, Pull)
                else None
            )
        if page is None:
            _send_text(handler, 404, "Not Found")
        else:
            _send(handler, 200, page.encode(), "text/html; charset=utf-8", ())

    def _handle_git(
        self, handler: BaseHTTPRequestHandler, match: re.Match[str], query: str
    ) -> None:
        """Serve git smart-HTTP for a repository, demanding a live token as Basic credentials."""
        auth = _parse_auth(handler.headers.get("Authorization"))
        path = handler.path.split("?", 1)[0]
        self._record("git", handler, path, dict(parse_qsl(query)), None, auth)
        failure = self._failure(handler.command, path)
        if failure is not None:
            _send_json(handler, failure.status, failure.payload, failure.headers)
            return
        if auth is None:
            _send_text(
                handler, 401, "Authentication required", {"WWW-Authenticate": 'Basic realm="fake"'}
            )
            return
        with self._world.lock:
            token = self._world.live_token(auth[1]) if auth[0] == "basic" else None
            repo = self._world.repos.get(f"{unquote(match['owner'])}/{unquote(match['name'])}")
            visible = token is not None and repo is not None and self._world.can_see(token, repo)
        if token is None:
            _send_text(handler, 403, "Invalid username or token.")
        elif not visible or repo is None:
            _send_text(handler, 404, "Repository not found.")
        else:
            path_info = f"/{repo.path.parent.name}/{repo.path.name}{match['rest']}"
            serve_http_backend(
                handler,
                cgi_env(
                    handler,
                    project_root=self.root,
                    path_info=path_info,
                    query=query,
                    remote_user=token.actor.login,
                ),
            )

    def _record(
        self,
        kind: str,
        handler: BaseHTTPRequestHandler,
        path: str,
        query: dict[str, str],
        body: Any,
        auth: tuple[str, str] | None,
    ) -> None:
        """Remember a request (its headers without Authorization)."""
        headers = {k.lower(): v for k, v in handler.headers.items() if k.lower() != "authorization"}
        with self._world.lock:
            self._world.requests.append(
                RecordedRequest(
                    kind, handler.command, path, query, headers, body, auth[1] if auth else None
                )
            )

    def _failure(self, method: str, path: str) -> Answer | None:
        """The injected failure for this request, consuming one of its times."""
        with self._world.lock:
            for failure in self._world.failures:
                if failure.method == method and failure.pattern.search(path):
                    failure.times -= 1
                    if failure.times <= 0:
                        self._world.failures.remove(failure)
                    extra = dict(failure.headers)
                    if failure.retry_after is not None:
                        extra["Retry-After"] = failure.retry_after
                    return Answer(failure.status, failure.body, tuple(extra.items()))
        return None

    def _rate_headers(self, extra: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        """GitHub's rate limit headers (overridable by an injected failure's headers)."""
        base = {
            "X-RateLimit-Limit": "5000",
            "X-RateLimit-Remaining": "4999",
            "X-RateLimit-Used": "1",
            "X-RateLimit-Resource": "core",
            "X-RateLimit-Reset": str(int(self.clock()) + 3600),
            "X-GitHub-Media-Type": "github.v3; format=json",
        }
        base.update(dict(extra))
        return tuple(base.items())

    def _authenticate(self, auth: tuple[str, str] | None) -> Token:
        """The live token of an API call, else 401."""
        if auth is None:
            raise HttpError(401, "Requires authentication")
        with self._world.lock:
            token = self._world.live_token(auth[1])
        if token is None:
            raise HttpError(401)
        return token

    def _authenticate_app(self, auth: tuple[str, str] | None) -> None:
        """Accept only a valid app JWT (RS256, signed by the app key, at most 10 minutes)."""
        if auth is None or auth[0] != "bearer":
            raise HttpError(401, "A JSON web token could not be decoded")
        try:
            claims = jwt.decode(
                auth[1],
                _test_key().public_key(),
                algorithms=["RS256"],
                options={
                    "verify_exp": False,
                    "verify_iat": False,
                    "verify_nbf": False,
                    "require": ["iat", "exp", "iss"],
                },
            )
        except jwt.PyJWTError as exc:
            raise HttpError(401, "A JSON web token could not be decoded") from exc
        now = self.clock()
        if str(claims["iss"]) != str(self.app_id):
            raise HttpError(401, "'Issuer' claim ('iss') must be an Integer")
        if float(claims["iat"]) > now + JWT_LEEWAY_S:
            raise HttpError(
                401,
                "'Issued at' claim ('iat') must be an Integer representing "
                "the time that the assertion was issued",
            )
        if float(claims["exp"]) <= now:
            raise HttpError(
                401,
                "'Expiration time' claim ('exp') must be a numeric value "
                "representing the future time at which the assertion expires",
            )
        if float(claims["exp"]) > now + JWT_MAX_AHEAD_S + JWT_LEEWAY_S:
            raise HttpError(401, "'Expiration time' claim ('exp') is too far in the future")


def _form_or_json(raw: bytes, content_type: str) -> dict[str, str]:
    """A form-encoded or JSON request body as a mapping of strings."""
    if "json" in content_type:
        data = _json_or_none(raw)
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
    return dict(parse_qsl(raw.decode("utf-8", "replace")))


def _json_or_none(raw: bytes) -> Any:
    """A request body parsed as JSON, or None."""
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def _send_json(
    handler: BaseHTTPRequestHandler,
    status: int,
    payload: Any,
    headers: tuple[tuple[str, str], ...] = (),
) -> None:
    """Send a JSON answer (no body for 204)."""
    data = b"" if status == 204 else json.dumps(payload).encode()
    _send(handler, status, data, "application/json; charset=utf-8", headers)


def _send_text(
    handler: BaseHTTPRequestHandler, status: int, text: str, headers: dict[str, str] | None = None
) -> None:
    """Send a plain-text answer (git clients print it)."""
    _send(handler, status, text.encode(), "text/plain", tuple((headers or {}).items()))


def _send(
    handler: BaseHTTPRequestHandler,
    status: int,
    data: bytes,
    content_type: str,
    headers: tuple[tuple[str, str], ...],
) -> None:
    """Send an answer; a client that already hung up is not an error."""
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


class _Handler(BaseHTTPRequestHandler):
    """Hands every request to the owning FakeGitHub."""

    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request stderr log."""

    def do_GET(self) -> None:
        self.server.owner.handle(self)

    do_POST = do_PATCH = do_PUT = do_DELETE = do_GET


class _Server(ThreadingHTTPServer):
    """The HTTP server, pointing back at its FakeGitHub; handler threads are joined on close."""

    daemon_threads = False
    block_on_close = True

    def __init__(self, owner: FakeGitHub) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.owner = owner
