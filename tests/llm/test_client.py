"""HTTPChatModel over real loopback HTTP against the scripted model server."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from agent.config.files import ModelConfig
from agent.errors import LLMError
from agent.llm.client import (
    BACKOFF_CAP_S,
    MAX_ANSWER_BYTES,
    RETRY_AFTER_CAP_S,
    HTTPChatModel,
    backoff_delay,
    parse_retry_after,
)
from agent.llm.thinking import strip_thinking
from agent.llm.wire import chat_url
from tests.fakes.model_server import (
    Reply,
    ScriptedModelServer,
    empty,
    fail,
    garbage,
    reply,
    slow,
)

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
SECRET = "sk-very-secret-key-123"


class RecordingSleep:
    """A sleep that only remembers how long it was asked to wait."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


class StepClock:
    """A monotonic clock advancing a fixed step per reading."""

    def __init__(self, step: float) -> None:
        self.now = 100.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as s:
        yield s


@pytest.fixture
def sleep() -> RecordingSleep:
    return RecordingSleep()


def make_model(
    server: ScriptedModelServer,
    sleep: RecordingSleep,
    *,
    provider: str = "ollama",
    api_key: str | None = None,
    base_url: str | None = None,
    **overrides: Any,
) -> HTTPChatModel:
    config = ModelConfig.model_validate(
        {
            "provider": provider,
            "base_url": base_url or server.url,
            "model": "tiny",
            "context_window": 8192,
            "max_tokens": 256,
            "temperature": 0.2,
            **overrides,
        }
    )
    return HTTPChatModel(config, api_key=api_key, sleep=sleep, clock=StepClock(0.05))


# --- wire formats ----------------------------------------------------------------------------


def test_ollama_request_always_carries_num_ctx_and_sampling_options(server, sleep):
    server.enqueue("hi")
    with make_model(server, sleep) as model:
        model.complete("sys", "usr")
    (request,) = server.requests
    assert request.path == "/api/chat"
    assert request.body["options"] == {"num_ctx": 8192, "temperature": 0.2, "num_predict": 256}
    assert request.body["stream"] is False
    assert request.system_prompt == "sys" and request.user_prompt == "usr"
    assert "format" not in request.body


def test_a_sample_s_temperature_overrides_the_config_s_on_either_wire(server, sleep):
    """A candidate sampled after failed retries is drawn at its own temperature."""
    server.enqueue("a")
    server.enqueue("b")
    with make_model(server, sleep) as model:
        model.complete("s", "u", temperature=0.7)
    with make_model(server, sleep, provider="openai") as model:
        model.complete("s", "u", temperature=0.7)
    ollama, openai = server.requests
    assert ollama.body["options"]["temperature"] == 0.7
    assert openai.body["temperature"] == 0.7


def test_ollama_json_schema_is_sent_as_format(server, sleep):
    server.enqueue('{"ok": true}')
    with make_model(server, sleep) as model:
        model.complete("s", "u", json_schema=SCHEMA)
    assert server.requests[0].body["format"] == SCHEMA


def test_ollama_json_mode_sends_format_json(server, sleep):
    server.enqueue("{}")
    with make_model(server, sleep) as model:
        model.complete("s", "u", json_mode=True)
    assert server.requests[0].body["format"] == "json"


def test_openai_request_carries_json_schema_response_format(server, sleep):
    server.enqueue('{"ok": true}')
    with make_model(server, sleep, provider="openai") as model:
        model.complete("s", "u", json_schema=SCHEMA)
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["max_tokens"] == 256
    assert request.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": SCHEMA},
    }


def test_openai_falls_back_to_json_object_after_schema_rejection_and_remembers(sleep):
    with ScriptedModelServer(reject_json_schema=True) as server:
        server.enqueue('{"ok": true}', '{"ok": false}')
        with make_model(server, sleep, provider="openai") as model:
            first = model.complete("s", "u", json_schema=SCHEMA)
            model.complete("s", "u", json_schema=SCHEMA)
        formats = [r.body["response_format"]["type"] for r in server.requests]
    assert first.text == '{"ok": true}'
    assert formats == ["json_schema", "json_object", "json_object"]
    assert sleep.calls == []


def test_openai_json_mode_sends_json_object(server, sleep):
    server.enqueue("{}")
    with make_model(server, sleep, provider="openai") as model:
        model.complete("s", "u", json_mode=True)
    assert server.requests[0].body["response_format"] == {"type": "json_object"}


def test_openai_base_url_ending_in_v1_is_not_doubled(server, sleep):
    server.enqueue("hi")
    with make_model(server, sleep, provider="openai", base_url=server.url + "/v1/") as model:
        assert model.complete("s", "u").text == "hi"
    assert server.requests[0].path == "/v1/chat/completions"


def test_chat_url_per_provider():
    ollama = ModelConfig(model="m", base_url="http://h:11434/")
    openai = ModelConfig(model="m", provider="openai", base_url="http://h:8000")
    assert chat_url(ollama) == "http://h:11434/api/chat"
    assert chat_url(openai) == "http://h:8000/v1/chat/completions"


def test_stage_is_sent_as_header(server, sleep):
    server.enqueue("hi")
    with make_model(server, sleep) as model:
        model.complete("s", "u", stage="implement")
    assert server.requests[0].headers["x-cra-stage"] == "implement"


# --- API key ---------------------------------------------------------------------------------


def test_bearer_header_sent_when_key_given(server, sleep):
    server.enqueue("hi")
    with make_model(server, sleep, provider="openai", api_key=SECRET) as model:
        model.complete("s", "u")
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"


def test_no_authorization_header_without_key(server, sleep):
    server.enqueue("hi")
    with make_model(server, sleep, provider="openai") as model:
        model.complete("s", "u")
    assert "authorization" not in server.requests[0].headers


def test_api_key_absent_from_error_message_and_repr(server, sleep):
    server.enqueue(fail(401, body=f"invalid key {SECRET}"))
    with make_model(server, sleep, provider="openai", api_key=SECRET) as model:
        with pytest.raises(LLMError) as caught:
            model.complete("s", "u")
        assert SECRET not in repr(model)
    assert SECRET not in str(caught.value)
    assert SECRET not in repr(caught.value)
    assert caught.value.status == 401


# --- retries ---------------------------------------------------------------------------------


def test_429_with_retry_after_sleeps_that_long_then_succeeds(server, sleep):
    server.enqueue(fail(429, retry_after="3"), "done")
    with make_model(server, sleep) as model:
        assert model.complete("s", "u").text == "done"
    assert sleep.calls == [3.0]
    assert len(server.requests) == 2


def test_500_twice_then_success_backs_off_exponentially(server, sleep):
    server.enqueue(fail(500), fail(503), "done")
    with make_model(server, sleep, max_retries=3) as model:
        assert model.complete("s", "u").text == "done"
    assert sleep.calls == [1.0, 2.0]


def test_500_forever_raises_after_max_retries_plus_one_requests(server, sleep):
    server.enqueue(*[fail(500)] * 5)
    with make_model(server, sleep, max_retries=2) as model, pytest.raises(LLMError) as caught:
        model.complete("s", "u")
    assert len(server.requests) == 3
    assert caught.value.status == 500 and caught.value.retryable
    assert "ollama" in str(caught.value) and server.url in str(caught.value)


def test_404_is_not_retried(server, sleep):
    server.enqueue(fail(404, body='{"error": "model \\"tiny\\" not found"}'), "unused")
    with make_model(server, sleep) as model, pytest.raises(LLMError) as caught:
        model.complete("s", "u")
    assert len(server.requests) == 1
    assert sleep.calls == []
    assert caught.value.status == 404 and not caught.value.retryable
    assert "not found" in str(caught.value)


def test_timeout_is_retried_then_raises(server, sleep):
    server.enqueue(slow("late", 1.0), slow("late", 1.0))
    model = make_model(server, sleep, request_timeout=0.2, max_retries=1)
    with model, pytest.raises(LLMError, match="timed out"):
        model.complete("s", "u")
    assert len(server.requests) == 2
    assert sleep.calls == [1.0]


def test_connection_refused_is_retried_then_raises(sleep):
    with ScriptedModelServer() as server:
        url = server.url
    config = ModelConfig(model="tiny", base_url=url, max_retries=1)
    with HTTPChatModel(config, sleep=sleep) as model, pytest.raises(LLMError) as caught:
        model.complete("s", "u")
    assert caught.value.retryable and caught.value.status is None
    assert "failed after 2 attempt(s): the model server is unreachable (ConnectError" in str(
        caught.value
    )
    assert sleep.calls == [1.0]


def test_backoff_doubles_and_is_capped():
    assert [backoff_delay(n, None) for n in range(3)] == [1.0, 2.0, 4.0]
    assert backoff_delay(20, None) == BACKOFF_CAP_S
    assert backoff_delay(0, 7.5) == 7.5


def test_retry_after_accepts_seconds_and_http_date_and_is_capped():
    now = datetime(2024, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("3", now) == 3.0
    assert parse_retry_after("Mon, 01 Jan 2024 12:00:10 GMT", now) == 10.0
    assert parse_retry_after("86400", now) == RETRY_AFTER_CAP_S
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after(None, now) is None


# --- replies ---------------------------------------------------------------------------------


def test_garbage_body_raises_llm_error_without_retry(server, sleep):
    server.enqueue(garbage(), "unused")
    with make_model(server, sleep) as model, pytest.raises(LLMError, match="not JSON"):
        model.complete("s", "u")
    assert len(server.requests) == 1


def test_body_without_content_raises_llm_error(server, sleep):
    server.enqueue(Reply(raw_body=b'{"choices": []}'))
    model = make_model(server, sleep, provider="openai")
    with model, pytest.raises(LLMError, match="without message content"):
        model.complete("s", "u")


def test_empty_reply_is_empty_text_not_an_error(server, sleep):
    server.enqueue(empty())
    with make_model(server, sleep) as model:
        assert model.complete("s", "u").text == ""


def test_think_block_is_stripped_from_text_but_kept_in_raw_text(server, sleep):
    raw = "<think>let me see</think>\n  yes  "
    server.enqueue(raw)
    with make_model(server, sleep, provider="openai") as model:
        response = model.complete("s", "u")
    assert response.text == "yes"
    assert response.raw_text == raw


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ("<THINK>a</Think>answer", "answer"),
        ("<think>a</think> one <think>b\nc</think> two", "one  two"),
        ("<think>still thinking when the tokens ran out", ""),
        ("reasoning whose opening tag was in the template</think>answer", "answer"),
        ("plain", "plain"),
    ],
)
def test_strip_thinking(raw, text):
    assert strip_thinking(raw) == text


def test_usage_comes_from_server_counts(server, sleep):
    server.enqueue(reply("hello", usage=(120, 7)))
    with make_model(server, sleep) as model:
        usage = model.complete("s", "u").usage
    assert (usage.prompt_tokens, usage.completion_tokens) == (120, 7)
    assert not usage.estimated and usage.calls == 1


def test_usage_is_estimated_when_server_omits_counts(server, sleep):
    server.enqueue(reply("hello world", usage=None))
    with make_model(server, sleep, provider="openai") as model:
        usage = model.complete("system " * 50, "user").usage
    assert usage.estimated
    assert usage.prompt_tokens > 100 and usage.completion_tokens > 0


def test_latency_comes_from_the_injected_clock(server, sleep):
    server.enqueue("hi")
    with make_model(server, sleep) as model:
        assert model.complete("s", "u").usage.latency_ms == 50


def test_a_plain_http_model_server_gets_no_ca_bundle_and_https_gets_certifis() -> None:
    import ssl

    from agent.llm.client import _verify, tls_context

    plain = _verify("http://127.0.0.1:11434")
    assert (plain.verify_mode, plain.check_hostname, plain.get_ca_certs()) == (
        ssl.CERT_REQUIRED,
        True,
        [],
    )
    assert _verify("HTTPS://models.example.com") is tls_context()


@pytest.mark.parametrize(
    "body",
    [
        b'{"message": {"content": "x"}, "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"message": {"content": "x"}, "n": ' + b"9" * 5_000 + b"}",
    ],
)
def test_a_body_json_cannot_hold_raises_llm_error(server, sleep, body):
    server.enqueue(Reply(raw_body=body))
    with make_model(server, sleep) as model, pytest.raises(LLMError, match="not JSON"):
        model.complete("s", "u")


# --- cut off, and reasoning models ------------------------------------------------------------


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_an_answer_stopped_at_max_tokens_is_marked_cut_off(server, sleep, provider):
    server.enqueue(Reply(text='{"steps": [', cut_off=True), Reply(text="{}"))
    with make_model(server, sleep, provider=provider) as model:
        cut = model.complete("s", "u")
        whole = model.complete("s", "u")
    assert cut.truncated and not whole.truncated
    assert "raise models.coding.max_tokens" in cut.cut_off("coding", 2048)
    assert whole.cut_off("coding", 2048) == ""


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_a_reasoning_models_thoughts_are_kept_when_it_gave_no_content(server, sleep, provider):
    server.enqueue(
        Reply(text="", thinking='I will answer {"ok": true}', cut_off=True),
        Reply(text="yes", thinking="easy"),
    )
    with make_model(server, sleep, provider=provider) as model:
        only_thought = model.complete("s", "u")
        answered = model.complete("s", "u")
    assert only_thought.raw_text == '<think>I will answer {"ok": true}'  # unclosed: still thinking
    assert only_thought.text == "" and only_thought.truncated
    assert (answered.text, answered.raw_text) == ("yes", "yes")


def test_a_redirect_is_not_followed_and_says_where_it_points(server, sleep):
    server.enqueue(Reply(status=301, redirect="https://models.example/v1"))
    with (
        make_model(server, sleep) as model,
        pytest.raises(
            LLMError,
            match=r"answered 301, a redirect to https://models.example/v1: set "
            "base_url to where the model server is",
        ),
    ):
        model.complete("s", "u")
    assert len(server.requests) == 1


def test_an_answer_with_no_content_names_its_real_status(server, sleep):
    server.enqueue(Reply(status=204, raw_body=b""))
    with make_model(server, sleep) as model, pytest.raises(LLMError, match="answered 204 with"):
        model.complete("s", "u")


def test_an_answer_past_the_size_cap_is_an_error_not_a_memory_fill(server, sleep):
    body = b'{"message": {"content": "' + b"x" * (MAX_ANSWER_BYTES + 1) + b'"}}'
    server.enqueue(Reply(raw_body=body))
    with (
        make_model(server, sleep) as model,
        pytest.raises(LLMError, match="answered 200 with more than 8 MiB: not a model's answer"),
    ):
        model.complete("s", "u")
    assert len(server.requests) == 1
