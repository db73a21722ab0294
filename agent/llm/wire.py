"""The wire formats of the model servers, Ollama's /api/chat and OpenAI-compatible
/v1/chat/completions: the URL, the request body, the answer read from a response body."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.config.files import ModelConfig


def chat_url(config: ModelConfig) -> str:
    """The chat endpoint of the provider; a base URL ending in /v1 is not doubled."""
    base = config.base_url.rstrip("/")
    if config.provider == "ollama":
        return f"{base}/api/chat"
    if base.endswith("/v1"):
        return f"{base}/chat/completions"
    return f"{base}/v1/chat/completions"


@dataclass(frozen=True)
class ChatRequest:
    """One call as the caller asks it: the system and user messages, the answer's shape (a
    JSON schema, or JSON of any shape with `json_mode`), and a sample's temperature."""

    system: str
    user: str
    json_schema: dict[str, Any] | None = None
    json_mode: bool = False
    temperature: float | None = None  # a sample's; None: the config's


def _messages(system: str, user: str) -> list[dict[str, str]]:
    """The two chat messages of every call."""
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def ollama_payload(config: ModelConfig, request: ChatRequest) -> dict[str, Any]:
    """An /api/chat body; num_ctx always, since Ollama's 2k default silently truncates."""
    json_schema, json_mode = request.json_schema, request.json_mode
    payload: dict[str, Any] = {
        "model": config.model,
        "messages": _messages(request.system, request.user),
        "stream": False,
        "options": {
            "num_ctx": config.context_window,
            "temperature": _temperature(config, request),
            "num_predict": config.max_tokens,
        },
    }
    if json_schema is not None:
        payload["format"] = json_schema
    elif json_mode:
        payload["format"] = "json"
    return payload


def openai_payload(
    config: ModelConfig, request: ChatRequest, *, schema_supported: bool = True
) -> dict[str, Any]:
    """A /v1/chat/completions body; json_object when the server rejects json_schema."""
    json_schema, json_mode = request.json_schema, request.json_mode
    payload: dict[str, Any] = {
        "model": config.model,
        "messages": _messages(request.system, request.user),
        "temperature": _temperature(config, request),
        "max_tokens": config.max_tokens,
        "stream": False,
    }
    if json_schema is not None and schema_supported:
        payload["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": json_schema},
        }
    elif json_schema is not None or json_mode:
        payload["response_format"] = {"type": "json_object"}
    return payload


def _temperature(config: ModelConfig, request: ChatRequest) -> float:
    return config.temperature if request.temperature is None else request.temperature


def _int_or_none(value: Any) -> int | None:
    """A token count from a response body, or None when absent or not a number."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Answer:
    """What a response body says: the content, token counts, and whether it was cut off."""

    content: str
    prompt_tokens: int | None
    completion_tokens: int | None
    truncated: bool = False  # stopped at max_tokens (finish_reason / done_reason "length")


def extract_answer(provider: str, body: Any) -> Answer:
    """The answer of a response body; KeyError if it has no content.

    A reasoning model's thinking, given beside the content (Ollama's `message.thinking`,
    vLLM's and others' `reasoning_content` / `reasoning`), is kept when the content is empty —
    the model only thought, or spent its every token thinking — as an unclosed `<think>`
    block: recorded, and read by the parsers as a last resort, as a `<think>` the model never
    closed in its content is.
    """
    if not isinstance(body, dict):
        raise KeyError("body is not a JSON object")
    if provider == "ollama":
        message = body["message"]
        prompt, completion = body.get("prompt_eval_count"), body.get("eval_count")
        stop = body.get("done_reason")
    else:
        choice = body["choices"][0]
        message = choice["message"]
        usage = body.get("usage") or {}
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        stop = choice.get("finish_reason")
    content = message["content"]
    if content is None:  # e.g. vLLM with a reasoning parser when the model only "thought"
        content = ""
    if not isinstance(content, str):
        raise KeyError("content is not a string")
    if not content.strip():
        thought = next(
            (
                v
                for key in ("thinking", "reasoning_content", "reasoning")
                if isinstance(v := message.get(key), str) and v.strip()
            ),
            "",
        )
        content = f"<think>{thought}" if thought else content
    return Answer(
        content, _int_or_none(prompt), _int_or_none(completion), truncated=stop == "length"
    )
