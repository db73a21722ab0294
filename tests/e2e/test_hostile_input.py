"""Hostile but signed input gets a 4xx with a reason at the door, never a 5xx, and no run:
ids beyond what a database column holds, wrong types, repository names that are not
owner/name, absurd logins (issue 11). Built from the recorded deliveries."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.bot_world import REPO, BotWorld
from tests.fakes.github_server import FakeGitHub
from tests.fakes.model_server import ScriptedModelServer
from tests.test_store import postgres_schema_url

Change = Callable[[dict[str, Any]], None]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[BotWorld]:
    with FakeGitHub() as fake, ScriptedModelServer() as models:
        w = BotWorld(tmp_path, fake, models)
        try:
            yield w
        finally:
            w.close()


def labeled(world: BotWorld, change: Change) -> dict[str, Any]:
    data = world.payload("issues", "labeled.payload.json")
    data["label"]["name"] = "cra"
    data["issue"]["number"] = 1
    change(data)
    return data


def commented(world: BotWorld, change: Change) -> dict[str, Any]:
    data = world.payload("issue_comment", "created.payload.json")
    data["issue"]["number"] = 1
    data["comment"]["body"] = "/cra solve"
    data["comment"]["user"]["login"] = data["sender"]["login"] = "Codertocat"
    change(data)
    return data


def setter(*path: str, value: Any) -> Change:
    def change(data: dict[str, Any]) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


LABELED: dict[str, tuple[Change, str]] = {
    "installation id 2^63": (setter("installation", "id", value=2**63), "installation.id"),
    "installation id 2^70": (setter("installation", "id", value=2**70), "installation.id"),
    "installation id negative": (setter("installation", "id", value=-5), "installation.id"),
    "installation id a string": (setter("installation", "id", value="12"), "installation.id"),
    "issue number 2^70": (setter("issue", "number", value=2**70), "issue number"),
    "issue number 2^31": (setter("issue", "number", value=2**31), "issue number"),
    "full_name without a slash": (setter("repository", "full_name", value="Hello-World"),
                                  "owner/name"),
    "full_name with two slashes": (setter("repository", "full_name", value="a/b/c"),
                                   "owner/name"),
    "full_name absurdly long": (setter("repository", "full_name", value="o/" + "x" * 5000),
                                "owner/name"),
    "full_name with a dot-dot": (setter("repository", "full_name", value="../etc"),
                                 "owner/name"),
    "full_name with spaces": (setter("repository", "full_name", value="own er/na me"),
                              "owner/name"),
    "sender login absurd": (setter("sender", "login", value="x" * 300), "sender.login"),
    "issue number negative": (setter("issue", "number", value=-1), "issue number"),
    "issue number a string": (setter("issue", "number", value="1"), "issue.number"),
    "issue number a bool": (setter("issue", "number", value=True), "issue.number"),
    "issue a string": (setter("issue", value="1"), "issue is not an object"),
    "installation a string": (setter("installation", value="12"), "installation.id"),
    "installation without an id": (setter("installation", value={}), "installation.id"),
}


@pytest.mark.parametrize("name", list(LABELED))
def test_a_hostile_labeled_delivery_is_422_with_a_reason_and_no_run(
    world: BotWorld, name: str,
) -> None:
    change, reason = LABELED[name]

    response = world.deliver("issues", labeled(world, change))

    assert response.status_code == 422, response.get_data(as_text=True)
    assert reason in response.get_json()["error"]
    assert world.services.store.list_runs() == []
    assert world.services.store.count_deliveries() == 0  # GitHub may redeliver it, fixed


@pytest.mark.parametrize("value", [2**63, 2**70, 0, -1, "7", 1.5])
def test_a_comment_id_out_of_range_or_not_an_integer_is_422(
    world: BotWorld, value: object,
) -> None:
    response = world.deliver("issue_comment",
                             commented(world, setter("comment", "id", value=value)))

    assert response.status_code == 422, response.get_data(as_text=True)
    assert "comment.id" in response.get_json()["error"]
    assert world.services.store.list_runs() == []


def test_a_comment_in_range_still_runs(world: BotWorld) -> None:
    response = world.deliver("issue_comment",
                             commented(world, setter("comment", "id", value=2**63 - 1)))

    assert response.status_code == 202, response.get_data(as_text=True)


def test_a_valid_delivery_after_hostile_ones_still_runs(world: BotWorld) -> None:
    for change, _ in LABELED.values():
        assert world.deliver("issues", labeled(world, change)).status_code == 422
    world.script_fix()

    run = world.run(world.label_issue())

    assert run.status == "succeeded" and run.repository == REPO


@pytest.mark.parametrize("path", ["/runs/99999999999999999999", "/runs/9223372036854775808",
                                  "/runs/0", "/runs/-1", "/runs/1e9", "/runs/abc"])
def test_run_pages_of_impossible_ids_are_404(tmp_path: Path, path: str) -> None:
    with FakeGitHub() as fake, ScriptedModelServer() as models:
        world = BotWorld(tmp_path, fake, models, run_pages="public")
        try:
            assert world.client.get(path).status_code == 404
            assert world.client.get(path + "?format=json").status_code == 404
        finally:
            world.close()


def test_private_run_pages_of_impossible_ids_ask_to_sign_in(world: BotWorld) -> None:
    assert world.client.get("/runs/99999999999999999999").status_code == 401


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BotWorld]:
    """A bot on SQLite, or on a fresh PostgreSQL schema (whose text columns refuse NUL)."""
    with ExitStack() as stack:
        fake = stack.enter_context(FakeGitHub())
        models = stack.enter_context(ScriptedModelServer())
        overrides = {}
        if request.param == "postgres":
            schemas = postgres_schema_url(request.getfixturevalue("postgres_url"))
            stack.callback(schemas.close)
            overrides["database_url"] = next(schemas)
        w = BotWorld(tmp_path, fake, models, **overrides)
        stack.callback(w.close)
        yield w


def test_an_action_with_a_nul_is_400_with_a_reason(any_world: BotWorld) -> None:
    data = labeled(any_world, setter("action", value="labeled\x00"))

    response = any_world.deliver("issues", data)

    assert response.status_code == 400, response.get_data(as_text=True)
    assert "action is not a GitHub action" in response.get_json()["error"]
    assert any_world.services.store.count_deliveries() == 0


@pytest.mark.parametrize(("event", "delivery", "reason"), [
    ("issues\x00", "d-1", "X-GitHub-Event is not an event name"),
    ("x" * 5000, "d-1", "X-GitHub-Event is not an event name"),
    ("issues", "d\x00-1", "X-GitHub-Delivery holds control characters"),
])
def test_headers_no_github_delivery_has_are_400_with_a_reason(
    any_world: BotWorld, event: str, delivery: str, reason: str,
) -> None:
    response = any_world.deliver(event, labeled(any_world, lambda data: None), delivery=delivery)

    assert response.status_code == 400, response.get_data(as_text=True)
    assert reason in response.get_json()["error"]
    assert any_world.services.store.count_deliveries() == 0
    any_world.script_fix()
    assert any_world.run(any_world.label_issue()).status == "succeeded"  # nothing was lost
