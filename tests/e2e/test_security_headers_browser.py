"""The security headers in real headless Chromium, against the server on loopback: a page of
another origin that frames a signed-in maintainer's run page gets nothing shown (the browser
refuses the frame), and every page of the server renders with its stylesheet under the
Content-Security-Policy, logs no violation of it, and runs no inline script or style."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.bench.report.command import build_report
from agent.bench.results import BenchResult
from bot.bench.reports import BenchReports
from tests.e2e.bot_world import OWNER, REPO
from tests.e2e.test_run_page_browser import (
    CONTENT,
    HEADER_BAR,
    Served,
    Tools,
    decode_png,
    served,
    sign_in_as,
    tools,
)
from tests.e2e.webdriver import Browser

__all__ = ["served", "tools"]  # the fixtures

OWN_TEXT = "a page of this origin, framed"
CSP_WORDS = ("Content Security Policy", "Content-Security-Policy")


@dataclass
class Elsewhere:
    """A site of another origin on loopback whose page frames `target` and a page of its own."""

    url: str
    target: str


@pytest.fixture
def elsewhere(served: Served) -> Iterator[Elsewhere]:
    target = f"{served.url}/runs/{served.run_id}"
    pages = {
        "/": (
            f'<!doctype html><title>elsewhere</title><iframe id="victim" src="{target}" '
            'width="900" height="600"></iframe><iframe id="own" src="/own"></iframe>'
        ),
        "/own": f'<!doctype html><title>own</title><p id="own-text">{OWN_TEXT}</p>',
    }

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path, "not found").encode()
            self.send_response(200 if self.path in pages else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Elsewhere(f"http://127.0.0.1:{server.server_address[1]}", target)
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def signed_in(browser: Browser, served: Served) -> None:
    """Sign in as the repository's owner, from the run page, and see the run."""
    browser.open(f"{served.url}/runs/{served.run_id}")
    sign_in_as(browser, OWNER)
    browser.find("#status")


def test_a_run_page_framed_by_another_origin_shows_nothing_in_chromium(
    tools: Tools, served: Served, elsewhere: Elsewhere, tmp_path: Path
) -> None:
    with Browser(tools.chromedriver, tools.chromium, tmp_path / "profile") as browser:
        signed_in(browser, served)
        browser.open(elsewhere.url)
        browser.enter_frame("#own")
        assert OWN_TEXT in browser.text("#own-text")  # reading a frame works
        browser.leave_frames()
        browser.enter_frame("#victim")
        framed = browser.dom()
        browser.leave_frames()
        logged = browser.console()

    assert CONTENT not in framed and 'id="status"' not in framed and "sign-out" not in framed
    assert any("frame-ancestors 'none'" in line for line in logged), logged


def test_no_page_logs_a_csp_violation_and_each_is_styled_in_chromium(
    tools: Tools, served: Served, tmp_path: Path
) -> None:
    report = build_report(
        [BenchResult(instance_id="octo__calc-1", model="qwen", outcome="resolved", run_id="run-1")]
    )
    report_id = BenchReports(served.data_dir / "bench" / "reports").save(REPO, report)
    pages = {
        "run page": f"/runs/{served.run_id}",
        "run list": "/runs",
        "bench page": f"/bench/{report_id}",
        "run not found": "/runs/999999",
        "sign-in page": "/runs",
    }
    seen: dict[str, tuple[list[str], bool, dict[str, object]]] = {}
    with Browser(tools.chromedriver, tools.chromium, tmp_path / "profile") as browser:
        signed_in(browser, served)
        browser.console()
        for name, path in pages.items():
            if name == "sign-in page":
                browser.click("#sign-out")
            browser.open(f"{served.url}{path}")
            logged = [line for line in browser.console() if any(w in line for w in CSP_WORDS)]
            seen[name] = (logged, styled(browser), inline_code_runs(browser))
            browser.console()  # the probe's own refusals

    for name, (logged, is_styled, runs) in seen.items():
        assert logged == [], f"{name}: {logged}"
        assert is_styled, f"{name}: the stylesheet was not applied"
        assert runs == {"script": False, "style": False}, f"{name}: inline code ran: {runs}"


def styled(browser: Browser) -> bool:
    """Whether the page shows the stylesheet's dark top bar."""
    _, _, pixels = decode_png(browser.screenshot())
    return HEADER_BAR in set(pixels)


def inline_code_runs(browser: Browser) -> dict[str, object]:
    """Whether an inline script and an inline style, added to the page, take effect (a page
    under the CSP refuses both, as it would refuse markup a model wrote)."""
    ran = browser.script(
        "const s = document.createElement('script'); s.textContent = 'window.craProbe = 1';"
        "document.head.append(s);"
        "const c = document.createElement('style'); c.textContent = 'body { --cra-probe: 1 }';"
        "document.head.append(c);"
        "return {script: window.craProbe === 1, "
        "style: getComputedStyle(document.body).getPropertyValue('--cra-probe').trim() === '1'};"
    )
    return dict(ran)
