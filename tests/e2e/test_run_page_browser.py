"""The run page in real headless Chromium: a run driven through the whole bot is served on
loopback, rendered, and its screenshot is a page, not a blank."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from werkzeug.serving import make_server

from bot.app import create_app
from tests.e2e.bot_world import BotWorld
from tests.fakes.github_server import FakeGitHub
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.repos import ISOLATED_GIT_ENV

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-quic", "--window-size=1280,2000",
)  # fmt: skip
HEADER_BAR = (0x24, 0x29, 0x2F)  # the page's dark top bar (#24292f)


@pytest.fixture
def chromium() -> str:
    """Debian's chromium; skipped when missing, except in CI (.ci/run installs it)."""
    binary = shutil.which("chromium")
    if binary is not None:
        return binary
    reason = "the browser test needs Debian's chromium (apt-get install chromium)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: {reason}; .ci/run should have installed it")
    pytest.skip(f"{reason}; skipped locally")


@dataclass
class Served:
    url: str
    run_id: int


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    """A finished run (one step passed, one failed), its app served by werkzeug on loopback."""
    for key, value in ISOLATED_GIT_ENV.items():
        monkeypatch.setenv(key, value)
    with FakeGitHub() as fake, ScriptedModelServer() as models:
        world = BotWorld(tmp_path, fake, models)
        try:
            world.script_fix(second_step_fails=True)
            run = world.run(world.label_issue())
            assert run.status == "partial", run.error
            server = make_server("127.0.0.1", 0, create_app(world.settings, world.services),
                                 threaded=True)
            thread = threading.Thread(target=server.serve_forever, daemon=True)
            thread.start()
            try:
                yield Served(f"http://127.0.0.1:{server.port}", run.id)
            finally:
                server.shutdown()
                thread.join()
        finally:
            world.close()


def render(chromium: str, url: str, tmp: Path) -> tuple[str, bytes]:
    """The DOM Chromium built for `url` and its 1280×2000 screenshot (PNG bytes)."""
    shot = tmp / "page.png"
    result = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp / 'profile'}",
         f"--screenshot={shot}", "--dump-dom", url],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert shot.exists(), result.stderr[-2000:]
    return result.stdout, shot.read_bytes()


def test_run_page_renders_a_finished_run_in_chromium(
    chromium: str, served: Served, tmp_path: Path
) -> None:
    dom, png = render(chromium, f"{served.url}/runs/{served.run_id}", tmp_path)

    assert f"Run #{served.run_id}" in dom and 'id="status">partial<' in dom
    assert "Fix mul in calc/ops.py" in dom and "Add square to calc/ops.py" in dom  # the plan
    assert "mul fixed; square next" in dom  # an adjustment's rationale
    assert '<td class="mono">meta_plan</td><td>reasoning</td>' in dom  # a model call
    assert '<span class="d-add">+    return a * b</span>' in dom  # the diff
    assert 'http-equiv="refresh"' not in dom

    width, height, pixels = decode_png(png)
    assert (width, height) == (1280, 2000)
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
