"""The run page in real headless Chromium, behind GitHub sign-in: a run driven through the whole
bot is served on loopback; signed out the browser gets the sign-in page, signed in as someone who
cannot read the repository it gets no content, signed in as a reader it gets the page (rendered,
not a blank), and signing out brings the sign-in page back. Sign-in goes through the fake
GitHub's real OAuth endpoints, driven by chromedriver."""

from __future__ import annotations

import os
import shutil
import struct
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from werkzeug.serving import make_server

from bot.web.app import create_app
from tests.e2e.bot_world import OWNER, REPO, BotWorld
from tests.e2e.webdriver import Browser
from tests.fakes.github_server import FakeGitHub
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.repos import ISOLATED_GIT_ENV

HEADER_BAR = (0x24, 0x29, 0x2F)  # the page's dark top bar (#24292f)
STRANGER = "mallory"
CONTENT = "Fix mul in calc/ops.py"  # a planned step: only a reader may see it


@dataclass
class Tools:
    chromium: str
    chromedriver: str


@pytest.fixture
def tools() -> Tools:
    """Debian's chromium and chromedriver; skipped when missing, except in CI (.ci/run installs
    them)."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is not None and driver is not None:
        return Tools(chromium, driver)
    reason = (
        "the browser test needs Debian's chromium and chromium-driver "
        "(apt-get install chromium chromium-driver)"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: {reason}; .ci/run should have installed them")
    pytest.skip(f"{reason}; skipped locally")


@dataclass
class Served:
    url: str
    run_id: int
    fake: FakeGitHub
    data_dir: Path


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    """A finished run (one step passed, one failed) of a private repository, its app served by
    werkzeug on loopback with sign-in through the fake GitHub."""
    for key, value in ISOLATED_GIT_ENV.items():
        monkeypatch.setenv(key, value)
    with FakeGitHub() as fake, ScriptedModelServer() as models:
        world = BotWorld(
            tmp_path,
            fake,
            models,
            client_id=fake.client_id,
            client_secret=fake.client_secret,
            public_url=None,
        )
        try:
            fake.set_private(REPO)
            world.script_fix(second_step_fails=True)
            run = world.run(world.label_issue())
            assert run.status == "partial", run.error
            server = make_server(
                "127.0.0.1", 0, create_app(world.settings, world.services), threaded=True
            )
            fake.register_callback(f"http://127.0.0.1:{server.port}/auth/callback")
            thread = threading.Thread(target=server.serve_forever, daemon=True)
            thread.start()
            try:
                yield Served(
                    f"http://127.0.0.1:{server.port}", run.id, fake, world.settings.data_dir
                )
            finally:
                server.shutdown()
                thread.join()
        finally:
            world.close()


def sign_in_as(browser: Browser, login: str) -> None:
    """From the sign-in page: "Sign in with GitHub", approve on GitHub as `login`, come back."""
    browser.click("#sign-in")
    browser.type("#login", login)
    browser.click("#authorize")


def test_run_page_shows_only_to_a_signed_in_reader_in_chromium(
    tools: Tools, served: Served, tmp_path: Path
) -> None:
    page = f"{served.url}/runs/{served.run_id}"
    with Browser(tools.chromedriver, tools.chromium, tmp_path / "profile") as browser:
        browser.open(page)
        browser.find("#sign-in")
        assert CONTENT not in browser.dom() and REPO not in browser.dom()

        sign_in_as(browser, STRANGER)
        browser.find("#not-found")
        assert browser.url() == page and CONTENT not in browser.dom()

        browser.click("#sign-out")
        browser.find("#sign-in")

        sign_in_as(browser, OWNER)
        browser.find("#status")
        assert browser.url() == page
        dom, png = browser.dom(), browser.screenshot()

        browser.click("#sign-out")
        browser.find("#sign-in")
        browser.open(page)
        browser.find("#sign-in")
        assert CONTENT not in browser.dom()

    assert f"Run #{served.run_id}" in dom and 'id="status">partial<' in dom
    assert CONTENT in dom and "Add square to calc/ops.py" in dom  # the plan
    assert "mul fixed; square next" in dom  # an adjustment's rationale
    assert '<td class="mono">meta_plan</td><td>reasoning</td>' in dom  # a model call
    assert '<span class="d-add">+    return a * b\n</span>' in dom  # the diff
    assert 'http-equiv="refresh"' not in dom
    assert f'<span id="viewer">{OWNER}</span>' in dom
    assert_rendered(png)


def assert_rendered(png: bytes) -> None:
    """The screenshot is a styled page, not a blank."""
    width, _, pixels = decode_png(png)
    assert width == 1280
    colours = set(pixels)
    non_white = sum(p != (255, 255, 255) for p in pixels) / len(pixels)
    assert len(colours) >= 32, f"{len(colours)} colours: a blank or unstyled page"
    assert 0.03 <= non_white <= 0.9, f"{non_white:.1%} of the pixels are not white"
    assert HEADER_BAR in colours, "the stylesheet was not applied"


# --- a tiny PNG reader (8-bit RGB or RGBA, not interlaced: what Chromium writes) -------------


def decode_png(data: bytes, *, every_nth_row: int = 4) -> tuple[int, int, list[tuple[int, ...]]]:
    """Width, height and the RGB pixels of every n-th row (all rows are unfiltered)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    chunks, pos = {}, 8
    while pos < len(data):
        (size,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        chunks[kind] = chunks.get(kind, b"") + data[pos + 8 : pos + 8 + size]
        pos += 12 + size
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(chunks[b"IDAT"]), width * bpp
    previous, pixels = bytes(stride), []
    for y in range(height):
        start = y * (stride + 1)
        previous = _unfilter(raw[start], raw[start + 1 : start + 1 + stride], previous, bpp)
        if y % every_nth_row == 0:
            pixels += [tuple(previous[x : x + 3]) for x in range(0, stride, bpp)]
    return width, height, pixels


def _unfilter(kind: int, line: bytes, above: bytes, bpp: int) -> bytes:
    """One scanline with its PNG filter (None, Sub, Up, Average, Paeth) undone."""
    if kind == 0:
        return line
    if kind == 2:  # Up: bytewise addition without carries, on whole rows at once
        n = len(line)
        low, high = int.from_bytes(b"\x7f" * n, "big"), int.from_bytes(b"\x80" * n, "big")
        x, y = int.from_bytes(line, "big"), int.from_bytes(above, "big")
        return (((x & low) + (y & low)) ^ ((x ^ y) & high)).to_bytes(n, "big")
    out = bytearray(line)
    for i in range(len(out)):
        left = out[i - bpp] if i >= bpp else 0
        if kind == 1:
            out[i] = (out[i] + left) & 0xFF
        elif kind == 3:
            out[i] = (out[i] + (left + above[i]) // 2) & 0xFF
        else:
            up, corner = above[i], above[i - bpp] if i >= bpp else 0
            guess = left + up - corner
            da, db, dc = abs(guess - left), abs(guess - up), abs(guess - corner)
            nearest = left if da <= db and da <= dc else up if db <= dc else corner
            out[i] = (out[i] + nearest) & 0xFF
    return bytes(out)
