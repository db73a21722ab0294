"""The scripted model server's own behaviour, spoken to with plain httpx."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import pytest

from agent.config.files import ModelConfig
from agent.llm.client import HTTPChatModel
from tests.fakes.model_server import (
    NO_SCRIPTED_REPLY,
    ScriptedModelServer,
    fail,
    garbage,
    reply,
    slow,
)

CHAT = {
    "model": "m",
    "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
}


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(models=("qwen", "coder")) as s:
        yield s


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client() as client:
        yield client


def ollama_text(response: httpx.Response) -> str:
    return str(response.json()["message"]["content"])


def test_replies_come_from_the_queue_in_order(server, http):
    server.enqueue("first", "second")
    texts = [ollama_text(http.post(server.url + "/api/chat", json=CHAT)) for _ in range(2)]
    assert texts == ["first", "second"]
    assert server.pending() == 0


def test_stage_scripts_are_matched_on_the_header_before_the_queue(server, http):
    server.enqueue("queued")
    server.script("plan", "planned")
    url = server.url + "/api/chat"
    assert ollama_text(http.post(url, json=CHAT, headers={"X-Cra-Stage": "implement"})) == "queued"
    assert ollama_text(http.post(url, json=CHAT, headers={"X-Cra-Stage": "plan"})) == "planned"


def test_stage_without_script_falls_back_to_the_queue(server, http):
    server.script("plan", "planned")
    server.enqueue("queued")
    response = http.post(server.url + "/api/chat", json=CHAT, headers={"X-Cra-Stage": "other"})
    assert ollama_text(response) == "queued"
    assert server.pending() == 1


def test_no_scripted_reply_answers_500_and_is_recorded(server, http):
    response = http.post(server.url + "/v1/chat/completions", json=CHAT)
    assert response.status_code == 500
    assert response.text == NO_SCRIPTED_REPLY
    assert [r.path for r in server.unscripted] == ["/v1/chat/completions"]


def test_requests_are_recorded_with_path_headers_body_and_stage(server, http):
    server.enqueue("ok")
    http.post(server.url + "/api/chat", json=CHAT, headers={"X-Cra-Stage": "plan"})
    (request,) = server.requests
    assert (request.method, request.path, request.stage) == ("POST", "/api/chat", "plan")
    assert request.body == CHAT
    assert request.headers["x-cra-stage"] == "plan"
    assert (request.system_prompt, request.user_prompt) == ("s", "u")
    assert not request.unscripted


def test_openai_wire_format_with_usage(server, http):
    server.enqueue(reply("hello", usage=(11, 2)))
    body = http.post(server.url + "/v1/chat/completions", json=CHAT).json()
    assert body["choices"][0]["message"]["content"] == "hello"
    assert body["model"] == "m"
    assert body["usage"] == {"prompt_tokens": 11, "completion_tokens": 2, "total_tokens": 13}


def test_usage_fields_are_omitted_unless_scripted(server, http):
    server.enqueue("hello")
    body = http.post(server.url + "/api/chat", json=CHAT).json()
    assert "prompt_eval_count" not in body and "eval_count" not in body


def test_failure_carries_status_and_retry_after(server, http):
    server.enqueue(fail(429, retry_after="3"))
    response = http.post(server.url + "/api/chat", json=CHAT)
    assert response.status_code == 429
    assert response.headers["retry-after"] == "3"


def test_garbage_is_a_200_that_is_not_json(server, http):
    server.enqueue(garbage())
    response = http.post(server.url + "/api/chat", json=CHAT)
    assert response.status_code == 200
    with pytest.raises(ValueError):
        response.json()


def test_model_lists_of_both_apis(server, http):
    tags = http.get(server.url + "/api/tags").json()
    models = http.get(server.url + "/v1/models").json()
    assert [m["name"] for m in tags["models"]] == ["qwen", "coder"]
    assert [m["id"] for m in models["data"]] == ["qwen", "coder"]


def test_reject_json_schema_answers_400_without_using_a_reply(http):
    with ScriptedModelServer(reject_json_schema=True) as server:
        server.enqueue("kept")
        body = {**CHAT, "response_format": {"type": "json_schema", "json_schema": {}}}
        response = http.post(server.url + "/v1/chat/completions", json=body)
        assert response.status_code == 400 and "json_schema" in response.text
        assert server.pending() == 1


@pytest.mark.timeout(10)  # without the wake-up, close() would wait out the 60 s delay
def test_close_wakes_a_delayed_reply_and_joins_its_thread():
    with httpx.Client(timeout=0.1) as client, ScriptedModelServer() as server:
        server.enqueue(slow("late", 60.0))
        with pytest.raises(httpx.ReadTimeout):
            client.post(server.url + "/api/chat", json=CHAT)
    assert len(server.requests) == 1
    assert not [t for t in threading.enumerate() if t.name.startswith("scripted-model")]


def test_url_before_start_is_an_error():
    with pytest.raises(RuntimeError, match="not started"):
        _ = ScriptedModelServer().url


def test_a_responder_answers_what_nothing_scripted_answers() -> None:
    with ScriptedModelServer() as server:
        server.script("plan", "scripted")
        server.respond_with(lambda request: f"echo {request.stage}")
        config = ModelConfig(model="m", base_url=server.url, max_retries=0)
        with HTTPChatModel(config) as model:
            answers = [
                model.complete("s", "u", stage=stage).text for stage in ("plan", "plan", "judge")
            ]
    assert answers == ["scripted", "echo plan", "echo judge"]
