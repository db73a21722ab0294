"""The Flask app: POST /webhook, GET /healthz (GET /metrics: bot.web.metrics); nothing slow inside
a request."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any, get_args

import orjson
from flask import Flask, Response, jsonify, request
from flask.typing import ResponseReturnValue
from sqlalchemy.exc import SQLAlchemyError

from bot.access import signin
from bot.errors import BotError, MalformedDelivery
from bot.intake.installations import InstallationChange, installation_change
from bot.intake.triggers import Command, Trigger, route
from bot.intake.webhooks import Event, delivery_event, verify_signature
from bot.queue.queues import RunQueue
from bot.services import app_mode
from bot.settings import BotSettings
from bot.store.record import busy_text, store_run
from bot.store.runs import Run
from bot.web import security_headers
from bot.web.bench_pages import blueprint as bench_pages
from bot.web.metrics import metrics
from bot.web.runs import blueprint as run_pages
from bot.web.state import EXTENSION, AppServices, AppState, current_state

log = logging.getLogger(__name__)

MAX_BODY = 25 * 1024 * 1024  # GitHub caps payloads at 25 MB
# Metric label values come from these fixed sets (anything else counts as "other"): the event
# name of a signed delivery is still chosen by whoever holds the secret.
METRIC_EVENTS = frozenset(
    {
        "ping",
        "issues",
        "issue_comment",
        "pull_request",
        "pull_request_review",
        "pull_request_review_comment",
        "workflow_dispatch",
        "installation",
        "installation_repositories",
        "check_run",
        "check_suite",
        "push",
        "unknown",
    }
)
METRIC_OUTCOMES = frozenset(
    {
        "unauthorized",
        "malformed",
        "no_installation",
        "duplicate",
        "ping",
        "installation",
        "ignored",
        "busy",
        *get_args(Command),
    }
)
MACHINE_PATHS = ("/webhook", "/healthz", "/metrics")  # no cookie session: no person calls them


def create_app(settings: BotSettings, services: AppServices) -> Flask:
    """The webhook server over `services` (bot.services.build_services builds the real ones);
    SettingsError without a webhook secret (unless insecure_dev)."""
    secret = settings.require_webhook_secret()
    app = Flask(__name__, template_folder="../templates", static_folder="../static")
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    app.extensions[EXTENSION] = AppState(settings=settings, services=services, secret=secret)
    app.add_url_rule("/webhook", view_func=webhook, methods=["POST"])
    app.add_url_rule("/healthz", view_func=healthz, methods=["GET"])
    app.add_url_rule("/metrics", view_func=metrics, methods=["GET"])
    app.register_blueprint(run_pages)  # GET /runs, /runs/<id>: read-only run pages
    app.register_blueprint(bench_pages)  # GET /bench/<id>: published bench reports
    signin.install(app, settings, sessionless=MACHINE_PATHS)  # /auth/*: who may see them
    security_headers.install(app, settings)  # CSP, no framing, nosniff, HSTS: every answer
    return app


# --- views -----------------------------------------------------------------------------------


def webhook() -> ResponseReturnValue:
    """Verify, parse, dedupe, route, store, enqueue; answer at once."""
    state = current_state()
    body = request.get_data(cache=False)
    headers = request.headers  # case-insensitive; read the few needed, never copied whole
    if state.secret is not None and not verify_signature(
        body, headers.get("X-Hub-Signature-256"), state.secret
    ):
        state.deliveries.add("unknown", "unauthorized")
        return jsonify(error="missing or wrong X-Hub-Signature-256"), 401
    try:
        event = delivery_event(
            headers.get("X-GitHub-Event"),
            headers.get("X-GitHub-Delivery"),
            headers.get("Content-Type", ""),
            body,
        )
    except MalformedDelivery as exc:
        state.deliveries.add("unknown", "malformed")
        return jsonify(error=str(exc)), 400
    outcome, status, answer = accept(state, event)
    state.deliveries.add(_label(event.name, METRIC_EVENTS), _label(outcome, METRIC_OUTCOMES))
    # an event that asks nothing of cra (most of what GitHub sends) is counted, not logged
    log.log(
        logging.DEBUG if outcome == "ignored" else logging.INFO,
        "delivery %s %s.%s: %s",
        event.delivery_id,
        event.name,
        event.action,
        outcome,
    )
    return ("", status) if answer is None else _json(answer, status)


def _json(answer: dict[str, Any], status: int) -> Response:
    """A small JSON answer, serialized by orjson (Flask's jsonify costs more than the rest of
    a 202 together)."""
    return Response(orjson.dumps(answer), status, mimetype="application/json")


def healthz() -> ResponseReturnValue:
    """200 when the database and the queue are reachable, else 503 naming what failed; with
    the runs that look stuck (running without a heartbeat for CRA_STALE_AFTER seconds, which
    the reaper is about to end): `status` is "degraded" while there are any."""
    state = current_state()
    parts = state.services.health()
    healthy = all(value == "ok" for value in parts.values())
    checks: dict[str, object] = {"status": "ok" if healthy else "error", **parts}
    if parts.get("database") == "ok":
        store = state.services.store
        try:
            stale = store.stale_runs(store.now() - timedelta(seconds=state.settings.stale_after))
        except SQLAlchemyError:
            stale = []
        checks["stuck_runs"] = len(stale)
        checks["stuck_run_ids"] = [run.id for run in stale[:20]]
        if stale and healthy:
            checks["status"] = "degraded"
    return jsonify(checks), 200 if healthy else 503


def _label(value: str, known: frozenset[str]) -> str:
    """A metric label value from a fixed set: `value` if known, else "other"."""
    return value if value in known else "other"


# --- accepting a delivery --------------------------------------------------------------------


def accept(state: AppState, event: Event) -> tuple[str, int, dict[str, Any] | None]:
    """(outcome, HTTP status, JSON answer) for a verified delivery; stores and enqueues."""
    try:
        trigger = None if event.name == "ping" else _route(state.settings, event)
        change = installation_change(event)
    except MalformedDelivery as exc:  # signed, but not what GitHub sends (or what an App can
        # never do): no run, nothing stored — GitHub lists it failed, with the reason, and
        # takes a redelivery once the server is set up for it
        return exc.outcome, 422, {"error": str(exc)}
    if change is not None:
        _forget_installation(state, change)
    outcome = (
        "ping"
        if event.name == "ping"
        else trigger.command
        if trigger
        else "installation"
        if change
        else "ignored"
    )
    if trigger is not None and trigger.command == "cancel":
        return _accept_cancel(state, event, trigger)
    public_url = state.settings.public_url
    admitted = state.intake.admit(
        event, trigger, outcome, busy_text=lambda active: busy_text(active, public_url)
    )
    if admitted.outcome == "duplicate":
        return "duplicate", 200, {"duplicate": True}
    if event.name == "ping":
        return outcome, 200, {"ping": "pong"}
    if trigger is None:
        return outcome, 204, None
    if admitted.run_id is None:  # the active run's "busy" reply is already on its way
        return admitted.outcome, 200, {"busy": True}
    _enqueue(state.services.queue, admitted.run_id)
    return admitted.outcome, 202, {"run_id": admitted.run_id}


def _accept_cancel(
    state: AppState, event: Event, trigger: Trigger
) -> tuple[str, int, dict[str, Any] | None]:
    """A `/cra cancel`: record the delivery, then stop the active run and store the reply."""
    if not state.services.store.record_delivery(
        event.delivery_id, event.name, event.action, trigger.command
    ):
        return "duplicate", 200, {"duplicate": True}
    run = _store_run_or_forget(state, trigger)
    if run is None:  # store_run answers a cancel with a run, always
        raise BotError("a cancel stored no run")
    _enqueue(state.services.queue, run.id)
    return run.command, 202, {"run_id": run.id}


def _forget_installation(state: AppState, change: InstallationChange) -> None:
    """Drop what is cached for an installation removed, suspended or changed: its tokens in
    every worker (its generation in the database moves on), people's access answers here."""
    state.installations.record(change)
    signin.forget_repositories(change.account, change.repositories)


def _route(settings: BotSettings, event: Event) -> Trigger | None:
    """The trigger of an event under the server's label and login, and in its mode."""
    return route(event, label=settings.label, bot_login=settings.bot_login, app=app_mode(settings))


def _store_run_or_forget(state: AppState, trigger: Trigger) -> Run | None:
    """Store the run; if that fails, forget the delivery so that GitHub may redeliver it."""
    store = state.services.store
    try:
        return store_run(
            store,
            trigger,
            public_url=state.settings.public_url,
            stale_after=state.settings.stale_after,
        )
    except BaseException:
        try:
            store.forget_delivery(trigger.delivery_id)
        except SQLAlchemyError:
            log.exception("could not forget delivery %s", trigger.delivery_id)
        raise


def _enqueue(queue: RunQueue, run_id: int) -> None:
    """Enqueue a stored run; a failure is logged (the run stays queued for recovery)."""
    try:
        queue.enqueue(run_id)
    except Exception:
        log.exception("could not enqueue run %s; it stays queued until recovery", run_id)
