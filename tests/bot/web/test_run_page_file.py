"""The run page's diff reads as one with no stylesheet at all: each line its own line of text."""

from __future__ import annotations

import html as markup
import re

from tests.bot.web.test_web import Site, html, section, site

__all__ = ["site"]  # the fixture


def test_the_diff_is_one_text_line_per_line_without_any_stylesheet(site: Site) -> None:
    diff = section(html(site, f"/runs/{site.finished.id}"), "diff")

    pre = re.search(r'<pre class="diff">(.*?)</pre>', diff, re.S)
    assert pre is not None
    lines = markup.unescape(re.sub(r"<[^>]+>", "", pre.group(1))).splitlines()
    assert lines[0] == "diff --git a/calc/ops.py b/calc/ops.py"
    assert "-    return a * b + 1" in lines and "+    return a * b" in lines
    assert lines.index("+    return a * b") == lines.index("-    return a * b + 1") + 1
