"""The model transport: Ollama /api/chat and OpenAI-compatible /v1/chat/completions over httpx,
with retries (their wire formats are agent.llm.wire)."""

from __future__ import annotations

import functools
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

import certifi
import httpx

from agent.config.files import ModelConfig
from agent.errors import LLMError
from agent.llm.budget import estimate_prompt_tokens, estimate_tokens
from agent.llm.deadline import deadline, with_deadlines
from agent.llm.thinking import strip_thinking
from agent.llm.wire import ChatRequest, chat_url, extract_answer, ollama_payload, openai_payload
from agent.models import LLMResponse, Usage

BACKOFF_BASE_S = 1.0
BACKOFF_CAP_S = 30.0
RETRY_AFTER_CAP_S = 120.0
EXCERPT_CHARS = 300
MAX_ANSWER_BYTES = 8 * 1024 * 1024  # an answer of max_tokens is kilobytes; more is a broken server
RETRYABLE_STATUSES = frozenset({408, 429})
SCHEMA_REJECTED_STATUSES = frozenset({400, 422})


class ChatModel(Protocol):
    """A chat model endpoint answering one system + user prompt."""

    @property
    def config(self) -> ModelConfig:
        """The endpoint, model name, window and sampling of this model."""
        ...

    def complete(
        self,
        system: str,
        user: str,
        *,
        json_schema: dict[str, Any] | None = None,
        json_mode: bool = False,
        stage: str = "",
        temperature: float | None = None,
    ) -> LLMResponse:
        """One answer (sampled at `temperature` when given, else the config's); raises LLMError
        when the call fails for good."""
        ...

    def close(self) -> None:
        """Release the connections."""
        ...


def parse_retry_after(value: str | None, now: datetime) -> float | None:
    """Seconds to wait from a Retry-After header (seconds or HTTP-date), capped; None if absent."""
    if not value or not value.strip():
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - now).total_seconds()
    return min(max(seconds, 0.0), RETRY_AFTER_CAP_S)


def backoff_delay(attempt: int, retry_after: float | None) -> float:
    """The wait before retry number `attempt` + 1: Retry-After when given, else capped doubling."""
    if retry_after is not None:
        return retry_after
    return float(min(BACKOFF_BASE_S * 2**attempt, BACKOFF_CAP_S))


def _excerpt(text: str) -> str:
    """A short single-line excerpt of a response body for error messages."""
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[:EXCERPT_CHARS] + "…"


def _schema_complaint(response: httpx.Response) -> bool:
    """Whether a 400/422 answer is about the response_format / json_schema we sent."""
    if response.status_code not in SCHEMA_REJECTED_STATUSES:
        return False
    body = response.text.lower()
    return "schema" in body or "format" in body


@dataclass(frozen=True)
class _Failure:
    """Why one attempt failed in a retryable way."""

    reason: str
    status: int | None = None
    retry_after: float | None = None


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One verifying TLS context per process (certifi's roots, as httpx's default).

    Building it loads the CA bundle (~0.1 s); every client of a run shares it.
    """
    return ssl.create_default_context(cafile=certifi.where())


def _verify(base_url: str) -> ssl.SSLContext:
    """The TLS context of a client of `base_url`: certifi's roots for https; for plain http
    (a local Ollama, the common case) one that trusts nothing, so that loading the CA bundle
    (0.1–0.3 s) is skipped and any https it were ever sent to would fail, never pass."""
    if base_url.lower().startswith("https:"):
        return tls_context()
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies (CERT_REQUIRED) against no roots


class HTTPChatModel:
    """A ChatModel over HTTP for Ollama or an OpenAI-compatible server, with retries."""

    def __init__(
        self,
        config: ModelConfig,
        *,
        api_key: str | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self._api_key = api_key or None
        self._sleep = sleep
        self._clock = clock
        self._http = with_deadlines(
            httpx.Client(  # request_timeout bounds each attempt whole
                transport=transport, timeout=config.request_timeout, verify=_verify(config.base_url)
            )
        )
        self._schema_supported = True

    def __repr__(self) -> str:
        c = self.config
        return f"HTTPChatModel(provider={c.provider!r}, model={c.model!r}, base_url={c.base_url!r})"

    def __enter__(self) -> HTTPChatModel:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the connection pool."""
        self._http.close()

    def complete(
        self,
        system: str,
        user: str,
        *,
        json_schema: dict[str, Any] | None = None,
        json_mode: bool = False,
        stage: str = "",
        temperature: float | None = None,
    ) -> LLMResponse:
        """One answer, retried on transient failures; LLMError when it fails for good."""
        url = chat_url(self.config)
        headers = self._headers(stage)
        started = self._clock()
        request = ChatRequest(system, user, json_schema, json_mode, temperature)
        response = self._send(url, self._payload(request), headers)
        if json_schema is not None and self._schema_supported and _schema_complaint(response):
            self._schema_supported = False  # this server has no json_schema support; remember
            response = self._send(url, self._payload(request), headers)
        if response.status_code >= 400:
            raise self._error(f"answered {response.status_code}", url, response)
        if response.is_redirect:  # never followed: the body (and a key) would go elsewhere
            where = self._redact(response.headers.get("location", "nowhere"))
            raise self._error(
                f"answered {response.status_code}, a redirect to {where}: set "
                "base_url to where the model server is",
                url,
                response,
            )
        latency_ms = round((self._clock() - started) * 1000)
        return self._answer(url, response, system, user, latency_ms)

    def _payload(self, request: ChatRequest) -> dict[str, Any]:
        """The request body in this provider's wire format."""
        if self.config.provider == "ollama":
            return ollama_payload(self.config, request)
        return openai_payload(self.config, request, schema_supported=self._schema_supported)

    def _headers(self, stage: str) -> dict[str, str]:
        """Request headers: the stage for scripted servers, the bearer key when there is one."""
        headers: dict[str, str] = {}
        if stage:
            headers["X-Cra-Stage"] = stage.encode("ascii", "replace").decode("ascii")
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _send(self, url: str, payload: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
        """POST with retries; returns the first answer that is not retryable (maybe a 4xx)."""
        attempts = self.config.max_retries + 1
        failure = _Failure("no attempt made")
        for attempt in range(attempts):
            if attempt:
                self._sleep(backoff_delay(attempt - 1, failure.retry_after))
            outcome = self._attempt(url, payload, headers)
            if isinstance(outcome, httpx.Response):
                return outcome
            failure = outcome
        status = f" (last status {failure.status})" if failure.status else ""
        raise LLMError(
            self._redact(
                f"{self.config.provider} {url} failed after {attempts} attempt(s){status}: "
                f"{failure.reason}"
            ),
            status=failure.status,
            retryable=True,
        )

    def _attempt(
        self, url: str, payload: dict[str, Any], headers: dict[str, str]
    ) -> httpx.Response | _Failure:
        """One POST: the response unless it failed in a way worth retrying."""
        try:
            with (
                deadline(self.config.request_timeout),
                self._http.stream("POST", url, json=payload, headers=headers) as streamed,
            ):
                response = self._whole(streamed, url)
        except httpx.TimeoutException:
            return _Failure(f"timed out after {self.config.request_timeout}s")
        except httpx.ConnectError as exc:  # nothing listens there, or no route to it
            return _Failure(f"the model server is unreachable ({type(exc).__name__}: {exc})")
        except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            return _Failure(f"connection failed: {type(exc).__name__}: {exc}")
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            message = f"{self.config.provider} {url} cannot be called: {exc}"
            raise LLMError(self._redact(message), retryable=False) from None
        status = response.status_code
        if status in RETRYABLE_STATUSES or status >= 500:
            retry_after = parse_retry_after(response.headers.get("retry-after"), datetime.now(UTC))
            reason = f"answered {status}: {_excerpt(response.text)}"
            return _Failure(reason, status=status, retry_after=retry_after)
        return response

    def _whole(self, streamed: httpx.Response, url: str) -> httpx.Response:
        """The response read whole, up to MAX_ANSWER_BYTES (decoded); LLMError past it — a
        server streaming without end would fill the memory, then the run's records."""
        chunks: list[bytes] = []
        size = 0
        for chunk in streamed.iter_bytes():
            size += len(chunk)
            if size > MAX_ANSWER_BYTES:
                message = (
                    f"{self.config.provider} {url} answered {streamed.status_code} with "
                    f"more than {MAX_ANSWER_BYTES // 2**20} MiB: not a model's answer"
                )
                raise LLMError(self._redact(message), status=streamed.status_code, retryable=False)
            chunks.append(chunk)
        headers = [
            (k, v)
            for k, v in streamed.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length")
        ]  # decoded above
        return httpx.Response(
            streamed.status_code,
            headers=headers,
            content=b"".join(chunks),
            request=streamed.request,
        )

    def _answer(
        self, url: str, response: httpx.Response, system: str, user: str, latency_ms: int
    ) -> LLMResponse:
        """The LLMResponse of a successful HTTP answer; LLMError when the body is unusable."""
        try:
            answer = extract_answer(self.config.provider, response.json())
        except (ValueError, RecursionError):  # not JSON, not UTF-8, nested past Python's stack,
            # a number of more digits than int() takes
            raise self._error(
                f"answered {response.status_code} with a body that is not JSON", url, response
            ) from None
        except (KeyError, IndexError, TypeError):
            raise self._error(
                f"answered {response.status_code} without message content", url, response
            ) from None
        raw, prompt, completion = answer.content, answer.prompt_tokens, answer.completion_tokens
        usage = Usage(
            prompt_tokens=prompt if prompt is not None else estimate_prompt_tokens(system, user),
            completion_tokens=completion if completion is not None else estimate_tokens(raw),
            latency_ms=latency_ms,
            calls=1,
            estimated=prompt is None or completion is None,
        )
        return LLMResponse(
            text=strip_thinking(raw),
            raw_text=raw,
            model=self.config.model,
            usage=usage,
            truncated=answer.truncated,
        )

    def _error(self, what: str, url: str, response: httpx.Response) -> LLMError:
        """A non-retryable LLMError naming provider, URL, status and a short body excerpt."""
        message = f"{self.config.provider} {url} {what}: {_excerpt(response.text)}"
        return LLMError(self._redact(message), status=response.status_code, retryable=False)

    def _redact(self, message: str) -> str:
        """The message with the API key masked, should a server ever echo it."""
        return message.replace(self._api_key, "***") if self._api_key else message
