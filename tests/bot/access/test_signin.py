"""Signing in to the run pages with the App's user authorisation, against the fake GitHub's real
OAuth endpoints: who sees what, the session cookie's flags, sign-out and revocation."""

from __future__ import annotations

import base64
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from bot.intake.triggers import Trigger
from bot.settings import BotSettings
from bot.store.runs import BotStore, Run
from bot.web.app import create_app
from tests.bot.web.test_app import RecordingQueue
from tests.fakes.github_server import FakeGitHub

PRIVATE = "octo/private"
PUBLIC = "octo/public"
HIDDEN = "octo/hidden"
OWNER, STRANGER = "octocat", "mallory"
SECRET_TASK = "the private task of issue 7"


class Services:
    """A real SQLite store and a queue that keeps ids."""

    def __init__(self, store: BotStore) -> None:
        self.store = store
        self.queue = RecordingQueue()

    def health(self) -> dict[str, str]:
        return {"database": "ok", "queue": "ok"}


@dataclass
class Site:
    fake: FakeGitHub
    settings: BotSettings
    store: BotStore
    runs: dict[str, Run]

    def client(self, **overrides: Any) -> FlaskClient:
        settings = self.settings.model_copy(update=overrides)
        return create_app(settings, Services(self.store)).test_client()


def _trigger(repository: str, number: int) -> Trigger:
    return Trigger(
        command="solve",
        repository=repository,
        issue_number=number,
        actor=OWNER,
        instructions=SECRET_TASK,
        source="comment",
        installation_id=1,
        delivery_id=f"d-{repository}-{number}",
    )


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    with FakeGitHub() as fake:
        for name in (PRIVATE, PUBLIC, HIDDEN):
            fake.add_repo(name)
        fake.set_private(PRIVATE)
        fake.set_private(HIDDEN)
        fake.set_permission(PRIVATE, OWNER, "read")
        settings = BotSettings(
            webhook_secret="s",
            data_dir=tmp_path,
            database_url=f"sqlite:///{tmp_path}/cra.db",
            github_url=fake.git_url,
            github_api_url=fake.api_url,
            client_id=fake.client_id,
            client_secret=fake.client_secret,
            public_url="http://cra.test",
        )
        with BotStore.open(settings.database_url) as store:
            runs = {name: store.create_run(_trigger(name, 7)) for name in (PRIVATE, PUBLIC, HIDDEN)}
            yield Site(fake, settings, store, runs)


def sign_in(
    site: Site, client: FlaskClient, login: str, *, next_path: str = "/runs"
) -> TestResponse:
    """The whole flow: /auth/login → the fake's authorize form → /auth/callback."""
    start = client.get("/auth/login", query_string={"next": next_path})
    assert start.status_code == 302, start.get_data(as_text=True)
    authorize = urlsplit(start.headers["Location"])
    query = {k: v[0] for k, v in parse_qs(authorize.query).items()}
    approved = httpx.post(f"{site.fake.git_url}{authorize.path}", data={**query, "login": login})
    assert approved.status_code == 302, approved.text
    back = urlsplit(approved.headers["Location"])
    assert f"http://cra.test{back.path}" == "http://cra.test/auth/callback"
    return client.get(back.path, query_string=back.query)


def text(response: TestResponse) -> str:
    return response.get_data(as_text=True)


# --- signed out ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/runs", "/runs/1", "/runs/999", "/runs/1?format=file"])
def test_signed_out_gets_the_sign_in_page_and_no_content(site: Site, path: str) -> None:
    response = site.client().get(path)
    assert response.status_code == 401
    assert 'id="sign-in"' in text(response)
    assert PRIVATE not in text(response) and SECRET_TASK not in text(response)
    assert response.headers["Cache-Control"] == "no-store"


def test_signed_out_json_is_401_naming_the_sign_in(site: Site) -> None:
    response = site.client().get(f"/runs/{site.runs[PRIVATE].id}?format=json")
    assert response.status_code == 401
    assert response.get_json()["sign_in"].startswith("/auth/login")
    assert SECRET_TASK not in text(response)


def test_sign_in_starts_at_github_with_the_app_client_and_a_state(site: Site) -> None:
    response = site.client().get("/auth/login?next=/runs/3")
    target = urlsplit(response.headers["Location"])
    query = parse_qs(target.query)
    assert f"{target.scheme}://{target.netloc}{target.path}" == (
        f"{site.fake.git_url}/login/oauth/authorize"
    )
    assert query["client_id"] == [site.fake.client_id]
    assert query["redirect_uri"] == ["http://cra.test/auth/callback"]
    assert len(query["state"][0]) >= 32


def test_without_client_credentials_the_pages_say_sign_in_is_not_set_up(site: Site) -> None:
    client = site.client(client_id=None, client_secret=None)
    response = client.get(f"/runs/{site.runs[PUBLIC].id}")
    assert response.status_code == 401 and 'id="not-set-up"' in text(response)
    assert SECRET_TASK not in text(response)
    assert client.get("/auth/login").status_code == 503
    assert client.get("/auth/callback?code=c&state=s").status_code == 503


def test_public_run_pages_need_no_sign_in(site: Site) -> None:
    client = site.client(run_pages="public")
    response = client.get(f"/runs/{site.runs[HIDDEN].id}")
    assert response.status_code == 200 and SECRET_TASK in text(response)
    assert 'id="sign-out"' not in text(response)


# --- signed in -------------------------------------------------------------------------------


def test_a_reader_of_the_repository_sees_its_run(site: Site) -> None:
    client = site.client()
    run = site.runs[PRIVATE]
    landed = sign_in(site, client, OWNER, next_path=f"/runs/{run.id}")
    assert landed.status_code == 302 and landed.headers["Location"] == f"/runs/{run.id}"
    page = client.get(f"/runs/{run.id}")
    assert page.status_code == 200 and SECRET_TASK in text(page)
    assert f'<span id="viewer">{OWNER}</span>' in text(page)


def test_a_readers_copy_of_a_run_page_to_keep_has_no_sign_out_form(site: Site) -> None:
    client = site.client()
    run = site.runs[PRIVATE]
    sign_in(site, client, OWNER)
    kept = client.get(f"/runs/{run.id}?format=file")
    assert kept.status_code == 200 and SECRET_TASK in text(kept)
    assert 'id="sign-out"' not in text(kept) and 'id="viewer"' not in text(kept)


def test_anyone_signed_in_reads_runs_of_a_public_repository(site: Site) -> None:
    client = site.client()
    sign_in(site, client, STRANGER)
    assert client.get(f"/runs/{site.runs[PUBLIC].id}").status_code == 200


def test_someone_who_cannot_read_the_repository_gets_the_same_404_as_a_missing_run(
    site: Site,
) -> None:
    client = site.client()
    sign_in(site, client, STRANGER)
    run_id = site.runs[PRIVATE].id
    hidden = client.get(f"/runs/{run_id}")
    missing = client.get("/runs/999")
    assert hidden.status_code == missing.status_code == 404
    assert text(hidden).replace(f"/runs/{run_id}?", "") == text(missing).replace("/runs/999?", "")
    assert SECRET_TASK not in text(hidden) and PRIVATE not in text(hidden)


def test_the_list_shows_only_runs_of_readable_repositories(site: Site) -> None:
    client = site.client()
    sign_in(site, client, OWNER)
    listed = {r["repository"] for r in client.get("/runs?format=json").get_json()["runs"]}
    assert listed == {PRIVATE, PUBLIC}


def test_access_answers_are_cached_briefly(site: Site) -> None:
    client = site.client()
    sign_in(site, client, OWNER)
    for _ in range(3):
        assert client.get(f"/runs/{site.runs[PRIVATE].id}").status_code == 200
    asked = [r for r in site.fake.requests if r.path == f"/repos/{PRIVATE}"]
    assert len(asked) == 1


def test_next_never_leaves_the_server(site: Site) -> None:
    client = site.client()
    for target in (
        "https://evil.example/",
        "//evil.example/x",
        "/\\evil.example",
        "/\t/evil.example/",
        "/\n/evil.example/",
        "/ /evil.example/",
        "/\x00x",
    ):
        landed = sign_in(site, client, OWNER, next_path=target)
        assert landed.headers["Location"] == "/runs"


# --- the callback refuses what it did not start ----------------------------------------------


def test_a_callback_with_a_forged_state_is_refused(site: Site) -> None:
    client = site.client()
    client.get("/auth/login")
    response = client.get("/auth/callback?code=abc&state=forged")
    assert response.status_code == 400 and "did not start here" in text(response)
    assert client.get("/runs").status_code == 401


def test_a_callback_without_a_started_sign_in_is_refused(site: Site) -> None:
    response = site.client().get("/auth/callback?code=abc&state=abc")
    assert response.status_code == 400


def test_a_declined_authorisation_shows_the_sign_in_page(site: Site) -> None:
    client = site.client()
    client.get("/auth/login")
    response = client.get("/auth/callback?error=access_denied&state=x")
    assert response.status_code == 401 and "declined" in text(response)


def test_a_code_github_refuses_shows_why_and_signs_nobody_in(site: Site) -> None:
    client = site.client()
    start = client.get("/auth/login")
    state = parse_qs(urlsplit(start.headers["Location"]).query)["state"][0]
    response = client.get("/auth/callback", query_string={"code": "not-a-code", "state": state})
    assert response.status_code == 503
    assert client.get("/runs").status_code == 401


# --- sign-out and revocation -----------------------------------------------------------------


def test_sign_out_ends_the_session_and_revokes_the_token_at_github(site: Site) -> None:
    client = site.client()
    sign_in(site, client, OWNER)
    token = _token_of(site, OWNER)
    out = client.post("/auth/logout")
    assert out.status_code == 302
    assert client.get(f"/runs/{site.runs[PRIVATE].id}").status_code == 401
    gone = httpx.get(f"{site.fake.api_url}/user", headers={"Authorization": f"Bearer {token}"})
    assert gone.status_code == 401


def test_a_copied_cookie_stops_working_once_its_owner_signed_out(site: Site) -> None:
    client, thief = site.client(), site.client()
    sign_in(site, client, OWNER)
    cookie = client.get_cookie("cra_session")
    assert cookie is not None
    thief.set_cookie("cra_session", cookie.value, domain=cookie.domain)
    client.post("/auth/logout")
    stolen = thief.get(f"/runs/{site.runs[PUBLIC].id}")  # not cached for the thief's app
    assert stolen.status_code == 401 and "sign in again" in text(stolen)


def _token_of(site: Site, login: str) -> str:
    """The user token the fake issued to `login` (from its /user calls)."""
    calls = [r for r in site.fake.requests if r.path == "/user"]
    assert calls and calls[-1].token is not None
    return calls[-1].token


# --- the cookie ------------------------------------------------------------------------------


def _set_cookie(site: Site, **overrides: Any) -> str:
    client = site.client(**overrides)
    landed = sign_in(site, client, OWNER)
    header = next(h for h in landed.headers.getlist("Set-Cookie") if h.startswith("cra_session="))
    return header


def test_the_session_cookie_is_http_only(site: Site) -> None:
    assert "; HttpOnly" in _set_cookie(site)


def test_the_session_cookie_is_same_site_lax(site: Site) -> None:
    assert "; SameSite=Lax" in _set_cookie(site)


def test_the_session_cookie_is_secure_behind_https(site: Site) -> None:
    assert "; Secure" in _set_cookie(site, public_url="https://cra.example.com")


def test_the_session_cookie_is_not_secure_on_plain_http(site: Site) -> None:
    assert "; Secure" not in _set_cookie(site)


def test_the_session_cookie_expires_with_the_github_token(site: Site) -> None:
    assert re.search(r"; Expires=\w{3}, ", _set_cookie(site))


def test_the_session_cookie_is_signed(site: Site) -> None:
    client = site.client()
    sign_in(site, client, OWNER)
    cookie = client.get_cookie("cra_session")
    assert cookie is not None
    payload, _, signature = cookie.value.rpartition(".")
    client.set_cookie("cra_session", f"{payload}.{'A' * len(signature)}", domain=cookie.domain)
    assert client.get(f"/runs/{site.runs[PRIVATE].id}").status_code == 401


def test_the_github_token_in_the_cookie_is_encrypted(site: Site) -> None:
    client = site.client()
    sign_in(site, client, OWNER)
    cookie = client.get_cookie("cra_session")
    assert cookie is not None
    body = cookie.value.lstrip(".").split(".")[0]
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    decoded = zlib.decompress(raw) if cookie.value.startswith(".") else raw
    assert b"ghu_" not in decoded and _token_of(site, OWNER).encode() not in decoded
    assert OWNER.encode() in decoded  # the login is signed, not secret
