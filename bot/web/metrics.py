"""GET /metrics: the Prometheus text of deliveries, runs, run durations and model tokens, for
the bearer of CRA_METRICS_TOKEN (or, without one, loopback)."""

from __future__ import annotations

import hmac
import ipaddress
import math
from collections.abc import Iterable, Mapping

from flask import jsonify, request
from flask.typing import ResponseReturnValue
from pydantic import SecretStr

from bot.web.state import current_state

DURATION_BUCKETS = (10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0, 7200.0)
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
FORWARDING_HEADERS = ("Forwarded", "X-Forwarded-For", "X-Real-IP")


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
    return jsonify(
        error="/metrics answers loopback only; set CRA_METRICS_TOKEN to read it from elsewhere"
    ), 403


def _from_loopback() -> bool:
    try:
        return ipaddress.ip_address(request.remote_addr or "").is_loopback
    except ValueError:
        return False


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
        "cra_run_duration_seconds",
        "Start-to-finish time of finished solve and plan runs.",
        sorted(durations),
    )
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
