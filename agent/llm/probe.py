"""What a model server says about itself: whether it answers, its models and their windows.

Ollama lists models at /api/tags and tells a model's trained window at /api/show; an
OpenAI-compatible server lists them at /v1/models, where vLLM adds `max_model_len`, llama.cpp
`meta.n_ctx_train`, and hosted APIs `context_length` or `context_window`.
"""

from __future__ import annotations

from typing import Any

import httpx
from pydantic import BaseModel

from agent.config.files import ModelConfig
from agent.llm.client import tls_context
from agent.llm.deadline import deadline, with_deadlines

CONNECT_TIMEOUT_S = 2.0
READ_TIMEOUT_S = 10.0
TOTAL_TIMEOUT_S = 20.0  # a whole listing, however slowly it trickles in
WINDOW_KEYS = ("max_model_len", "context_length", "context_window", "max_context_length")


class ServerState(BaseModel):
    """One model server as seen from here: reachable or why not, and what it lists."""

    url: str
    provider: str
    reachable: bool
    problem: str | None = None  # why it is unreachable or unusable
    models: dict[str, int | None] | None = None  # name → window; None: it lists nothing


class ModelState(BaseModel):
    """One configured model on its server."""

    server: ServerState
    name: str
    present: bool | None  # None: the server does not list its models
    window: int | None = None  # the server's (or the model's trained) window, when told


def list_url(provider: str, base_url: str) -> str:
    """Where the provider lists its models; a base URL ending in /v1 is not doubled."""
    base = base_url.rstrip("/")
    if provider == "ollama":
        return f"{base}/api/tags"
    return f"{base}/models" if base.endswith("/v1") else f"{base}/v1/models"


def _client(api_key: str | None) -> httpx.Client:
    """A client whose requests (inside `deadline(TOTAL_TIMEOUT_S)`) end in time even when a
    server trickles its answer a byte at a time, each within the read timeout."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    timeout = httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
    return with_deadlines(httpx.Client(timeout=timeout, headers=headers, verify=tls_context()))


def probe_server(
    provider: str,
    base_url: str,
    api_key: str | None = None,
    *,
    total_timeout: float = TOTAL_TIMEOUT_S,
) -> ServerState:
    """Ask the server for its model list: connect within 2 s or it counts as down; the whole
    list within `total_timeout` seconds or it counts as silent."""
    url = list_url(provider, base_url)
    state = ServerState(url=base_url, provider=provider, reachable=False)
    try:
        with _client(api_key) as http, deadline(total_timeout):
            response = http.get(url)
    except httpx.TimeoutException:
        return state.model_copy(update={"problem": f"no answer from {url} within the timeout"})
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        return state.model_copy(update={"problem": _connection_problem(url, exc)})
    return _listing(state.model_copy(update={"reachable": True}), url, response)


def _connection_problem(url: str, exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    if "refused" in text.lower():
        return f"{url} refused the connection (is the server running?)"
    return f"cannot reach {url}: {text}"


def _listing(state: ServerState, url: str, response: httpx.Response) -> ServerState:
    """The state after the list request answered."""
    status = response.status_code
    if status in (401, 403):
        return state.model_copy(update={"problem": f"{url} refused the API key ({status})"})
    if status == 404:
        return state  # a server without a model list: names cannot be checked
    if status >= 400:
        return state.model_copy(update={"problem": f"{url} answered {status}"})
    try:
        models = _models(state.provider, response.json())
    except (ValueError, RecursionError, TypeError, KeyError, AttributeError):
        kind = "Ollama" if state.provider == "ollama" else "OpenAI-compatible"
        return state.model_copy(update={"problem": f"{url} does not answer like an {kind} server"})
    return state.model_copy(update={"models": models})


def _models(provider: str, body: Any) -> dict[str, int | None]:
    """Name → window of a model list body."""
    if provider == "ollama":
        return {str(m.get("name") or m["model"]): None for m in body["models"]}
    return {str(m["id"]): _window(m) for m in body["data"]}


def _window(entry: dict[str, Any]) -> int | None:
    """The context window an OpenAI-style list entry states, if any."""
    candidates = [entry.get(key) for key in WINDOW_KEYS]
    meta = entry.get("meta")
    if isinstance(meta, dict):
        candidates += [meta.get("n_ctx"), meta.get("n_ctx_train")]
    return next((c for c in candidates if isinstance(c, int) and not isinstance(c, bool)), None)


def same_model(provider: str, wanted: str, listed: str) -> bool:
    """Whether a listed name is the configured one (Ollama: `name` is `name:latest`)."""
    if provider != "ollama":
        return wanted == listed

    def norm(name: str) -> str:
        name = name.lower().removeprefix("registry.ollama.ai/").removeprefix("library/")
        return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"

    return norm(wanted) == norm(listed)


def find_model(
    state: ServerState, config: ModelConfig, api_key: str | None = None, *, window: bool = True
) -> ModelState:
    """The configured model on a probed server: listed or not, and (asked with `window`) its
    window when the server tells it."""
    if state.models is None:
        return ModelState(server=state, name=config.model, present=None)
    listed = next((n for n in state.models if same_model(state.provider, config.model, n)), None)
    if listed is None:
        return ModelState(server=state, name=config.model, present=False)
    size = state.models[listed]
    if size is None and window and state.provider == "ollama":
        size = ollama_window(config.base_url, listed, api_key)
    return ModelState(server=state, name=config.model, present=True, window=size)


def ollama_window(base_url: str, name: str, api_key: str | None = None) -> int | None:
    """The trained context length Ollama's /api/show reports for a model, or None."""
    try:
        with _client(api_key) as http, deadline(TOTAL_TIMEOUT_S):
            body = http.post(f"{base_url.rstrip('/')}/api/show", json={"model": name}).json()
    except (httpx.HTTPError, ValueError):
        return None
    info = body.get("model_info") if isinstance(body, dict) else None
    if not isinstance(info, dict):
        return None
    lengths = [v for k, v in info.items() if k.endswith(".context_length") and isinstance(v, int)]
    return lengths[0] if lengths else None
