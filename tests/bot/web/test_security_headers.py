"""The security headers on every kind of page the server renders (run list and page, sign-in,
bench report, the error pages), and on its other answers: a strict Content-Security-Policy that
the pages need nothing beyond, no framing, nosniff, a same-origin referrer, and HSTS over HTTPS
only."""

from __future__ import annotations

from collections.abc import Callable
from html.parser import HTMLParser

import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from bot.web.app import create_app
from tests.bot.access.test_signin import PRIVATE, PUBLIC, Services, Site, site, text
from tests.bot.web.test_bench_page import publish

__all__ = ["site"]  # the fixture

PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}
HSTS = "Strict-Transport-Security"

Fetch = Callable[[Site], TestResponse]


def public(site: Site) -> FlaskClient:
    return site.client(run_pages="public")


PAGES: dict[str, Fetch] = {
    "run list": lambda site: public(site).get("/runs"),
    "run page": lambda site: public(site).get(f"/runs/{site.runs[PUBLIC].id}"),
    "bench page": lambda site: public(site).get(f"/bench/{publish(site, PUBLIC)}"),
    "sign-in page": lambda site: site.client().get(f"/runs/{site.runs[PRIVATE].id}"),
    "run not found": lambda site: public(site).get("/runs/999"),
    "report not found": lambda site: public(site).get("/bench/nope"),
    "unknown path (404)": lambda site: site.client().get("/nowhere"),
    "wrong method (405)": lambda site: site.client().post("/runs"),
}


def failing_client(site: Site) -> FlaskClient:
    """A client of an app with one view that fails: Flask's own 500 page answers it."""
    app = create_app(site.settings, Services(site.store))

    def fail() -> str:
        raise RuntimeError("the view failed")

    app.add_url_rule("/fails", view_func=fail)
    return app.test_client()


def assert_page_headers(response: TestResponse) -> None:
    assert response.mimetype == "text/html"
    for name, value in PAGE_HEADERS.items():
        assert response.headers.get(name) == value, name


@pytest.mark.parametrize("kind", PAGES)
def test_every_kind_of_page_gets_the_security_headers(site: Site, kind: str) -> None:
    assert_page_headers(PAGES[kind](site))


def test_an_error_page_of_a_failing_view_gets_the_security_headers(site: Site) -> None:
    response = failing_client(site).get("/fails")
    assert response.status_code == 500
    assert_page_headers(response)


@pytest.mark.parametrize("kind", PAGES)
def test_no_page_has_inline_script_or_style(site: Site, kind: str) -> None:
    found = InlineCode()
    found.feed(text(PAGES[kind](site)))
    assert found.inline == []


def test_the_pages_stylesheets_are_served_as_css(site: Site) -> None:
    found = StyleSheets()
    found.feed(text(PAGES["bench page"](site)))
    client = public(site)
    assert len(found.links) == 2
    for link in found.links:
        with client.get(link) as sheet:  # a static file's answer holds the file open
            assert sheet.status_code == 200 and sheet.mimetype == "text/css", link
            assert sheet.headers["X-Content-Type-Options"] == "nosniff"
            assert "{" in text(sheet)


def test_json_answers_get_nosniff_and_no_page_policy(site: Site) -> None:
    client, run = public(site), site.runs[PUBLIC].id
    for response in (
        client.get("/healthz"),
        client.get(f"/runs/{run}?format=json"),
        client.post("/webhook", data=b"{}"),
    ):
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert "Content-Security-Policy" not in response.headers


def test_no_hsts_over_plain_http(site: Site) -> None:
    assert HSTS not in PAGES["run list"](site).headers


def test_hsts_on_every_answer_over_https(site: Site) -> None:
    client = public(site)
    for path in ("/runs", "/healthz", "/nowhere"):
        response = client.get(path, base_url="https://cra.test")
        assert response.headers[HSTS] == "max-age=31536000", path


def test_hsts_when_the_public_url_is_https_behind_a_tls_proxy(site: Site) -> None:
    response = site.client(public_url="https://cra.example.com").get("/runs")
    assert response.headers[HSTS] == "max-age=31536000"


# --- reading pages ---------------------------------------------------------------------------


class InlineCode(HTMLParser):
    """What a page has that a CSP without 'unsafe-inline' would block: script and style
    elements, style attributes, event handler attributes and javascript: links."""

    def __init__(self) -> None:
        super().__init__()
        self.inline: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self.inline.append(f"<{tag}>")
        for name, value in attrs:
            if name == "style" or name.startswith("on"):
                self.inline.append(f"<{tag} {name}=…>")
            if name in ("href", "src", "action") and (value or "").strip().lower().startswith(
                "javascript:"
            ):
                self.inline.append(f"<{tag} {name}=javascript:…>")


class StyleSheets(HTMLParser):
    """The stylesheets a page links."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "link" and found.get("rel") == "stylesheet" and found.get("href"):
            self.links.append(str(found["href"]))
