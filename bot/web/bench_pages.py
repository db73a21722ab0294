"""The bench pages: GET /bench/<id>, a published report behind the same gate as the run pages,
with its stylesheet at GET /bench/report.css."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, render_template, request
from flask.typing import ResponseReturnValue
from markupsafe import Markup

from agent.bench.report.html import render_body, stylesheet
from bot.access import signin
from bot.bench.reports import BenchReports
from bot.web.state import current_state

blueprint = Blueprint("bench", __name__, template_folder="../templates")


def reports() -> BenchReports:
    """Where this server keeps its published reports."""
    return BenchReports(current_state().settings.data_dir / "bench" / "reports")


@blueprint.get("/bench/<report_id>")
def bench_page(report_id: str) -> ResponseReturnValue:
    """One report (HTML, or ?format=json); the sign-in page or 404 like a run's page."""
    published = reports().get(report_id)
    denied = signin.run_gate(published.repository if published is not None else None)
    if denied is not None:
        return denied
    if published is None:
        return signin.not_found()
    if request.args.get("format") == "json":
        return jsonify(published.report.model_dump(mode="json"))
    body = Markup(render_body(published.report, repository=published.repository))  # escaped
    return render_template("bench_page.html", published=published, body=body)


@blueprint.get("/bench/report.css")
def report_stylesheet() -> ResponseReturnValue:
    """The CSS of the report's own classes: the page links it (no inline style under the CSP)."""
    return Response(stylesheet(), mimetype="text/css")
