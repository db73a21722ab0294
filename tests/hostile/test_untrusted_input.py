"""Untrusted input at the door and in what the bot writes: unsigned, wrongly signed or malformed
deliveries, signed deliveries with hostile fields (ids beyond a column, wrong types, names that
are not owner/name, NUL bytes), `/cra` commands inside code, oversized output for GitHub, and a
model answering garbage. Each gets a 4xx with a reason, no run, or an honest bounded answer."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import TestResponse

from bot.intake.webhooks import sign
from bot.render.fit import PR_BODY_LIMIT
from bot.render.pr import compose_pr_body
from tests.bot.intake.test_command_line import routed_comment
from tests.bot.render.test_pr import DIFF, ctx, markup_problems, result, validation
from tests.e2e.bot_world import REPO, SECRET, BotWorld
from tests.e2e.test_honest_gate import cra_solve
from tests.fakes.github_server import FakeGitHub
from tests.fakes.model_server import Reply, ScriptedModelServer, garbage
from tests.fakes.repos import git_in
from tests.runlog.test_store import postgres_schema_url

Change = Callable[[dict[str, Any]], None]


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
    "full_name without a slash": (
        setter("repository", "full_name", value="Hello-World"),
        "owner/name",
    ),
    "full_name with two slashes": (setter("repository", "full_name", value="a/b/c"), "owner/name"),
    "full_name absurdly long": (
        setter("repository", "full_name", value="o/" + "x" * 5000),
        "owner/name",
    ),
    "full_name with a dot-dot": (setter("repository", "full_name", value="../etc"), "owner/name"),
    "full_name with spaces": (
        setter("repository", "full_name", value="own er/na me"),
        "owner/name",
    ),
    "sender login absurd": (setter("sender", "login", value="x" * 300), "sender.login"),
    "issue number negative": (setter("issue", "number", value=-1), "issue number"),
    "issue number a string": (setter("issue", "number", value="1"), "issue.number"),
    "issue number a bool": (setter("issue", "number", value=True), "issue.number"),
    "issue a string": (setter("issue", value="1"), "issue is not an object"),
    "installation a string": (setter("installation", value="12"), "installation.id"),
    "installation without an id": (setter("installation", value={}), "installation.id"),
}


@pytest.mark.parametrize("name", list(LABELED))
def test_attack_hostile_field_in_a_signed_delivery_is_422_with_no_run(
    world: BotWorld,
    name: str,
) -> None:
    change, reason = LABELED[name]

    response = world.deliver("issues", labeled(world, change))

    assert response.status_code == 422, response.get_data(as_text=True)
    assert reason in response.get_json()["error"]
    assert world.services.store.list_runs() == []
    assert world.services.store.count_deliveries() == 0  # GitHub may redeliver it, fixed


@pytest.mark.parametrize("value", [2**63, 2**70, 0, -1, "7", 1.5])
def test_attack_comment_id_out_of_range_is_422(
    world: BotWorld,
    value: object,
) -> None:
    response = world.deliver(
        "issue_comment", commented(world, setter("comment", "id", value=value))
    )

    assert response.status_code == 422, response.get_data(as_text=True)
    assert "comment.id" in response.get_json()["error"]
    assert world.services.store.list_runs() == []


def test_control_a_comment_id_in_range_still_runs(world: BotWorld) -> None:
    response = world.deliver(
        "issue_comment", commented(world, setter("comment", "id", value=2**63 - 1))
    )

    assert response.status_code == 202, response.get_data(as_text=True)


def test_control_a_valid_delivery_after_hostile_ones_still_runs(world: BotWorld) -> None:
    for change, _ in LABELED.values():
        assert world.deliver("issues", labeled(world, change)).status_code == 422
    world.script_fix()

    run = world.run(world.label_issue())

    assert run.status == "succeeded" and run.repository == REPO


@pytest.mark.parametrize(
    "path",
    [
        "/runs/99999999999999999999",
        "/runs/9223372036854775808",
        "/runs/0",
        "/runs/-1",
        "/runs/1e9",
        "/runs/abc",
    ],
)
def test_attack_run_page_of_an_impossible_id_is_404(tmp_path: Path, path: str) -> None:
    with FakeGitHub() as fake, ScriptedModelServer() as models:
        world = BotWorld(tmp_path, fake, models, run_pages="public")
        try:
            assert world.client.get(path).status_code == 404
            assert world.client.get(path + "?format=json").status_code == 404
        finally:
            world.close()


def test_attack_private_run_page_of_an_impossible_id_asks_to_sign_in(world: BotWorld) -> None:
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


def test_attack_action_with_a_nul_is_400(any_world: BotWorld) -> None:
    data = labeled(any_world, setter("action", value="labeled\x00"))

    response = any_world.deliver("issues", data)

    assert response.status_code == 400, response.get_data(as_text=True)
    assert "action is not a GitHub action" in response.get_json()["error"]
    assert any_world.services.store.count_deliveries() == 0


@pytest.mark.parametrize(
    ("event", "delivery", "reason"),
    [
        ("issues\x00", "d-1", "X-GitHub-Event is not an event name"),
        ("x" * 5000, "d-1", "X-GitHub-Event is not an event name"),
        ("issues", "d\x00-1", "X-GitHub-Delivery holds control characters"),
    ],
)
def test_attack_headers_no_github_delivery_has_are_400(
    any_world: BotWorld,
    event: str,
    delivery: str,
    reason: str,
) -> None:
    response = any_world.deliver(event, labeled(any_world, lambda data: None), delivery=delivery)

    assert response.status_code == 400, response.get_data(as_text=True)
    assert reason in response.get_json()["error"]
    assert any_world.services.store.count_deliveries() == 0
    any_world.script_fix()
    assert any_world.run(any_world.label_issue()).status == "succeeded"  # nothing was lost


# --- the signature and the body ------------------------------------------------------------------


def labeled_body(world: BotWorld) -> bytes:
    return json.dumps(labeled(world, lambda data: None)).encode()


def post(world: BotWorld, body: bytes, signature: str | None) -> TestResponse:
    headers = {
        "X-GitHub-Event": "issues",
        "X-GitHub-Delivery": "d-hostile",
        "Content-Type": "application/json",
    }
    if signature is not None:
        headers["X-Hub-Signature-256"] = signature
    return world.client.post("/webhook", data=body, headers=headers)


def test_attack_unsigned_delivery_is_401_with_nothing_stored(world: BotWorld) -> None:
    assert post(world, labeled_body(world), None).status_code == 401
    assert world.services.store.count_deliveries() == 0
    assert world.services.store.list_runs() == []


@pytest.mark.parametrize("signature", ["sha256=" + "0" * 64, "sha1=abc", "garbage", ""])
def test_attack_delivery_with_a_forged_signature_is_401(world: BotWorld, signature: str) -> None:
    assert post(world, labeled_body(world), signature).status_code == 401
    assert world.services.store.count_deliveries() == 0


def test_attack_delivery_signed_with_another_secret_is_401(world: BotWorld) -> None:
    body = labeled_body(world)
    assert post(world, body, sign(body, "not-" + SECRET)).status_code == 401
    assert world.services.store.count_deliveries() == 0


@pytest.mark.parametrize("body", [b"{oops", b"[]", b"\xef\xbb\xbf{}", b"\xff\xfe", b""])
def test_attack_signed_malformed_json_is_400(world: BotWorld, body: bytes) -> None:
    response = post(world, body, sign(body, SECRET))
    assert response.status_code == 400, response.get_data(as_text=True)
    assert world.services.store.count_deliveries() == 0


# --- commands in code ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "`\n/cra solve\n`",  # a single backtick span over lines
        "see `this\n/cra solve\nand that` here",  # opened and closed mid-line
        "``\n/cra solve\n``",  # double backticks
        "``a ` b\n/cra solve\n``",  # a shorter run inside does not close it
        "x ```\n/cra solve\ny ``` z",  # triple backticks that are no fence (text before them)
        "```js`\n/cra solve\n```js`",  # a backtick in the info string: no fence, inline code
        "`one`, then `two\n/cra solve\nthree`",  # a later span on the same line
        "`a\n\n`b\n/cra solve\n`",  # the paragraph's own span, after one left open before
        "`\n  /cra solve\n`",  # indented a little
        "\\\\`\n/cra solve\n`",  # an escaped backslash escapes no backtick
        "- `item\n/cra solve`",  # a list item's lazy continuation line
        "a ````\n/cra solve\nb ```` c",  # four backticks, closed mid-line
    ],
    ids=[
        "single",
        "mid-line",
        "double",
        "shorter-run-inside",
        "triple",
        "info-backtick",
        "second-span",
        "after-paragraph",
        "indented",
        "escaped-backslash",
        "list-item",
        "four",
    ],
)
def test_attack_command_inside_inline_code_spanning_lines_triggers_nothing(text: str) -> None:
    assert routed_comment(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "```\n/cra solve\n```",
        "~~~\n/cra solve\n~~~",
        "~~~~ text\n/cra solve\n~~~~",
        "```\n/cra solve",  # a fence left open runs to the end
        "    /cra solve",
        "text\n\n    /cra solve",
        "\t/cra solve",
    ],
    ids=[
        "backticks",
        "tildes",
        "long-tildes",
        "unclosed-fence",
        "indented",
        "indented-after",
        "tab-indented",
    ],
)
def test_attack_command_in_a_code_block_triggers_nothing(text: str) -> None:
    assert routed_comment(text) is None


# --- what the bot writes -------------------------------------------------------------------------


def test_attack_oversized_diff_is_cut_to_fit_github() -> None:
    lines = "".join(f"+line {i}\n" for i in range(100_000))
    body = compose_pr_body(ctx(result(diff=DIFF + lines)))
    assert len(body) <= PR_BODY_LIMIT
    assert re.search(
        r"… diff truncated: [\d,]+ lines omitted; see the branch `cra/issue-12`\.", body
    )
    assert markup_problems(body) == []


def test_attack_oversized_test_output_is_cut_keeping_its_end() -> None:
    output = "\n".join(f"noise {i}" for i in range(50_000)) + "\n1 failed, 6 passed"
    body = compose_pr_body(ctx(result(final_validation=validation(output=output))))
    assert "1 failed, 6 passed\n```" in body
    assert re.search(r"… [\d,]+ earlier lines omitted\.", body)


# --- the model -----------------------------------------------------------------------------------


MODEL_GARBAGE: dict[str, Reply | str] = {
    "prose instead of JSON or edits": "Sure! I fixed everything. Trust me.",
    "a body that is not JSON": garbage(),
}


@pytest.mark.parametrize("name", list(MODEL_GARBAGE))
def test_attack_model_answering_garbage_fails_the_run_honestly_with_nothing_pushed(
    name: str, tmp_path: Path, isolated_git: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedModelServer() as server:
        server.respond_with(lambda request: MODEL_GARBAGE[name])
        run = cra_solve(
            tmp_path, server, "tests/test_ops.py::test_mul fails: fix mul", capsys=capsys
        )

    assert run.code != 0 and run.out.startswith("status: failed"), run.out
    assert git_in(run.repo, "branch", "--list", "cra/*") == ""
    assert git_in(run.repo, "status", "--porcelain") == ""
