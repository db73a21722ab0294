"""The Flask app: POST /webhook, GET /healthz, GET /metrics; nothing slow inside a request."""

from __future__ import annotations

import hmac
import ipaddress
import logging
import math
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, get_args

import orjson
from flask import Flask, Response, jsonify, request
from flask.typing import ResponseReturnValue
from pydantic import SecretStr
from sqlalchemy.exc import SQLAlchemyError

from bot.access import signin
from bot.errors import BotError, MalformedDelivery
from bot.intake.installations import InstallationChange, installation_change
from bot.intake.triggers import Command, Trigger, route
from bot.intake.webhooks import Event, delivery_event, verify_signature
from bot.queue.queues import RunQueue, build_queue, check_health
from bot.render.replies import refusal_text, run_page_url
from bot.run.replying import cancel_reply
from bot.services import Services, app_mode, build_services
from bot.settings import BotSettings
from bot.store.runs import ActiveRunExists, BotStore, Run
from bot.web import security_headers
from bot.web.bench_pages import blueprint as bench_pages
from bot.web.runs import blueprint as run_pages
from bot.web.state import EXTENSION, AppServices, AppState, current_state

log = logging.getLogger(__name__)

MAX_BODY = 25 * 1024 * 1024  # GitHub caps payloads at 25 MB
DURATION_BUCKETS = (10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0, 7200.0)
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
# Metric label values come from these fixed sets (anything else counts as "other"): the event
# name of a signed delivery is still chosen by whoever holds the secret.
METRIC_EVENTS = frozenset({
    "ping", "issues", "issue_comment", "pull_request", "pull_request_review",
    "pull_request_review_comment", "workflow_dispatch", "installation",
    "installation_repositories", "check_run", "check_suite", "push", "unknown",
})
METRIC_OUTCOMES = frozenset({"unauthorized", "malformed", "no_installation", "duplicate", "ping",
                             "installation", "ignored", "busy", *get_args(Command)})
FORWARDING_HEADERS = ("Forwarded", "X-Forwarded-For", "X-Real-IP")
MACHINE_PATHS = ("/webhook", "/healthz", "/metrics")  # no cookie session: no person calls them


class BasicServices:
    """The store and a queue, built from settings when create_app is given no services.

    The thread queue's workers call `execute`; by default the runner, with the full services
    (GitHub, run log, mirrors) built on the first run.
    """

    def __init__(
        self, settings: BotSettings, *, execute: Callable[[int], object] | None = None
    ) -> None:
        self.settings = settings
        self.store = BotStore.open(settings.database_url)
        self._full: Services | None = None
        self._lock = threading.Lock()
        try:
            self.queue = build_queue(settings, execute or self._execute_with_runner,
                                     store=self.store)
        except BaseException:
            self.store.close()
            raise

    def _execute_with_runner(self, run_id: int) -> None:
        """bot.run.runner.execute_run with the full services, built once."""
        from bot.run.runner import execute_run

        with self._lock:
            if self._full is None:
                self._full = build_services(self.settings)
        execute_run(run_id, self._full)

    def health(self) -> dict[str, str]:
        """The database and the queue."""
        return check_health(self.store, self.queue)

    def close(self) -> None:
        """Stop the queue, then release the databases."""
        self.queue.close()
        self.store.close()
        if self._full is not None:
            self._full.close()


def create_app(
    settings: BotSettings,
    services: AppServices | None = None,
    *,
    execute: Callable[[int], object] | None = None,
) -> Flask:
    """The webhook server; SettingsError without a webhook secret (unless insecure_dev).

    Without `services`, a BasicServices is built: the store, and the queue of the settings
    whose thread workers call `execute` (default: bot.run.runner.execute_run, imported lazily).
    """
    secret = settings.require_webhook_secret()
    app = Flask(__name__, template_folder="../templates", static_folder="../static")
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    built = services if services is not None else BasicServices(settings, execute=execute)
    app.extensions[EXTENSION] = AppState(settings=settings, services=built, secret=secret)
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
            body, headers.get("X-Hub-Signature-256"), state.secret):  # fmt: skip
        state.deliveries.add("unknown", "unauthorized")
        return jsonify(error="missing or wrong X-Hub-Signature-256"), 401
    try:
        event = delivery_event(headers.get("X-GitHub-Event"), headers.get("X-GitHub-Delivery"),
                               headers.get("Content-Type", ""), body)  # fmt: skip
    except MalformedDelivery as exc:
        state.deliveries.add("unknown", "malformed")
        return jsonify(error=str(exc)), 400
    outcome, status, answer = accept(state, event)
    state.deliveries.add(_label(event.name, METRIC_EVENTS), _label(outcome, METRIC_OUTCOMES))
    # an event that asks nothing of cra (most of what GitHub sends) is counted, not logged
    log.log(logging.DEBUG if outcome == "ignored" else logging.INFO, "delivery %s %s.%s: %s",
            event.delivery_id, event.name, event.action, outcome)  # fmt: skip
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


def metrics() -> ResponseReturnValue:
    """Prometheus text: deliveries, runs by status, run durations, model tokens by role."""
    state = current_state()
    refused = _metrics_refusal(state.settings.metrics_token)
    if refused is not None:
        return refused
    store = state.services.store
    text = render_metrics(
        deliveries=state.deliveries.snapshot(),
        runs=store.counts_by_status(),
        durations=store.run_durations(),
        tokens=store.model_tokens_by_role(),
    )
    return text, 200, {"Content-Type": PROMETHEUS_TEXT}


def _metrics_refusal(token: SecretStr | None) -> ResponseReturnValue | None:
    """None when this request may read /metrics: it carries the bearer token CRA_METRICS_TOKEN,
    or, without one set, it comes straight from loopback (not through a proxy)."""
    if token is not None and token.get_secret_value():
        sent = request.headers.get("Authorization", "")
        wanted = f"Bearer {token.get_secret_value()}"
        if hmac.compare_digest(sent.encode(), wanted.encode()):
            return None
        answer = jsonify(error="/metrics needs `Authorization: Bearer <CRA_METRICS_TOKEN>`")
        return answer, 401, {"WWW-Authenticate": 'Bearer realm="cra metrics"'}
    if _from_loopback() and not any(request.headers.get(h) for h in FORWARDING_HEADERS):
        return None
    return jsonify(error="/metrics answers loopback only; set CRA_METRICS_TOKEN to read it "
                         "from elsewhere"), 403


def _from_loopback() -> bool:
    try:
        return ipaddress.ip_address(request.remote_addr or "").is_loopback
    except ValueError:
        return False


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
    outcome = ("ping" if event.name == "ping" else trigger.command if trigger
               else "installation" if change else "ignored")  # fmt: skip
    if trigger is not None and trigger.command == "cancel":
        return _accept_cancel(state, event, trigger)
    public_url = state.settings.public_url
    admitted = state.intake.admit(event, trigger, outcome,
                                  busy_text=lambda active: busy_text(active, public_url))
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
    if not state.services.store.record_delivery(event.delivery_id, event.name, event.action,
                                                trigger.command):  # fmt: skip
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
    return route(event, label=settings.label, bot_login=settings.bot_login,
                 app=app_mode(settings))


def _store_run_or_forget(state: AppState, trigger: Trigger) -> Run | None:
    """Store the run; if that fails, forget the delivery so that GitHub may redeliver it."""
    store = state.services.store
    try:
        return store_run(store, trigger, public_url=state.settings.public_url,
                         stale_after=state.settings.stale_after)
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


def store_run(
    store: BotStore, trigger: Trigger, *, public_url: str | None = None,
    stale_after: float | None = None,
) -> Run | None:
    """The queued run for a trigger: the run itself, a cancel, or the one "busy" reply to the
    run already active on the issue (None when that reply exists: replies coalesce).

    A cancel ends a run at once when it is queued, or when its worker has been silent for
    `stale_after` seconds (nobody is left to read the request)."""
    if trigger.command == "cancel":
        return _store_cancel(store, trigger, stale_after)
    try:
        return store.create_run(trigger)
    except ActiveRunExists as busy:
        return store.create_busy_reply(trigger, busy.run_id, busy_text(busy.run_id, public_url))


def _store_cancel(store: BotStore, trigger: Trigger, stale_after: float | None) -> Run:
    """Ask the active run to stop, and store the "cancel" run that answers the comment."""
    active = store.active_run(trigger.repository, trigger.issue_number)
    if active is None:
        return store.create_run(trigger, reply_text=refusal_text("nothing_to_cancel"))
    if trigger.actor != active.actor:  # someone else: the worker checks their permission first
        return store.create_run(trigger, related_run_id=active.id)
    asked = store.request_cancel(active.id, stale_before=stale_cutoff(store, stale_after))
    kind, status = cancel_reply(store, active, asked)
    text = refusal_text(kind, user=trigger.actor, run_id=active.id, status=status)
    return store.create_run(trigger, reply_text=text, related_run_id=active.id)


def stale_cutoff(store: BotStore, stale_after: float | None) -> datetime | None:
    """The time before which a running run's last heartbeat means its worker is gone."""
    return None if stale_after is None else store.now() - timedelta(seconds=stale_after)


def busy_text(active_id: int, public_url: str | None) -> str:
    """The reply to a second solve or plan while a run is active on the same issue."""
    return refusal_text("busy", run_id=active_id, run_url=run_page_url(public_url, active_id))


# --- Prometheus text -------------------------------------------------------------------------


def render_metrics(
    *,
    deliveries: Mapping[tuple[str, str], int],
    runs: Mapping[str, int],
    durations: Iterable[float],
    tokens: Mapping[str, int],
) -> str:
    """The metrics in Prometheus text exposition format 0.0.4."""
    lines = _family(
        "cra_webhook_deliveries_total",
        "counter",
        "Webhook deliveries by event and outcome (this process).",
        [({"event": e, "outcome": o}, n) for (e, o), n in sorted(deliveries.items())],
    )
    lines += _family(
        "cra_runs", "gauge", "Runs by status.", [({"status": s}, n) for s, n in runs.items()]
    )
    lines += _histogram(
        "cra_run_duration_seconds", "Start-to-finish time of finished solve and plan runs.",
        sorted(durations),
    )  # fmt: skip
    lines += _family(
        "cra_model_tokens_total",
        "counter",
        "Prompt and completion tokens of recorded model calls, by role.",
        [({"role": r}, n) for r, n in sorted(tokens.items())],
    )
    return "\n".join(lines) + "\n"


def _family(
    name: str, kind: str, help_: str, samples: list[tuple[dict[str, str], float]]
) -> list[str]:
    """One metric family: HELP, TYPE and a line per labelled sample."""
    head = [f"# HELP {name} {help_}", f"# TYPE {name} {kind}"]
    return head + [f"{name}{_labels(labels)} {_number(value)}" for labels, value in samples]


def _histogram(name: str, help_: str, values: list[float]) -> list[str]:
    """A histogram family with cumulative buckets, sum and count."""
    samples: list[tuple[dict[str, str], float]] = [
        ({"le": _number(bound)}, sum(1 for v in values if v <= bound)) for bound in DURATION_BUCKETS
    ]
    samples.append(({"le": "+Inf"}, len(values)))
    lines = _family(name, "histogram", help_, [])
    lines += [f"{name}_bucket{_labels(labels)} {_number(n)}" for labels, n in samples]
    return [*lines, f"{name}_sum {_number(sum(values))}", f"{name}_count {len(values)}"]


def _labels(labels: Mapping[str, str]) -> str:
    """`{a="x",b="y"}` with the values escaped, or nothing."""
    if not labels:
        return ""
    return "{" + ",".join(f'{key}="{_escape(value)}"' for key, value in labels.items()) + "}"


def _escape(value: str) -> str:
    """A label value escaped for the text format (backslash, quote, newline)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    """A sample value: integers without a fraction, infinities as +Inf/-Inf."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return str(int(value)) if float(value).is_integer() else repr(float(value))
