"""bot.cli.register: the manifest flow — app.yml → local form → GitHub's code → a mode-600 .env."""

from __future__ import annotations

import io
import json
import stat
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from dotenv import dotenv_values

from bot.cli.manifest import RegisterError, exchange_code, manifest_from_app_yml, render_form
from bot.cli.register import (
    AppCredentials,
    Registration,
    register_main,
    run_register,
    write_env,
)
from bot.errors import GitHubError
from bot.settings import BotSettings

APP_YML = Path(__file__).resolve().parents[3] / "app.yml"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7s3cr3t\nline2==\n"
    "-----END RSA PRIVATE KEY-----\n"
)
CONVERSION = {
    "id": 4242,
    "slug": "cra-test",
    "name": "cra-test",
    "node_id": "A_1",
    "html_url": "https://github.com/apps/cra-test",
    "owner": {"login": "octocat"},
    "pem": PEM,
    "webhook_secret": "whsec-0123456789abcdef",
    "client_id": "Iv1.abc",
    "client_secret": "client-s3cret",
    "permissions": {"issues": "write"},
    "events": ["issues"],
}
SECRETS = ("MIIEowIBAAKCAQEA7s3cr3t", "whsec-0123456789abcdef", "client-s3cret")


def creds() -> AppCredentials:
    return AppCredentials.model_validate(CONVERSION)


def github(seen: list[httpx.Request], status: int = 201, body: object = CONVERSION) -> httpx.Client:
    """An httpx client whose transport plays GitHub's conversions endpoint."""

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, json=body)

    return httpx.Client(transport=httpx.MockTransport(answer))


class FormReader(HTMLParser):
    """The form's action and inputs, and every script's text, as a browser would see them."""

    def __init__(self) -> None:
        super().__init__()
        self.action = ""
        self.inputs: dict[str, str] = {}
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.action = values["action"]
        elif tag == "input":
            self.inputs[values["name"]] = values.get("value", "")
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data


def read_form(page: str) -> FormReader:
    reader = FormReader()
    reader.feed(page)
    return reader


# --- app.yml and the manifest -------------------------------------------------------------------


def manifest(**kw: Any) -> dict[str, Any]:
    return manifest_from_app_yml(
        APP_YML,
        webhook_url="https://cra.example.com/webhook",
        redirect_url="http://127.0.0.1:3000/callback",
        **kw,
    )


def test_app_yml_asks_for_the_minimal_permissions() -> None:
    assert manifest()["default_permissions"] == {
        "contents": "write",
        "issues": "write",
        "pull_requests": "write",
        "checks": "write",
        "metadata": "read",
    }


def test_app_yml_subscribes_to_the_trigger_events() -> None:
    assert manifest()["default_events"] == [
        "issues",
        "issue_comment",
        "pull_request_review_comment",
        "pull_request_review",
    ]


def test_app_yml_is_a_private_app() -> None:
    assert manifest()["public"] is False and manifest()["name"] == "cra"


def test_manifest_fills_in_the_webhook_redirect_and_homepage_urls() -> None:
    m = manifest()
    assert m["hook_attributes"] == {"url": "https://cra.example.com/webhook", "active": True}
    assert m["redirect_url"] == "http://127.0.0.1:3000/callback"
    assert m["url"] == "https://cra.example.com"


@pytest.mark.parametrize(
    ("webhook", "callback"),
    [
        ("https://cra.example.com/webhook", "https://cra.example.com/auth/callback"),
        ("https://example.com/cra/webhook/", "https://example.com/cra/auth/callback"),
        ("https://hooks.example.com/github", "https://hooks.example.com/auth/callback"),
    ],
)
def test_manifest_lists_the_sign_in_callback_beside_the_webhook(
    webhook: str, callback: str
) -> None:
    made = manifest_from_app_yml(
        APP_YML, webhook_url=webhook, redirect_url="http://127.0.0.1:3000/callback"
    )
    assert made["callback_urls"] == [callback]


def test_manifest_takes_a_name_and_homepage_when_given() -> None:
    m = manifest(name="cra-acme", url="https://acme.example/cra")
    assert m["name"] == "cra-acme" and m["url"] == "https://acme.example/cra"


def test_manifest_drops_events_github_rejects(tmp_path: Path) -> None:
    yml = tmp_path / "app.yml"
    yml.write_text(
        "name: x\ndefault_permissions: {issues: write}\ndefault_events:\n"
        "  - issues\n  - installation\n  - installation_repositories\n"
        "  - workflow_dispatch\n"
    )
    m = manifest_from_app_yml(yml, webhook_url="https://h/webhook", redirect_url="http://r")
    assert m["default_events"] == ["issues"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("default_permissions: {issues: write}\n", "needs a `name`"),
        ("name: x\n", "needs `default_permissions`"),
        ("- a list\n", "must hold a mapping"),
        ("name: [unclosed\n", "not valid YAML"),
    ],
)
def test_a_broken_app_yml_is_refused_with_the_reason(
    tmp_path: Path, text: str, problem: str
) -> None:
    yml = tmp_path / "app.yml"
    yml.write_text(text)
    with pytest.raises(RegisterError, match=problem):
        manifest_from_app_yml(yml, webhook_url="https://h/webhook", redirect_url="http://r")


def test_the_webhook_url_must_be_http() -> None:
    with pytest.raises(RegisterError, match="webhook URL"):
        manifest_from_app_yml(APP_YML, webhook_url="cra.example.com", redirect_url="http://r")


def test_a_bad_app_yml_stops_the_flow_before_the_browser_opens(tmp_path: Path) -> None:
    browser = Browser()
    with pytest.raises(RegisterError, match="webhook URL"):
        run_register(
            Registration(app_yml=APP_YML, env_path=tmp_path / ".env", webhook_url="nope"),
            http=github([]),
            out=io.StringIO(),
            open_browser=browser,
            wait_seconds=10,
        )
    assert browser.answers == []


# --- the form ----------------------------------------------------------------------------------


def test_form_posts_the_manifest_to_the_new_app_page_with_the_state() -> None:
    form = read_form(render_form(manifest(), "https://github.com", state="s t/8"))
    assert form.action == "https://github.com/settings/apps/new?state=s%20t%2F8"
    assert json.loads(form.inputs["manifest"]) == manifest()
    assert form.scripts == ['document.getElementById("register").submit();']


def test_form_for_an_organization_posts_to_its_settings() -> None:
    form = read_form(render_form(manifest(), "https://ghe.example/", org="acme corp"))
    assert form.action == "https://ghe.example/organizations/acme%20corp/settings/apps/new"


def test_an_app_name_cannot_break_out_of_the_form() -> None:
    evil = manifest(name='x"></form></script><script>alert(1)</script>')
    page = render_form(evil, "https://github.com")
    form = read_form(page)
    assert json.loads(form.inputs["manifest"])["name"] == evil["name"]
    assert form.scripts == ['document.getElementById("register").submit();']
    assert page.count("<script>") == 1


# --- the code exchange -------------------------------------------------------------------------


def test_exchange_posts_the_code_without_authentication() -> None:
    seen: list[httpx.Request] = []
    got = exchange_code("https://api.github.com/", "c0de", github(seen))
    assert (seen[0].method, str(seen[0].url)) == (
        "POST",
        "https://api.github.com/app-manifests/c0de/conversions",
    )
    assert "authorization" not in seen[0].headers
    assert (got.id, got.slug, got.pem.get_secret_value()) == (4242, "cra-test", PEM)


def test_exchange_quotes_the_code_into_one_path_segment() -> None:
    seen: list[httpx.Request] = []
    exchange_code("https://api.github.com", "../x?y", github(seen))
    assert seen[0].url.raw_path == b"/app-manifests/..%2Fx%3Fy/conversions"


def test_a_refused_code_raises_with_githubs_status_and_message() -> None:
    with pytest.raises(GitHubError, match="404: Not Found") as caught:
        exchange_code("https://api.github.com", "old", github([], 404, {"message": "Not Found"}))
    assert caught.value.status == 404


def test_an_answer_without_credentials_is_an_error() -> None:
    with pytest.raises(GitHubError, match="lacks the App's credentials"):
        exchange_code("https://api.github.com", "c", github([], 201, {"id": 1}))


def test_an_unreachable_github_is_an_error() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(GitHubError, match="could not reach"):
        exchange_code(
            "https://api.github.com", "c", httpx.Client(transport=httpx.MockTransport(refuse))
        )


def test_credentials_never_show_their_secrets() -> None:
    shown = repr(creds()) + str(creds())
    assert not any(secret in shown for secret in SECRETS)


# --- the .env file -----------------------------------------------------------------------------


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_env_file_is_mode_600_and_loads_back(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    write_env(env, creds(), force=False, public_url="https://cra.example.com")
    assert mode(env) == 0o600
    values = dotenv_values(env)
    session = values.pop("CRA_SESSION_SECRET")
    assert session is not None and len(session) >= 40
    assert values == {
        "CRA_APP_ID": "4242",
        "CRA_APP_SLUG": "cra-test",
        "CRA_WEBHOOK_SECRET": "whsec-0123456789abcdef",
        "CRA_CLIENT_ID": "Iv1.abc",
        "CRA_CLIENT_SECRET": "client-s3cret",
        "CRA_PUBLIC_URL": "https://cra.example.com",
        "CRA_PRIVATE_KEY": PEM,
    }


def test_env_file_holds_the_oauth_client_for_signing_in_to_the_run_pages(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    write_env(env, creds(), force=False)
    settings = BotSettings.load(env)
    assert settings.client_id == "Iv1.abc" and settings.client_secret is not None
    assert settings.client_secret.get_secret_value() == "client-s3cret"


def test_each_registration_gets_its_own_session_secret(tmp_path: Path) -> None:
    first, second = tmp_path / "a.env", tmp_path / "b.env"
    write_env(first, creds(), force=False)
    write_env(second, creds(), force=False)
    assert dotenv_values(first)["CRA_SESSION_SECRET"] != dotenv_values(second)["CRA_SESSION_SECRET"]


def test_an_existing_env_file_is_not_overwritten(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text("KEEP=1\n")
    with pytest.raises(RegisterError, match="already exists; pass --force"):
        write_env(env, creds(), force=False)
    assert env.read_text() == "KEEP=1\n"


def test_force_overwrites_and_tightens_the_mode(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text("OLD=1\n")
    env.chmod(0o644)
    write_env(env, creds(), force=True)
    assert mode(env) == 0o600 and "OLD" not in env.read_text()


def test_the_key_can_go_to_its_own_file(tmp_path: Path) -> None:
    env, key = tmp_path / ".env", tmp_path / "cra.pem"
    write_env(env, creds(), force=False, key_path=key)
    assert key.read_text() == PEM and mode(key) == 0o600
    assert dotenv_values(env)["CRA_PRIVATE_KEY_PATH"] == str(key)
    assert "BEGIN" not in env.read_text()


# --- the whole flow ----------------------------------------------------------------------------


class Browser:
    """Plays the user's browser and GitHub: loads the form, then follows GitHub's redirect."""

    def __init__(self, *, wrong_state_first: bool = False) -> None:
        self.wrong_state_first = wrong_state_first
        self.manifest: dict[str, Any] = {}
        self.action = ""
        self.answers: list[tuple[int, str]] = []

    def __call__(self, url: str) -> None:
        with httpx.Client(trust_env=False) as web:
            form = read_form(web.get(url).text)
            self.manifest = json.loads(form.inputs["manifest"])
            self.action = form.action
            state = parse_qs(urlsplit(form.action).query)["state"][0]
            states = ["forged", state] if self.wrong_state_first else [state]
            for sent in [*states, state]:  # the last one replays the redirect
                answer = web.get(
                    self.manifest["redirect_url"], params={"code": "c0de", "state": sent}
                )
                self.answers.append((answer.status_code, answer.text))


def register(
    tmp_path: Path, browser: Browser, seen: list[httpx.Request], **kw: Any
) -> tuple[AppCredentials, str]:
    """Run the flow; the credentials and what it printed (never a secret)."""
    out = io.StringIO()
    asked = Registration(
        app_yml=APP_YML,
        env_path=tmp_path / ".env",
        webhook_url="https://cra.example.com/webhook",
        **kw,
    )
    got = run_register(asked, http=github(seen), out=out, open_browser=browser, wait_seconds=10)
    printed = out.getvalue()
    assert not any(secret in printed for secret in SECRETS)
    return got, printed


def test_register_serves_the_form_exchanges_the_code_and_writes_the_env(tmp_path: Path) -> None:
    browser, seen = Browser(), list[httpx.Request]()
    got, printed = register(tmp_path, browser, seen)
    assert got.id == 4242 and len(seen) == 1
    assert browser.manifest["redirect_url"].startswith("http://127.0.0.1:")
    assert browser.manifest["hook_attributes"]["url"] == "https://cra.example.com/webhook"
    assert browser.manifest["callback_urls"] == ["https://cra.example.com/auth/callback"]
    assert dotenv_values(tmp_path / ".env")["CRA_APP_ID"] == "4242"
    assert dotenv_values(tmp_path / ".env")["CRA_PUBLIC_URL"] == "https://cra.example.com"
    assert mode(tmp_path / ".env") == 0o600
    status, page = browser.answers[0]
    assert status == 200 and "Registered the GitHub App cra-test" in page
    assert browser.answers[1][0] == 410  # a replayed redirect exchanges nothing
    assert "https://github.com/apps/cra-test/installations/new" in printed


def test_a_redirect_with_a_forged_state_is_refused(tmp_path: Path) -> None:
    browser, seen = Browser(wrong_state_first=True), list[httpx.Request]()
    register(tmp_path, browser, seen)
    assert [status for status, _ in browser.answers] == [400, 200, 410]
    assert browser.answers[0][0] == 400 and browser.answers[1][0] == 200 and len(seen) == 1


def test_registering_for_an_organization_posts_to_its_page(tmp_path: Path) -> None:
    browser = Browser()
    register(tmp_path, browser, [], org="acme")
    assert browser.action.startswith("https://github.com/organizations/acme/settings/apps/new?")
    assert browser.answers[0][0] == 200


def test_an_existing_env_file_stops_the_flow_before_any_app_exists(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("KEEP=1\n")
    browser = Browser()
    with pytest.raises(RegisterError, match="already exists"):
        register(tmp_path, browser, [])
    assert browser.answers == []


def test_a_refused_code_fails_the_run_and_writes_nothing(tmp_path: Path) -> None:
    browser, seen = Browser(), list[httpx.Request]()
    with pytest.raises(GitHubError, match="404"):
        run_register(
            Registration(
                app_yml=APP_YML,
                env_path=tmp_path / ".env",
                webhook_url="https://cra.example.com/webhook",
            ),
            http=github(seen, 404, {"message": "Not Found"}),
            out=io.StringIO(),
            open_browser=browser,
            wait_seconds=10,
        )
    assert browser.answers[0][0] == 502 and not (tmp_path / ".env").exists()


def test_no_redirect_in_time_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RegisterError, match="did not send the browser back"):
        run_register(
            Registration(
                app_yml=APP_YML,
                env_path=tmp_path / ".env",
                webhook_url="https://cra.example.com/webhook",
            ),
            http=github([]),
            out=io.StringIO(),
            open_browser=None,
            wait_seconds=0.01,
        )


# --- the command -------------------------------------------------------------------------------


def test_register_main_needs_a_webhook_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert register_main([]) == 2
    assert "--webhook-url" in capsys.readouterr().err


def test_register_main_reports_an_existing_env_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = tmp_path / ".env"
    env.write_text("KEEP=1\n")
    code = register_main(
        [
            "--webhook-url",
            "https://cra.example.com/webhook",
            "--env-file",
            str(env),
            "--app-yml",
            str(APP_YML),
            "--no-browser",
        ]
    )
    assert code == 1
    assert f"cra-bot register: {env} already exists" in capsys.readouterr().err
