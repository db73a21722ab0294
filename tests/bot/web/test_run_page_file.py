"""The run page kept as one file (GET /runs/<id>?format=file): its stylesheet inlined under a
policy of its own that lets nothing else load, while the served page keeps its stylesheet link
under the server's strict policy; and a diff that reads as one with no stylesheet at all."""

from __future__ import annotations

import base64
import hashlib
import html as markup
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from werkzeug.test import TestResponse

import bot
from bot.web.kept_page import inline_style
from tests.bot.web.test_security_headers import PAGE_HEADERS, InlineCode, StyleSheets
from tests.bot.web.test_web import Site, html, section, site

__all__ = ["site"]  # the fixture

STYLESHEET = Path(bot.__file__).parent / "static" / "cra.css"


def file_copy(site: Site) -> TestResponse:
    response = site.client.get(f"/runs/{site.finished.id}?format=file")
    assert response.status_code == 200 and response.mimetype == "text/html"
    return response


def inline_styles(page: str) -> list[str]:
    return re.findall(r"<style>(.*?)</style>", page, re.S)


def test_the_file_copy_holds_the_stylesheet_inline(site: Site) -> None:
    page = file_copy(site).get_data(as_text=True)

    assert inline_styles(page) == [STYLESHEET.read_text(encoding="utf-8")]


def test_the_file_copy_loads_nothing_from_elsewhere(site: Site) -> None:
    found = Loads()
    found.feed(file_copy(site).get_data(as_text=True))

    assert found.loads == []


def test_the_file_copys_own_policy_lets_only_its_stylesheet_in(site: Site) -> None:
    page = file_copy(site).get_data(as_text=True)

    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
    assert policy is not None and page.index("<meta http-equiv") < page.index("<style>")
    digest = base64.b64encode(hashlib.sha256(inline_styles(page)[0].encode()).digest()).decode()
    assert markup.unescape(policy.group(1)) == (
        f"default-src 'none'; style-src 'sha256-{digest}'; form-action 'none'; base-uri 'none'"
    )


def test_the_file_copy_is_a_download_under_the_servers_strict_policy(site: Site) -> None:
    response = file_copy(site)

    assert response.headers["Content-Disposition"] == (
        f'attachment; filename="run-{site.finished.id}.html"'
    )
    assert response.headers["Content-Security-Policy"] == PAGE_HEADERS["Content-Security-Policy"]


def test_the_served_page_offers_its_file_copy(site: Site) -> None:
    page = html(site, f"/runs/{site.finished.id}")

    assert f'<a href="/runs/{site.finished.id}?format=file">' in page


def test_the_served_page_links_its_stylesheet_and_inlines_nothing(site: Site) -> None:
    response = site.client.get(f"/runs/{site.finished.id}")
    links, inline = StyleSheets(), InlineCode()
    links.feed(response.get_data(as_text=True))
    inline.feed(response.get_data(as_text=True))

    assert links.links == ["/static/cra.css"] and inline.inline == []
    assert response.headers["Content-Security-Policy"] == PAGE_HEADERS["Content-Security-Policy"]


def test_the_diff_is_one_text_line_per_line_without_any_stylesheet(site: Site) -> None:
    diff = section(html(site, f"/runs/{site.finished.id}"), "diff")

    pre = re.search(r'<pre class="diff">(.*?)</pre>', diff, re.S)
    assert pre is not None
    lines = markup.unescape(re.sub(r"<[^>]+>", "", pre.group(1))).splitlines()
    # the reproduction's commit first, then the fix's
    assert lines[0] == "diff --git a/tests/test_issue.py b/tests/test_issue.py"
    assert "diff --git a/calc/ops.py b/calc/ops.py" in lines
    assert "-    return a * b + 1" in lines and "+    return a * b" in lines
    assert lines.index("+    return a * b") == lines.index("-    return a * b + 1") + 1


def test_a_stylesheet_that_would_end_its_style_element_is_refused() -> None:
    with pytest.raises(ValueError, match="</style"):
        inline_style("p { color: red }</STYLE><script>alert(1)</script>")


class Loads(HTMLParser):
    """What a browser opening the page would fetch: linked resources, sources, a refresh."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self._in_style = tag == "style"
        if tag == "link":
            self.loads.append(f"<link href={found.get('href')}>")
        if tag == "meta" and (found.get("http-equiv") or "").lower() == "refresh":
            self.loads.append(f"<meta refresh {found.get('content')}>")
        self.loads += [
            f"<{tag} {name}={value}>"
            for name, value in attrs
            if name in ("src", "srcset", "poster", "data", "background")
        ]

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style and ("url(" in data or "@import" in data):
            self.loads.append(f"a stylesheet loading {data[:40]!r}…")
