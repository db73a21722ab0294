"""The run pages: GET /runs and GET /runs/<id>, read-only views of the database (HTML, JSON, or
the page as one file to keep); the page of one run is built by bot.web.run_page."""

# Who may see a run is bot.access.signin's business (CRA_RUN_PAGES: private behind GitHub
# sign-in, or
# public); these views ask its gate first. They only read the database, never a model, and
# render no setting; as a safety net the values of the server's secrets are masked wherever they
# might appear in a record.

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from flask import Blueprint, Response, abort, current_app, jsonify, render_template, request
from flask.typing import ResponseReturnValue
from pydantic import BaseModel, SecretStr

from agent.runlog.store import RunLog
from bot.access import signin
from bot.environment import environment_variables
from bot.settings import BotSettings
from bot.store.runs import RUN_STATUSES
from bot.web.kept_page import attachment, inline_style
from bot.web.run_page import RunPage, build_page
from bot.web.state import current_state

REFRESH_SECONDS = 5
DEFAULT_LIMIT = 50
MAX_LIMIT = 200
MASK = "[redacted]"
MIN_SECRET_CHARS = 8  # shorter values would mask ordinary words
STYLESHEET = "cra.css"  # in the app's static folder

blueprint = Blueprint("runs", __name__, template_folder="../templates")

M = TypeVar("M", bound=BaseModel)


# --- secrets ---------------------------------------------------------------------------------


def secret_values(settings: BotSettings) -> list[str]:
    """The values of the server's secrets, and each line of a multi-line one (a PEM key)."""
    found: set[str] = set()
    for variable in environment_variables():
        value = settings.value_at(variable.path)
        if isinstance(value, SecretStr):
            text = value.get_secret_value().replace("\\n", "\n")
            found.update(s.strip() for s in [text, *text.splitlines()])
    usable = (s for s in found if len(s) >= MIN_SECRET_CHARS and not s.startswith("-----"))
    return sorted(usable, key=len, reverse=True)


def redact(value: Any, secrets: Sequence[str]) -> Any:
    """`value` (strings, lists, dicts) with every secret replaced by a mask."""
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, MASK)
        return value
    if isinstance(value, dict):
        return {k: redact(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, secrets) for v in value]
    return value


def _masked(model: M, secrets: Sequence[str]) -> M:
    return type(model).model_validate(redact(model.model_dump(), secrets)) if secrets else model


# --- views -----------------------------------------------------------------------------------


def _wants_json() -> bool:
    return request.args.get("format") == "json"


@blueprint.get("/runs")
def run_list() -> ResponseReturnValue:
    """The newest runs first, filtered by ?repository= and ?status=; only readable ones."""
    denied = signin.list_gate()
    if denied is not None:
        return denied
    state = current_state()
    repository = request.args.get("repository", "").strip() or None
    status = request.args.get("status", "").strip() or None
    limit = min(max(request.args.get("limit", DEFAULT_LIMIT, type=int) or 1, 1), MAX_LIMIT)
    secrets = secret_values(state.settings)
    found = state.services.store.list_runs(repository=repository, status=status, limit=limit)
    allowed = signin.readable(r.repository for r in found)
    runs = [_masked(r, secrets) for r in found if r.repository in allowed]
    if _wants_json():
        return jsonify(runs=[r.model_dump(mode="json") for r in runs])
    return render_template(
        "runs_list.html",
        runs=runs,
        repository=repository or "",
        status=status or "",
        statuses=RUN_STATUSES,
    )


@blueprint.get("/runs/<int:run_id>")
def run_page(run_id: int) -> ResponseReturnValue:
    """One run: status, timeline, plan, adjustments, tests, diff and model calls; 404 if unknown."""
    state = current_state()
    run = state.services.store.get_run(run_id)
    denied = signin.run_gate(run.repository if run is not None else None)
    if denied is not None:
        return denied
    if run is None:
        abort(404, description=f"There is no run #{run_id}.")
    page = _masked(
        build_page(run, RunLog(state.services.store.engine)), secret_values(state.settings)
    )
    if _wants_json():
        return jsonify(page.model_dump(mode="json"))
    if request.args.get("format") == "file":
        return _kept(page)
    return render_template(
        "run_page.html", page=page, refresh=REFRESH_SECONDS if page.live else None
    )


def _kept(page: RunPage) -> Response:
    """The page as one file to keep, a download: its stylesheet inline, no refresh."""
    stylesheet = Path(current_app.static_folder or "", STYLESHEET).read_text(encoding="utf-8")
    body = render_template("run_page.html", page=page, refresh=None, kept=inline_style(stylesheet))
    return Response(
        body,
        mimetype="text/html",
        headers={"Content-Disposition": attachment(f"run-{page.run.id}.html")},
    )


@blueprint.app_template_filter("cra_when")
def when(value: datetime | None) -> str:
    """A timestamp as `2026-01-31 12:00:05 UTC`, or an en dash."""
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value is not None else "–"


@blueprint.app_template_filter("cra_seconds")
def seconds(value: float | None) -> str:
    """A duration as `4.2 s` or `3 min 5 s`, or an en dash."""
    if value is None:
        return "–"
    if value < 60:
        return f"{value:.1f} s"
    minutes, rest = divmod(int(value), 60)
    return f"{minutes} min {rest} s"


@blueprint.app_template_filter("cra_http_url")
def http_url(value: str | None) -> str | None:
    """The URL if it is http(s), else None: a stored link never becomes `javascript:`."""
    return value if value and value.startswith(("https://", "http://")) else None
