"""The App's installations at the door: a delivery no App can act on is refused with the reason."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from bot.app import create_app
from bot.queue import check_health
from bot.settings import BotSettings
from bot.store import BotStore
from bot.webhooks import sign
from tests.fakes.github_server import FakeGitHub
from tests.fixtures import webhook_bytes

SECRET = "webhook-secret"


class RecordingQueue:
    """A RunQueue keeping the ids it was given."""

    def __init__(self) -> None:
        self.enqueued: list[int] = []

    def enqueue(self, run_id: int) -> None:
        self.enqueued.append(run_id)

    def healthy(self) -> bool:
        return True

    def close(self) -> None:
        pass


class DoorServices:
    """The app's services: a real store, a recording queue."""

    def __init__(self, store: BotStore) -> None:
        self.store = store
        self.queue = RecordingQueue()

    def health(self) -> dict[str, str]:
        return check_health(self.store, self.queue)


def app_settings(tmp_path: Path, gh: FakeGitHub | None = None, **changes: Any) -> BotSettings:
    """Settings of a GitHub App server (an App id, no CRA_TOKEN) on a SQLite file."""
    fields: dict[str, Any] = {
        "webhook_secret": SECRET, "label": "bug", "data_dir": tmp_path, "sandbox": "none",
        "database_url": f"sqlite:///{tmp_path / 'cra.db'}", "app_id": 12345,
    }  # fmt: skip
    if gh is not None:
        fields.update(app_id=gh.app_id, private_key=gh.private_key_pem,
                      github_api_url=gh.api_url, github_url=gh.git_url)  # fmt: skip
    return BotSettings(**{**fields, **changes})


@pytest.fixture
def store(tmp_path: Path) -> Iterator[BotStore]:
    with BotStore.open(f"sqlite:///{tmp_path / 'cra.db'}") as bot_store:
        yield bot_store


def door(settings: BotSettings, store: BotStore) -> Flask:
    return create_app(settings, DoorServices(store))


def deliver(client: FlaskClient, event: str, body: bytes, delivery_id: str | None = None
            ) -> TestResponse:
    """POST a delivery with GitHub's headers, signed over the exact bytes."""
    return client.post("/webhook", data=body, headers={
        "X-GitHub-Event": event, "X-GitHub-Delivery": delivery_id or str(uuid.uuid4()),
        "Content-Type": "application/json", "X-Hub-Signature-256": sign(body, SECRET),
    })  # fmt: skip


def changed(event: str, file: str, **fields: Any) -> bytes:
    """A recorded payload with some top-level fields set (then signed again)."""
    payload = json.loads(webhook_bytes(event, file))
    payload.update(fields)
    return json.dumps(payload).encode()


def suspension(action: str) -> bytes:
    """The recorded installation.deleted payload as `installation.suspend` or `unsuspend`."""
    payload = json.loads(webhook_bytes("installation", "deleted.payload.json"))
    payload["action"] = action
    suspended = action == "suspend"
    payload["installation"]["suspended_at"] = "2019-05-24T09:10:00Z" if suspended else None
    return json.dumps(payload).encode()


# --- deliveries an App can never act on ------------------------------------------------------


def test_an_app_asked_for_a_run_without_an_installation_answers_422_with_the_reason(
    tmp_path: Path, store: BotStore,
) -> None:
    client = door(app_settings(tmp_path), store).test_client()

    response = deliver(client, "issues", webhook_bytes("issues", "labeled.payload.json"), "d-1")

    assert response.status_code == 422
    assert "names no App installation" in response.get_json()["error"]
    assert store.list_runs() == []
    assert not store.has_delivery("d-1")  # a redelivery, once the server can act, is no duplicate


@pytest.mark.parametrize("body", ["/cra solve keep it small", "/cra cancel", "/cra help"])
def test_an_app_refuses_every_command_without_an_installation(
    tmp_path: Path, store: BotStore, body: str,
) -> None:
    client = door(app_settings(tmp_path), store).test_client()
    comment = json.loads(webhook_bytes("issue_comment", "created.payload.json"))
    comment["comment"]["body"] = body

    response = deliver(client, "issue_comment", json.dumps(comment).encode())

    assert response.status_code == 422, response.get_data(as_text=True)
    assert store.list_runs() == []


def test_a_repository_webhook_server_queues_the_same_delivery(
    tmp_path: Path, store: BotStore,
) -> None:
    settings = app_settings(tmp_path, token="a-repository-token")  # CRA_TOKEN: not the App
    client = door(settings, store).test_client()

    response = deliver(client, "issues", webhook_bytes("issues", "labeled.payload.json"))

    assert response.status_code == 202
    assert [run.installation_id for run in store.list_runs()] == [None]


def test_an_app_queues_a_run_its_installation_asks_for(tmp_path: Path, store: BotStore) -> None:
    review = json.loads(webhook_bytes("pull_request_review_comment", "created.payload.json"))
    review["comment"]["body"] = "/cra solve"
    client = door(app_settings(tmp_path), store).test_client()

    response = deliver(client, "pull_request_review_comment", json.dumps(review).encode())

    assert response.status_code == 202
    assert [run.installation_id for run in store.list_runs()] == [1]


@pytest.mark.parametrize(("event", "file", "status"), [
    ("ping", "payload.json", 200),  # the App's own hook says hello without an installation
    ("issues", "opened.payload.json", 204),  # asks nothing of cra: nothing to refuse
    ("push", "payload.json", 204),
])
def test_an_app_answers_deliveries_that_ask_for_no_run_as_before(
    tmp_path: Path, store: BotStore, event: str, file: str, status: int,
) -> None:
    client = door(app_settings(tmp_path), store).test_client()

    assert deliver(client, event, webhook_bytes(event, file)).status_code == status
