"""ScriptedModelServer: a real loopback HTTP model server speaking the Ollama and OpenAI formats."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, cast

NO_SCRIPTED_REPLY = "no scripted reply"
POLL_INTERVAL_S = 0.02  # how soon serve_forever notices shutdown()
SCHEMA_REJECTION = (
    '{"object": "error", "type": "BadRequestError", "code": 400, '
    '"message": "response_format type json_schema is not supported by this server"}'
)


@dataclass(frozen=True)
class Reply:
    """One scripted answer: text, or an HTTP failure, a delay, a malformed body."""

    text: str = ""
    status: int = 200
    retry_after: str | None = None
    delay_s: float = 0.0
    raw_body: bytes | None = None
    usage: tuple[int, int] | None = None  # (prompt, completion); None omits the usage fields
    error_body: str | None = None
    trickle_s: float = 0.0  # send the answer one byte every trickle_s seconds
    cut_off: bool = False  # stopped at max_tokens: done_reason / finish_reason "length"
    thinking: str | None = None  # a reasoning model's thoughts, beside the content (wire field)
    redirect: str | None = None  # a Location header (with a 3xx status)


def reply(text: str, *, usage: tuple[int, int] | None = None) -> Reply:
    """A successful answer."""
    return Reply(text=text, usage=usage)


def fail(status: int, retry_after: str | None = None, *, body: str | None = None) -> Reply:
    """An HTTP error answer, optionally with a Retry-After header."""
    return Reply(status=status, retry_after=retry_after, error_body=body)


def slow(text: str, delay_s: float) -> Reply:
    """A successful answer sent after `delay_s` seconds."""
    return Reply(text=text, delay_s=delay_s)


def garbage() -> Reply:
    """A 200 whose body is not JSON."""
    return Reply(raw_body=b"<html>this is not json{")


def empty() -> Reply:
    """A 200 with an empty content string."""
    return Reply(text="")


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it; header names are lower-case."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    stage: str | None
    unscripted: bool = False

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages of a POST, or [] for anything else."""
        if isinstance(self.body, dict) and isinstance(self.body.get("messages"), list):
            return cast(list[dict[str, Any]], self.body["messages"])
        return []

    @property
    def system_prompt(self) -> str:
        """The system message content, or ""."""
        return next((str(m.get("content")) for m in self.messages if m.get("role") == "system"), "")

    @property
    def user_prompt(self) -> str:
        """The user message content, or ""."""
        return next((str(m.get("content")) for m in self.messages if m.get("role") == "user"), "")


@dataclass
class _Script:
    """The replies still to give and the requests seen, guarded by one lock."""

    queue: deque[Reply] = field(default_factory=deque)
    by_stage: dict[str, deque[Reply]] = field(default_factory=dict)
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    responder: Callable[[RecordedRequest], Reply | str | None] | None = None

    def take(self, stage: str | None, request: RecordedRequest | None = None) -> Reply | None:
        """The next reply for this stage, else the next queued one, else the responder's."""
        staged = self.by_stage.get(stage or "")
        if staged:
            return staged.popleft()
        if self.queue:
            return self.queue.popleft()
        if self.responder is not None and request is not None:
            found = self.responder(request)
            return None if found is None else _as_reply(found)
        return None


def scripted_config(url: str, test_command: str = "python -c pass") -> str:
    """A cra.toml pointing every role at the scripted server at `url`, without retries."""
    return (
        "".join(
            f'[models.{role}]\nbase_url = "{url}"\nmodel = "m"\nmax_retries = 0\n'
            for role in ("reasoning", "coding", "classifier")
        )
        + f"[testing]\ntest_command = {json.dumps(test_command)}\n"
    )


def _as_reply(item: Reply | str) -> Reply:
    """A Reply from a Reply or plain answer text."""
    return item if isinstance(item, Reply) else Reply(text=item)


def _ollama_body(model: str, r: Reply) -> dict[str, Any]:
    """An Ollama /api/chat non-streaming response."""
    body: dict[str, Any] = {
        "model": model,
        "created_at": "2024-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": r.text},
        "done": True,
        "done_reason": "length" if r.cut_off else "stop",
    }
    if r.thinking is not None:  # Ollama 0.9+ with "think"
        body["message"]["thinking"] = r.thinking
    if r.usage is not None:
        body["prompt_eval_count"], body["eval_count"] = r.usage
    return body


def _openai_body(model: str, r: Reply) -> dict[str, Any]:
    """An OpenAI /v1/chat/completions non-streaming response."""
    body: dict[str, Any] = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": r.text or None},
                "finish_reason": "length" if r.cut_off else "stop",
            }
        ],
    }
    if r.thinking is not None:  # vLLM's and others' reasoning parsers
        body["choices"][0]["message"]["reasoning_content"] = r.thinking
    if r.usage is not None:
        prompt, completion = r.usage
        body["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
    return body


class _Handler(BaseHTTPRequestHandler):
    """Answers from the owning ScriptedModelServer's script."""

    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request stderr log."""

    def do_GET(self) -> None:
        """Model listings of both APIs."""
        path = self.path.split("?", 1)[0]
        self.server.owner.record(self._recorded("GET", path, None))
        models = self.server.owner.models
        if path == "/api/tags":
            self._send_json(200, {"models": [{"name": m, "model": m} for m in models]})
        elif path in ("/v1/models", "/models"):
            windows = self.server.owner.windows
            data = [
                {
                    "id": m,
                    "object": "model",
                    "owned_by": "scripted",
                    **({"max_model_len": windows[m]} if m in windows else {}),
                }
                for m in models
            ]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_json(404, {"error": f"no route {path}"})

    def do_POST(self) -> None:
        """Chat completions of both APIs, from the script."""
        path = self.path.split("?", 1)[0]
        body = self._read_json()
        owner = self.server.owner
        if path == "/api/show":
            owner.record(self._recorded("POST", path, body))
            self._show(body)
            return
        if path == "/api/chat":
            wire = "ollama"
        elif path.endswith("/chat/completions"):
            wire = "openai"
        else:
            owner.record(self._recorded("POST", path, body))
            self._send_json(404, {"error": f"no route {path}"})
            return
        if wire == "openai" and owner.reject_json_schema and _asks_json_schema(body):
            owner.record(self._recorded("POST", path, body))
            self._send(400, SCHEMA_REJECTION.encode(), "application/json")
            return
        scripted = owner.take_and_record(self._recorded("POST", path, body))
        if scripted is None:
            self._send(500, NO_SCRIPTED_REPLY.encode(), "text/plain")
            return
        self._answer(wire, body, scripted)

    def _show(self, body: Any) -> None:
        """Ollama's /api/show: a listed model's trained window, when the server was given one."""
        owner = self.server.owner
        name = str(body.get("model", "")) if isinstance(body, dict) else ""
        if name not in owner.models:
            self._send_json(404, {"error": f"model '{name}' not found"})
            return
        info: dict[str, Any] = {"general.architecture": "scripted"}
        if name in owner.windows:
            info["scripted.context_length"] = owner.windows[name]
        self._send_json(200, {"details": {"format": "gguf"}, "model_info": info})

    def _answer(self, wire: str, body: Any, r: Reply) -> None:
        """Send a scripted reply in the request's wire format, after its delay."""
        if r.delay_s and self.server.owner.stopping.wait(r.delay_s):
            return  # shutting down: drop the connection unanswered
        if r.status != 200 and (r.raw_body is not None or r.redirect is not None):
            extra = {"Location": r.redirect} if r.redirect is not None else {}
            self._send(r.status, r.raw_body or b"", "application/json", extra)
        elif r.status != 200:
            error = (
                r.error_body
                if r.error_body is not None
                else json.dumps({"error": f"scripted failure {r.status}"})
            )
            extra = {"Retry-After": r.retry_after} if r.retry_after is not None else {}
            self._send(r.status, error.encode(), "application/json", extra)
        elif r.raw_body is not None:
            self._send(200, r.raw_body, "application/json")
        else:
            model = str(body.get("model", "")) if isinstance(body, dict) else ""
            make = _ollama_body if wire == "ollama" else _openai_body
            if r.trickle_s:
                self._trickle(json.dumps(make(model, r)).encode(), r.trickle_s)
            else:
                self._send_json(200, make(model, r))

    def _trickle(self, data: bytes, every_s: float) -> None:
        """Headers at once, then the body a byte at a time (a server that is slow but alive)."""
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.flush()
            for byte in data:
                if self.server.owner.stopping.wait(every_s):
                    return
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _read_json(self) -> Any:
        """The request body parsed as JSON, or None."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def _recorded(self, method: str, path: str, body: Any) -> RecordedRequest:
        """This request as a record (marked unscripted later if nothing answers it)."""
        headers = {k.lower(): v for k, v in self.headers.items()}
        return RecordedRequest(method, path, headers, body, headers.get("x-cra-stage"))

    def _send_json(self, status: int, payload: Any) -> None:
        """Send a JSON answer."""
        self._send(status, json.dumps(payload).encode(), "application/json")

    def _send(
        self, status: int, data: bytes, content_type: str, extra: dict[str, str] | None = None
    ) -> None:
        """Send an answer; a client that already hung up (timeout) is not an error."""
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (extra or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass


def _asks_json_schema(body: Any) -> bool:
    """Whether an OpenAI request body asks for response_format json_schema."""
    if not isinstance(body, dict):
        return False
    fmt = body.get("response_format")
    return isinstance(fmt, dict) and fmt.get("type") == "json_schema"


class _Server(ThreadingHTTPServer):
    """The HTTP server, pointing back at its ScriptedModelServer; handler threads are joined."""

    daemon_threads = False
    block_on_close = True

    def __init__(self, owner: ScriptedModelServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.owner = owner


class ScriptedModelServer:
    """A loopback model server answering from a FIFO queue or per-stage scripts."""

    def __init__(
        self,
        *,
        models: Sequence[str] = ("scripted-model",),
        reject_json_schema: bool = False,
        windows: Mapping[str, int] | None = None,
    ) -> None:
        self.models = tuple(models)
        self.windows = dict(windows or {})  # model → context window its listings state
        self.reject_json_schema = reject_json_schema
        self.stopping = threading.Event()
        self._script = _Script()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL, usable as base_url for both providers."""
        if self._server is None:
            raise RuntimeError("ScriptedModelServer is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def enqueue(self, *replies: Reply | str) -> None:
        """Append replies to the FIFO queue."""
        with self._script.lock:
            self._script.queue.extend(_as_reply(r) for r in replies)

    def respond_with(self, responder: Callable[[RecordedRequest], Reply | str | None]) -> None:
        """Answer what nothing scripted answers by calling `responder` (None: unscripted)."""
        with self._script.lock:
            self._script.responder = responder

    def script(self, stage: str, *replies: Reply | str) -> None:
        """Append replies for requests carrying `X-Cra-Stage: stage`."""
        with self._script.lock:
            self._script.by_stage.setdefault(stage, deque()).extend(_as_reply(r) for r in replies)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order."""
        with self._script.lock:
            return list(self._script.requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The model calls: chat requests of either API (not listings or /api/show)."""
        return [
            r
            for r in self.requests
            if r.path == "/api/chat" or r.path.endswith("/chat/completions")
        ]

    @property
    def unscripted(self) -> list[RecordedRequest]:
        """Chat requests that found no scripted reply (answered 500)."""
        return [r for r in self.requests if r.unscripted]

    def pending(self) -> int:
        """Replies scripted but not yet given."""
        with self._script.lock:
            return len(self._script.queue) + sum(len(q) for q in self._script.by_stage.values())

    def record(self, request: RecordedRequest) -> None:
        """Remember a request that takes no reply from the script."""
        with self._script.lock:
            self._script.requests.append(request)

    def take_and_record(self, request: RecordedRequest) -> Reply | None:
        """The reply for a chat request, recording the request (as unscripted if none)."""
        with self._script.lock:
            found = self._script.take(request.stage, request)
            if found is None:
                request = RecordedRequest(
                    request.method,
                    request.path,
                    request.headers,
                    request.body,
                    request.stage,
                    unscripted=True,
                )
            self._script.requests.append(request)
            return found

    def start(self) -> ScriptedModelServer:
        """Listen on a free loopback port and serve in a daemon thread."""
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            args=(POLL_INTERVAL_S,),
            name="scripted-model-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, wake delayed replies, join the threads, close the socket."""
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server, self._thread = None, None

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
