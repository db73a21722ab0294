"""The bench report as HTML: a self-contained page (inline CSS, nothing loaded from the
network, a Content-Security-Policy that forbids scripts), or the body and its stylesheet for the
bot's page.

Every value is escaped by Jinja's autoescape: instance ids, statements and model names come
from files that anyone may have written.
"""

from __future__ import annotations

from collections.abc import Callable

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from agent.bench.report.data import BenchReport
from agent.bench.report.text import (
    CLEAN_ROOM_HEADER,
    HEADER,
    MARKS,
    NUMERIC_FROM,
    clean_room_rows,
    percent,
    points,
    summary_rows,
)

RunLink = Callable[[str], str | None]


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("agent.bench.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters["percent"] = percent
    env.filters["points"] = points
    return env


def _no_link(_: str) -> str | None:
    return None


def _render(name: str, report: BenchReport, repository: str | None, run_link: RunLink) -> str:
    template = _environment().get_template(name)
    return template.render(
        report=report,
        repository=repository,
        header=HEADER,
        numeric_from=NUMERIC_FROM,
        summary_rows=summary_rows(report.models),
        marks=MARKS,
        run_link=run_link,
        clean_header=CLEAN_ROOM_HEADER,
        clean_rows=clean_room_rows(report.models),
        clean_room=any(m.calls_by_stage for m in report.models),
    )


def render_html(report: BenchReport, *, repository: str | None = None) -> str:
    """The whole page, to be written to a file and opened anywhere."""
    return _render("report_page.html", report, repository, _no_link)


def render_body(
    report: BenchReport, *, repository: str | None = None, run_link: RunLink = _no_link
) -> str:
    """The report's part of a page (for a page that brings its own frame and style, and links
    `stylesheet()`: the body has no inline style, which the bot's Content-Security-Policy
    would block)."""
    return _render("report_body.html", report, repository, run_link)


def stylesheet() -> str:
    """The CSS of the report's own classes (the whole page inlines it)."""
    return _environment().get_template("report.css").render()
