"""The webhook server, driven by signed recorded payloads through Flask's test client."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from pydantic import SecretStr
from werkzeug.test import TestResponse

from agent.models import LLMCallRecord
from agent.runlog.store import RunLog
from bot.errors import SettingsError
from bot.intake.webhooks import sign
from bot.queue.queues import build_queue, check_health
from bot.services import build_services
from bot.settings import BotSettings
from bot.store.runs import BotStore, Run
from bot.web.app import create_app
from tests.fixtures import webhook_bytes

SECRET = "webhook-secret"
Payload = dict[str, Any]
SAMPLE = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_]+="[^"\\]*",?)*\})? [0-9.e+-]+$')


class RecordingQueue:
    """A RunQueue that keeps the ids it was given and says what healthy() is told."""

    def __init__(self) -> None:
        self.enqueued: list[int] = []
        self.is_healthy = True

    def enqueue(self, run_id: int) -> None:
        self.enqueued.append(run_id)

    def healthy(self) -> bool:
        return self.is_healthy

    def close(self) -> None:
        pass


class TestServices:
    """The app's services over a real SQLite store and a recording queue."""

    __test__ = False

    def __init__(self, store: BotStore) -> None:
        self.store = store
        self.queue = RecordingQueue()

    def health(self) -> dict[str, str]:
        return check_health(self.store, self.queue)


@pytest.fixture
def settings(tmp_path: Path) -> BotSettings:
    return BotSettings(
        webhook_secret=SECRET,
        label="bug",  # the label of the recorded issues.labeled payload
        data_dir=tmp_path,
        database_url=f"sqlite:///{tmp_path / 'cra.db'}",
    )


@pytest.fixture
def services(settings: BotSettings) -> Iterator[TestServices]:
    with BotStore.open(settings.database_url) as store:
        yield TestServices(store)


@pytest.fixture
def app(settings: BotSettings, services: TestServices) -> Flask:
    return create_app(settings, services)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


def changed(event: str, file: str, change: Callable[[Payload], None]) -> bytes:
    """A recorded payload changed by `change`, serialised again (and to be signed again)."""
    payload = json.loads(webhook_bytes(event, file))
    change(payload)
    return json.dumps(payload).encode()


def comment_body(text: str, *, pull_request: bool = False) -> bytes:
    """issue_comment.created saying `text`, on an issue or (with the key added) a PR."""

    def change(payload: Payload) -> None:
        payload["comment"]["body"] = text
        if pull_request:
            payload["issue"]["pull_request"] = {
                "url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/1"
            }

    return changed("issue_comment", "created.payload.json", change)


def deliver(
    client: FlaskClient,
    event: str,
    body: bytes,
    *,
    delivery_id: str | None = None,
    signature: str | None = "sign",
) -> TestResponse:
    """POST a delivery with the headers GitHub sends, signed over the exact bytes."""
    headers = {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id or str(uuid.uuid4()),
        "X-GitHub-Hook-ID": "292430182",
        "User-Agent": "GitHub-Hookshot/044aadd",
        "Content-Type": "application/json",
    }
    if signature is not None:
        headers["X-Hub-Signature-256"] = sign(body, SECRET) if signature == "sign" else signature
    return client.post("/webhook", data=body, headers=headers)


def label(client: FlaskClient, **kwargs: Any) -> TestResponse:
    return deliver(client, "issues", webhook_bytes("issues", "labeled.payload.json"), **kwargs)


def the_run(services: TestServices, response: TestResponse) -> Run:
    """The run a 202 answer names."""
    assert response.status_code == 202, response.get_data(as_text=True)
    run = services.store.get_run(response.get_json()["run_id"])
    assert run is not None
    return run


# --- the webhook -----------------------------------------------------------------------------


def test_a_ping_gets_200(client: FlaskClient) -> None:
    response = deliver(client, "ping", webhook_bytes("ping"))
    assert response.status_code == 200


def test_the_label_queues_a_solve_run(client: FlaskClient, services: TestServices) -> None:
    response = label(client, delivery_id="d-label")
    run = the_run(services, response)
    assert (run.status, run.command, run.source) == ("queued", "solve", "label")
    assert (run.repository, run.issue_number) == ("Codertocat/Hello-World", 1)
    assert run.actor == "Codertocat"
    assert run.delivery_id == "d-label"
    assert services.queue.enqueued == [run.id]
    assert services.store.delivery_outcome("d-label") == "solve"


def test_a_redelivery_gets_200_and_no_second_run(
    client: FlaskClient, services: TestServices
) -> None:
    first = label(client, delivery_id="d-same")
    again = label(client, delivery_id="d-same")
    assert (first.status_code, again.status_code) == (202, 200)
    assert len(services.store.list_runs()) == 1 and len(services.queue.enqueued) == 1


def test_an_event_that_triggers_nothing_gets_204_and_is_recorded(
    client: FlaskClient, services: TestServices
) -> None:
    body = webhook_bytes("issues", "opened.payload.json")
    assert deliver(client, "issues", body, delivery_id="d-open").status_code == 204
    assert services.store.delivery_outcome("d-open") == "ignored"
    assert services.store.list_runs() == [] and services.queue.enqueued == []


def test_a_solve_comment_on_a_pull_request_queues_a_run_with_instructions(
    client: FlaskClient, services: TestServices
) -> None:
    body = comment_body("/cra solve make it faster", pull_request=True)
    run = the_run(services, deliver(client, "issue_comment", body))
    assert (run.command, run.source, run.is_pull_request) == ("solve", "comment", True)
    assert run.instructions == "make it faster"
    assert run.trigger_comment_id == 492700400


def test_a_bot_sender_is_ignored(client: FlaskClient, services: TestServices) -> None:
    def by_bot(payload: Payload) -> None:
        payload["sender"]["type"] = "Bot"

    body = changed("issues", "labeled.payload.json", by_bot)
    assert deliver(client, "issues", body).status_code == 204
    assert services.store.list_runs() == []


@pytest.mark.parametrize("field,value", [("state", "closed"), ("locked", True)])
def test_a_closed_or_locked_issue_is_ignored(
    client: FlaskClient, services: TestServices, field: str, value: object
) -> None:
    def close(payload: Payload) -> None:
        payload["issue"][field] = value

    body = changed("issues", "labeled.payload.json", close)
    assert deliver(client, "issues", body).status_code == 204
    assert services.store.list_runs() == []


def test_an_unknown_command_queues_a_help_reply(
    client: FlaskClient, services: TestServices
) -> None:
    run = the_run(services, deliver(client, "issue_comment", comment_body("/cra dance")))
    assert run.command == "help"
    assert run.reply_text is not None and "/cra solve" in run.reply_text
    assert services.queue.enqueued == [run.id]


def test_a_workflow_dispatch_queues_a_run_for_its_inputs(
    client: FlaskClient, services: TestServices
) -> None:
    def inputs(payload: Payload) -> None:
        payload["inputs"] = {"issue_number": "12", "instructions": "keep the API"}

    body = changed("workflow_dispatch", "payload.json", inputs)
    run = the_run(services, deliver(client, "workflow_dispatch", body))
    assert (run.source, run.repository, run.issue_number) == ("dispatch", "octo-org/octo-repo", 12)
    assert run.instructions == "keep the API"


def test_a_second_solve_while_one_is_active_gets_a_busy_reply(
    client: FlaskClient, services: TestServices
) -> None:
    active = the_run(services, label(client))
    busy = the_run(services, deliver(client, "issue_comment", comment_body("/cra solve")))
    assert (busy.command, busy.related_run_id) == ("busy", active.id)
    assert busy.reply_text is not None and f"#{active.id}" in busy.reply_text
    assert services.queue.enqueued == [active.id, busy.id]
    assert services.store.active_run("Codertocat/Hello-World", 1) == active


def test_a_burst_of_deliveries_on_a_busy_issue_gets_one_busy_reply(
    client: FlaskClient, services: TestServices
) -> None:
    active = the_run(services, label(client))
    first = the_run(services, deliver(client, "issue_comment", comment_body("/cra solve")))
    later = [label(client) for _ in range(20)]
    assert {r.status_code for r in later} == {200}
    assert all(r.get_json() == {"busy": True} for r in later)
    assert services.queue.enqueued == [active.id, first.id]
    busy = [r for r in services.store.list_runs(limit=100) if r.command == "busy"]
    assert [r.id for r in busy] == [first.id]
    lines = metric_lines(client)
    assert 'cra_webhook_deliveries_total{event="issues",outcome="busy"} 20' in lines


def test_a_new_active_run_gets_its_own_busy_reply(
    client: FlaskClient, services: TestServices
) -> None:
    old = the_run(services, label(client))
    the_run(services, label(client))
    services.store.finish_run(old.id, "succeeded")
    new = the_run(services, label(client))
    busy = the_run(services, label(client))
    assert (busy.command, busy.related_run_id) == ("busy", new.id)


def test_cancel_asks_the_active_run_to_stop_and_queues_a_reply(
    client: FlaskClient, services: TestServices
) -> None:
    active = the_run(services, label(client))
    services.store.claim_run(active.id)
    cancel = the_run(services, deliver(client, "issue_comment", comment_body("/cra cancel")))
    assert services.store.cancel_requested(active.id)
    assert (cancel.command, cancel.related_run_id) == ("cancel", active.id)
    assert cancel.reply_text is not None and f"#{active.id}" in cancel.reply_text


class RunEndsFirst(BotStore):
    """A store whose run's worker finishes it just before each cancel request reaches it."""

    def request_cancel(self, run_id: int, *, stale_before: datetime | None = None) -> bool:
        self.finish_run(run_id, "succeeded")
        return super().request_cancel(run_id, stale_before=stale_before)


def test_a_cancel_that_arrives_as_the_run_ends_says_it_had_ended(settings: BotSettings) -> None:
    with RunEndsFirst.open(settings.database_url) as store:
        services = TestServices(store)
        client = create_app(settings, services).test_client()
        active = the_run(services, label(client))
        services.store.claim_run(active.id)
        cancel = the_run(services, deliver(client, "issue_comment", comment_body("/cra cancel")))
    assert cancel.reply_text is not None
    assert (
        f"run #{active.id} had already ended (succeeded): there was nothing left to cancel"
        in cancel.reply_text
    ), cancel.reply_text
    assert "stopping" not in cancel.reply_text.lower()


def test_cancel_without_an_active_run_says_so(client: FlaskClient, services: TestServices) -> None:
    cancel = the_run(services, deliver(client, "issue_comment", comment_body("/cra cancel")))
    assert cancel.related_run_id is None
    assert cancel.reply_text is not None and "no cra run to cancel" in cancel.reply_text


def test_a_run_is_answered_202_even_when_the_queue_fails(
    settings: BotSettings, services: TestServices
) -> None:
    class BrokenQueue(RecordingQueue):
        def enqueue(self, run_id: int) -> None:
            raise ConnectionError("redis is down")

    services.queue = BrokenQueue()
    run = the_run(services, label(create_app(settings, services).test_client()))
    assert run.status == "queued"  # recovery enqueues it again


# --- health and metrics ----------------------------------------------------------------------


def test_healthz_reports_ok(client: FlaskClient) -> None:
    response = client.get("/healthz")
    assert (response.status_code, response.get_json()) == (
        200,
        {"status": "ok", "database": "ok", "queue": "ok", "stuck_runs": 0, "stuck_run_ids": []},
    )


def test_healthz_is_503_naming_the_queue_when_it_is_down(
    client: FlaskClient, services: TestServices
) -> None:
    services.queue.is_healthy = False
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.get_json()["database"] == "ok" and response.get_json()["queue"] != "ok"
    assert response.get_json()["status"] == "error"


def metric_lines(client: FlaskClient) -> list[str]:
    response = client.get("/metrics")
    assert response.status_code == 200 and response.mimetype == "text/plain"
    return [line for line in response.get_data(as_text=True).splitlines() if line]


def test_metrics_are_prometheus_text(client: FlaskClient) -> None:
    label(client)
    deliver(client, "issues", webhook_bytes("issues", "opened.payload.json"))
    for line in metric_lines(client):
        assert line.startswith("# HELP ") or line.startswith("# TYPE ") or SAMPLE.match(line), line


def test_metrics_count_deliveries_runs_and_tokens(
    client: FlaskClient, settings: BotSettings
) -> None:
    label(client)
    label(client, signature=None)
    with RunLog.open(settings.database_url) as log:
        log.record_llm_call(
            LLMCallRecord(
                stage="plan",
                role="reasoning",
                model="m",
                system_prompt="",
                user_prompt="",
                prompt_tokens=30,
                completion_tokens=12,
            )
        )
    lines = metric_lines(client)
    assert 'cra_webhook_deliveries_total{event="issues",outcome="solve"} 1' in lines
    assert 'cra_webhook_deliveries_total{event="unknown",outcome="unauthorized"} 1' in lines
    assert 'cra_runs{status="queued"} 1' in lines and 'cra_runs{status="failed"} 0' in lines
    assert 'cra_run_duration_seconds_bucket{le="+Inf"} 0' in lines
    assert 'cra_model_tokens_total{role="reasoning"} 42' in lines


def test_an_event_name_nobody_sends_is_counted_as_other(client: FlaskClient) -> None:
    for n in range(3):
        deliver(client, f"made-up-event-{n}", b'{"action": "x"}')
    lines = metric_lines(client)
    assert 'cra_webhook_deliveries_total{event="other",outcome="ignored"} 3' in lines
    assert not any("made-up-event" in line for line in lines)


def test_metrics_from_loopback_need_no_token(client: FlaskClient) -> None:
    assert client.get("/metrics", environ_base={"REMOTE_ADDR": "::1"}).status_code == 200


def test_metrics_from_elsewhere_without_a_token_are_refused(client: FlaskClient) -> None:
    response = client.get("/metrics", environ_base={"REMOTE_ADDR": "203.0.113.9"})
    assert response.status_code == 403 and "CRA_METRICS_TOKEN" in response.get_json()["error"]


def test_metrics_through_a_proxy_on_loopback_are_refused(client: FlaskClient) -> None:
    response = client.get("/metrics", headers={"X-Forwarded-For": "203.0.113.9"})
    assert response.status_code == 403


@pytest.fixture
def token_client(settings: BotSettings, services: TestServices) -> FlaskClient:
    with_token = settings.model_copy(update={"metrics_token": SecretStr("m3trics-t0ken")})
    return create_app(with_token, services).test_client()


@pytest.mark.parametrize("header", [None, "Bearer wrong", "m3trics-t0ken", "Basic m3trics-t0ken"])
def test_metrics_with_a_token_set_refuse_any_other_credentials(
    token_client: FlaskClient, header: str | None
) -> None:
    headers = {"Authorization": header} if header else {}
    response = token_client.get("/metrics", headers=headers)  # from loopback, too
    assert response.status_code == 401 and response.headers["WWW-Authenticate"].startswith("Bearer")


def test_metrics_with_the_bearer_token_answer_from_anywhere(token_client: FlaskClient) -> None:
    response = token_client.get(
        "/metrics",
        headers={"Authorization": "Bearer m3trics-t0ken"},
        environ_base={"REMOTE_ADDR": "203.0.113.9"},
    )
    assert response.status_code == 200 and "cra_runs" in response.get_data(as_text=True)


# --- creation --------------------------------------------------------------------------------


def test_the_app_refuses_to_start_without_a_webhook_secret(
    settings: BotSettings, services: TestServices
) -> None:
    with pytest.raises(SettingsError):
        create_app(settings.model_copy(update={"webhook_secret": None}), services)


def test_insecure_dev_accepts_unsigned_deliveries(
    settings: BotSettings, services: TestServices
) -> None:
    dev = settings.model_copy(update={"webhook_secret": None, "insecure_dev": True})
    client = create_app(dev, services).test_client()
    assert label(client, signature=None).status_code == 202


def test_the_rq_queue_needs_a_redis_url(settings: BotSettings) -> None:
    with pytest.raises(SettingsError, match="CRA_REDIS_URL"):
        build_queue(settings.model_copy(update={"queue": "rq"}), lambda run_id: None)


def test_the_built_services_serve_the_app_and_their_thread_workers_execute_its_runs(
    settings: BotSettings,
) -> None:
    executed: list[int] = []
    server = settings.model_copy(update={"token": SecretStr("t0k"), "sandbox": "none"})
    built = build_services(server, execute=lambda run_id, services: executed.append(run_id))
    app = create_app(server, built)
    try:
        run_id = label(app.test_client()).get_json()["run_id"]
        assert built.queue.drain(timeout=10)  # type: ignore[attr-defined]
        assert executed == [run_id]
        assert app.test_client().get("/healthz").status_code == 200
    finally:
        built.close()


RECORDED = sorted(
    (path.parent.name, path.name)
    for path in (Path(__file__).parents[2] / "fixtures" / "github-webhooks").glob("*/*.json")
)
# Where each delivery that can say a command has its text.
SAYING = {
    ("issue_comment", "created.payload.json"): "comment",
    ("pull_request_review_comment", "created.payload.json"): "comment",
    ("pull_request_review", "submitted.payload.json"): "review",
}
COMMENTED = [(event, file) for event, file in RECORDED if (event, file) in SAYING]
DELIVERIES = [(event, file, None) for event, file in RECORDED] + [
    (event, file, command)
    for event, file in COMMENTED
    for command in ("/cra solve keep it small", "/cra cancel", "/cra")
]


@pytest.mark.parametrize(
    ("event", "file", "command"),
    DELIVERIES,
    ids=[f"{e}/{f}" + (f" {c}" if c else "") for e, f, c in DELIVERIES],
)
def test_every_recorded_delivery_is_answered_and_recorded(
    client: FlaskClient,
    services: TestServices,
    event: str,
    file: str,
    command: str | None,
) -> None:
    """Each real payload, and the new comments and reviews saying /cra commands: an answer
    GitHub counts as delivered, and a run only where one was asked for."""

    def change(payload: Payload) -> None:
        if command is not None:
            payload[SAYING[event, file]]["body"] = command

    response = deliver(client, event, changed(event, file, change))

    assert response.status_code in (200, 202, 204), response.get_data(as_text=True)
    asked = (event, file) == ("issues", "labeled.payload.json") or command is not None
    runs = services.store.list_runs()
    assert (response.status_code == 202) == asked == (len(runs) == 1), (response.status_code, runs)
