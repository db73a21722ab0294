"""The App's installations at the door: a delivery no App can act on is refused with the reason,
and an installation removed or suspended leaves no stale token or access answer behind."""

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

from bot.access.oauth import AccessCache
from bot.access.signin import EXTENSION as SIGNIN
from bot.errors import NotFound, PermissionDenied
from bot.intake.installations import InstallationChange
from bot.intake.webhooks import sign
from bot.queue.queues import check_health
from bot.services import Services, build_services
from bot.settings import BotSettings
from bot.store.installations import Installations
from bot.store.runs import BotStore
from bot.web.app import create_app
from tests.bot.web.test_app import RecordingQueue
from tests.fakes.github_server import FakeGitHub
from tests.fixtures import webhook_bytes

SECRET = "webhook-secret"
INSTALLATION = 2  # installation/deleted.payload.json's
ACCOUNT_REPO = "octocat/Hello-World"  # its account's repository
REPO = "acme/calc"  # the repository the worker works on


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
        "webhook_secret": SECRET,
        "label": "bug",
        "data_dir": tmp_path,
        "sandbox": "none",
        "database_url": f"sqlite:///{tmp_path / 'cra.db'}",
        "app_id": 12345,
    }
    if gh is not None:
        fields.update(
            app_id=gh.app_id,
            private_key=gh.private_key_pem,
            github_api_url=gh.api_url,
            github_url=gh.git_url,
        )
    return BotSettings(**{**fields, **changes})


@pytest.fixture
def store(tmp_path: Path) -> Iterator[BotStore]:
    with BotStore.open(f"sqlite:///{tmp_path / 'cra.db'}") as bot_store:
        yield bot_store


def door(settings: BotSettings, store: BotStore) -> Flask:
    return create_app(settings, DoorServices(store))


def deliver(
    client: FlaskClient, event: str, body: bytes, delivery_id: str | None = None
) -> TestResponse:
    """POST a delivery with GitHub's headers, signed over the exact bytes."""
    return client.post(
        "/webhook",
        data=body,
        headers={
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery_id or str(uuid.uuid4()),
            "Content-Type": "application/json",
            "X-Hub-Signature-256": sign(body, SECRET),
        },
    )


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
    tmp_path: Path,
    store: BotStore,
) -> None:
    client = door(app_settings(tmp_path), store).test_client()

    response = deliver(client, "issues", webhook_bytes("issues", "labeled.payload.json"), "d-1")

    assert response.status_code == 422
    assert "names no App installation" in response.get_json()["error"]
    assert store.list_runs() == []
    assert not store.has_delivery("d-1")  # a redelivery, once the server can act, is no duplicate


@pytest.mark.parametrize("body", ["/cra solve keep it small", "/cra cancel", "/cra help"])
def test_an_app_refuses_every_command_without_an_installation(
    tmp_path: Path,
    store: BotStore,
    body: str,
) -> None:
    client = door(app_settings(tmp_path), store).test_client()
    comment = json.loads(webhook_bytes("issue_comment", "created.payload.json"))
    comment["comment"]["body"] = body

    response = deliver(client, "issue_comment", json.dumps(comment).encode())

    assert response.status_code == 422, response.get_data(as_text=True)
    assert store.list_runs() == []


def test_a_repository_webhook_server_queues_the_same_delivery(
    tmp_path: Path,
    store: BotStore,
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


@pytest.mark.parametrize(
    ("event", "file", "status"),
    [
        ("ping", "payload.json", 200),  # the App's own hook says hello without an installation
        ("issues", "opened.payload.json", 204),  # asks nothing of cra: nothing to refuse
        ("push", "payload.json", 204),
    ],
)
def test_an_app_answers_deliveries_that_ask_for_no_run_as_before(
    tmp_path: Path,
    store: BotStore,
    event: str,
    file: str,
    status: int,
) -> None:
    client = door(app_settings(tmp_path), store).test_client()

    assert deliver(client, event, webhook_bytes(event, file)).status_code == status


# --- an installation removed or suspended ----------------------------------------------------


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub(installation_id=INSTALLATION) as fake:
        fake.add_repo(REPO)
        fake.add_issue(REPO, number=1)
        yield fake


@pytest.fixture
def worker(tmp_path: Path, gh: FakeGitHub) -> Iterator[Services]:
    """A worker's services, as `cra-bot worker` builds them (its own token cache)."""
    services = build_services(app_settings(tmp_path, gh))
    yield services
    services.close()


@pytest.fixture
def client(tmp_path: Path, gh: FakeGitHub, store: BotStore) -> FlaskClient:
    """The webhook server of the same App, on the same database."""
    return door(app_settings(tmp_path, gh), store).test_client()


def minted(gh: FakeGitHub) -> int:
    return sum(1 for r in gh.requests if r.path.endswith("/access_tokens"))


def test_a_worker_keeps_its_cached_token_while_nothing_changes(
    gh: FakeGitHub,
    worker: Services,
) -> None:
    worker.github.issue(REPO, 1, installation_id=INSTALLATION)
    worker.github.issue(REPO, 1, installation_id=INSTALLATION)

    assert minted(gh) == 1


def test_after_installation_deleted_no_worker_uses_the_installations_cached_token(
    gh: FakeGitHub,
    worker: Services,
    client: FlaskClient,
) -> None:
    worker.github.issue(REPO, 1, installation_id=INSTALLATION)  # a token is cached
    gh.remove_installation(INSTALLATION)

    answer = deliver(client, "installation", webhook_bytes("installation", "deleted.payload.json"))

    assert answer.status_code == 204
    with pytest.raises(NotFound, match=f"token for installation {INSTALLATION}"):
        worker.github.issue(REPO, 1, installation_id=INSTALLATION)  # asks GitHub, which says so


def test_after_installation_suspend_no_worker_uses_the_installations_cached_token(
    gh: FakeGitHub,
    worker: Services,
    client: FlaskClient,
) -> None:
    worker.github.issue(REPO, 1, installation_id=INSTALLATION)
    gh.suspend_installation(INSTALLATION)

    deliver(client, "installation", suspension("suspend"))

    with pytest.raises(PermissionDenied, match="suspended"):
        worker.github.issue(REPO, 1, installation_id=INSTALLATION)


def test_after_installation_unsuspend_a_worker_mints_a_new_token_and_works(
    gh: FakeGitHub,
    worker: Services,
    client: FlaskClient,
) -> None:
    gh.suspend_installation(INSTALLATION)
    deliver(client, "installation", suspension("suspend"))
    with pytest.raises(PermissionDenied):
        worker.github.issue(REPO, 1, installation_id=INSTALLATION)
    gh.suspend_installation(INSTALLATION, suspended=False)

    deliver(client, "installation", suspension("unsuspend"))

    assert worker.github.issue(REPO, 1, installation_id=INSTALLATION).number == 1


def access_cache(app: Flask) -> AccessCache:
    cache: AccessCache = app.extensions[SIGNIN].cache
    return cache


def test_installation_deleted_drops_the_access_answers_about_its_accounts_repositories(
    tmp_path: Path,
    store: BotStore,
) -> None:
    app = door(app_settings(tmp_path), store)
    cache = access_cache(app)
    cache.put("mona", ACCOUNT_REPO, True)
    cache.put("mona", "someone-else/repo", True)

    deliver(
        app.test_client(), "installation", webhook_bytes("installation", "deleted.payload.json")
    )

    assert cache.get("mona", ACCOUNT_REPO) is None
    assert cache.get("mona", "someone-else/repo") is True


def test_repositories_removed_from_an_installation_drop_their_access_answers(
    tmp_path: Path,
    store: BotStore,
) -> None:
    app = door(app_settings(tmp_path), store)
    cache = access_cache(app)
    cache.put("mona", "Codertocat/Hello-World", True)
    cache.put("mona", "Codertocat/Other", True)
    removed = [
        {
            "id": 186853002,
            "name": "Hello-World",
            "full_name": "Codertocat/Hello-World",
            "private": False,
        }
    ]

    deliver(
        app.test_client(),
        "installation_repositories",
        changed(
            "installation_repositories",
            "added.payload.json",
            action="removed",
            repositories_added=[],
            repositories_removed=removed,
        ),
    )

    assert cache.get("mona", "Codertocat/Hello-World") is None
    assert cache.get("mona", "Codertocat/Other") is True


def test_each_change_of_an_installation_moves_its_generation_on(db_url: str) -> None:
    with Installations.open(db_url) as installations:
        assert installations.generation(INSTALLATION) == 0
        installations.record(InstallationChange(INSTALLATION, "suspended"))
        installations.record(InstallationChange(INSTALLATION, "active"))
        installations.record(InstallationChange(INSTALLATION, None, repositories=(REPO,)))

        assert installations.generation(INSTALLATION) == 2
        assert installations.generation(INSTALLATION + 1) == 0
