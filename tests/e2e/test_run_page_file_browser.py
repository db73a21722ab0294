"""The run page kept as one file, opened from disk (file://) in real headless Chromium: styled by
its inlined stylesheet under its own policy with nothing else loaded, and its diff one line per
line both with that stylesheet and with every stylesheet removed."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.bot_world import BotWorld
from tests.e2e.test_run_page_browser import Tools, assert_rendered, tools
from tests.e2e.webdriver import Browser

__all__ = ["tools"]  # the fixture

# Each line of the diff: its text and where it starts on the page.
DIFF_LINES = """return Array.from(document.querySelector('#diff + pre').children,
    line => [line.textContent.replace(/\\n$/, ''), line.getBoundingClientRect().top]);"""
NO_STYLESHEETS = """
document.querySelectorAll('style, link[rel=stylesheet]').forEach(sheet => sheet.remove());
return document.styleSheets.length;"""
LOADED = "return performance.getEntriesByType('resource').map(e => e.name);"
STYLED = "return getComputedStyle(document.querySelector('header.top')).backgroundColor;"


@pytest.fixture
def kept(public_world: BotWorld, tmp_path: Path) -> Path:
    """A finished run's page as the file GET /runs/<id>?format=file answers, on disk."""
    public_world.script_fix(second_step_fails=True)
    run = public_world.run(public_world.label_issue())
    assert run.status == "partial", run.error
    answer = public_world.client.get(f"/runs/{run.id}?format=file")
    assert answer.status_code == 200
    path = tmp_path / f"run-{run.id}.html"
    path.write_bytes(answer.get_data())
    return path


def assert_one_line_per_line(lines: Any) -> None:
    """Every diff line starts below the one before, by the same step: no two share a line and
    no blank line comes between them."""
    texts, tops = [text for text, _ in lines], [top for _, top in lines]
    assert "-    return a * b + 1" in texts and "+    return a * b" in texts, texts
    steps = [round(b - a, 1) for a, b in pairwise(tops)]
    assert len(lines) > 5 and all(step > 0 for step in steps), list(zip(texts, tops, strict=True))
    assert len(set(steps)) == 1, list(zip(texts, tops, strict=True))


def test_the_kept_run_page_reads_from_disk_with_and_without_its_stylesheet(
    tools: Tools, kept: Path, tmp_path: Path
) -> None:
    with Browser(tools.chromedriver, tools.chromium, tmp_path / "profile") as browser:
        browser.open(kept.as_uri())
        browser.find("#status")
        styled, loaded, console = browser.script(STYLED), browser.script(LOADED), browser.console()
        png = browser.screenshot()
        styled_lines = browser.script(DIFF_LINES)
        assert browser.script(NO_STYLESHEETS) == 0
        plain_lines = browser.script(DIFF_LINES)
        plain_png = browser.screenshot()

    (tmp_path / "styled.png").write_bytes(png)
    (tmp_path / "unstyled.png").write_bytes(plain_png)
    assert styled == "rgb(36, 41, 47)", "the inlined stylesheet was not applied"
    assert loaded == [] and console == []
    assert_rendered(png)
    assert_one_line_per_line(styled_lines)
    assert_one_line_per_line(plain_lines)
