"""The fake GitHub's sign-in side behaves like GitHub's: the authorize page and its redirect,
one-time codes bound to their redirect URI, user tokens that see what the user and the App both
can, /user, and revocation by the App's client."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.fakes.github_server import FakeGitHub, ManualClock

CALLBACK = "http://app.test/auth/callback"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub(clock=ManualClock()) as fake:
        fake.add_repo("o/open")
        fake.add_repo("o/closed")
        fake.set_private("o/closed")
        fake.set_permission("o/closed", "member", "read")
        yield fake


def approve(gh: FakeGitHub, login: str, redirect_uri: str = CALLBACK) -> str:
    """Approve the App on the authorize form as `login`; the code GitHub redirects with."""
    query = {"client_id": gh.client_id, "redirect_uri": redirect_uri, "state": "s1"}
    page = httpx.get(f"{gh.git_url}/login/oauth/authorize", params=query)
    assert page.status_code == 200 and 'id="authorize"' in page.text
    answer = httpx.post(f"{gh.git_url}/login/oauth/authorize", data={**query, "login": login})
    assert answer.status_code == 302
    target = urlsplit(answer.headers["Location"])
    assert f"{target.scheme}://{target.netloc}{target.path}" == redirect_uri
    sent = parse_qs(target.query)
    assert sent["state"] == ["s1"]
    return sent["code"][0]


def exchange(gh: FakeGitHub, code: str, **overrides: str) -> dict[str, object]:
    form = {
        "client_id": gh.client_id,
        "client_secret": gh.client_secret,
        "code": code,
        "redirect_uri": CALLBACK,
        **overrides,
    }
    answer = httpx.post(
        f"{gh.git_url}/login/oauth/access_token", data=form, headers={"Accept": "application/json"}
    )
    assert answer.status_code == 200
    body: dict[str, object] = answer.json()
    return body


def api(gh: FakeGitHub, path: str, token: str) -> httpx.Response:
    return httpx.get(f"{gh.api_url}{path}", headers={"Authorization": f"Bearer {token}"})


def test_a_code_becomes_a_user_token_once(gh: FakeGitHub) -> None:
    code = approve(gh, "member")
    token = exchange(gh, code)["access_token"]
    assert isinstance(token, str) and token.startswith("ghu_")
    assert exchange(gh, code)["error"] == "bad_verification_code"


def test_a_code_is_bound_to_its_redirect_uri_and_the_client_secret(gh: FakeGitHub) -> None:
    assert exchange(gh, approve(gh, "member"), redirect_uri="http://evil.test/cb")["error"] == (
        "redirect_uri_mismatch"
    )
    assert exchange(gh, approve(gh, "member"), client_secret="wrong")["error"] == (
        "incorrect_client_credentials"
    )


def test_registered_callbacks_limit_where_sign_in_may_return(gh: FakeGitHub) -> None:
    gh.register_callback(CALLBACK)
    query = {"client_id": gh.client_id, "redirect_uri": "http://evil.test/cb", "state": "s"}
    page = httpx.get(f"{gh.git_url}/login/oauth/authorize", params=query)
    assert page.status_code == 400 and "not associated" in page.text


def test_a_user_token_knows_its_user_and_sees_what_they_may_read(gh: FakeGitHub) -> None:
    member, stranger = gh.user_token("member"), gh.user_token("stranger")
    assert api(gh, "/user", member).json()["login"] == "member"
    assert api(gh, "/repos/o/closed", member).status_code == 200
    assert api(gh, "/repos/o/closed", stranger).status_code == 404
    assert api(gh, "/repos/o/open", stranger).json()["private"] is False


def test_an_installation_token_gets_403_from_user(gh: FakeGitHub) -> None:
    assert api(gh, "/user", gh.issue_token()).status_code == 403


def test_the_client_revokes_a_user_token(gh: FakeGitHub) -> None:
    token = gh.user_token("member")
    url = f"{gh.api_url}/applications/{gh.client_id}/token"
    refused = httpx.request("DELETE", url, json={"access_token": token}, auth=("x", "y"))
    assert refused.status_code == 401
    done = httpx.request(
        "DELETE", url, json={"access_token": token}, auth=(gh.client_id, gh.client_secret)
    )
    assert done.status_code == 204 and api(gh, "/user", token).status_code == 401
