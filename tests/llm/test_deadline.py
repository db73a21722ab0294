"""request_timeout is the total time of one attempt however the bytes arrive (issue 11): a
server that trickles its answer is cut at the deadline, the failed call is recorded with the
time it really took, and the run's error names the model before the tests."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from agent.config.files import ModelConfig
from agent.errors import LLMError
from agent.llm.client import HTTPChatModel
from agent.llm.deadline import deadline, with_deadlines
from agent.llm.logged import LoggedLLMClient
from tests.fakes.call_log import MemoryCallLog
from tests.fakes.model_server import Reply, ScriptedModelServer

# The trickled answer is ~150 bytes at 0.2 s each: about 30 s if nothing cut it.
TRICKLE = Reply(text="x" * 40, trickle_s=0.2)


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as s:
        yield s


def model(server: ScriptedModelServer, timeout: float = 1.0) -> HTTPChatModel:
    return HTTPChatModel(
        ModelConfig(base_url=server.url, model="tiny", request_timeout=timeout, max_retries=0)
    )


def test_a_trickling_answer_is_cut_at_the_deadline(server: ScriptedModelServer) -> None:
    server.script("t", TRICKLE)
    started = time.monotonic()

    with model(server) as m, pytest.raises(LLMError, match=r"timed out after 1\.0s"):
        m.complete("s", "u", stage="t")

    assert time.monotonic() - started < 10  # far below the ~30 s the trickle would take


def test_a_failed_call_is_recorded_with_the_time_it_took(server: ScriptedModelServer) -> None:
    server.script("t", TRICKLE)
    log = MemoryCallLog()
    with model(server) as m:
        client = LoggedLLMClient(m, log, role="coding", reserved_tokens=64)
        with pytest.raises(LLMError):
            client.complete("s", "u", stage="t")

    [record] = log.records
    assert record.error is not None and "timed out" in record.error
    assert record.latency_ms >= 900  # the second it waited, not 0
    assert client.usage.latency_ms == record.latency_ms


def test_an_answer_within_the_deadline_is_unaffected(server: ScriptedModelServer) -> None:
    server.script("t", Reply(text="ok", trickle_s=0.001))

    with model(server, timeout=30.0) as m:
        assert m.complete("s", "u", stage="t").text == "ok"


def test_the_deadline_belongs_to_the_thread_and_its_block(server: ScriptedModelServer) -> None:
    with with_deadlines(httpx.Client()) as client:
        with deadline(0.0), pytest.raises(httpx.TimeoutException):
            client.get(server.url + "/api/tags")
        assert client.get(server.url + "/api/tags").status_code == 200  # no deadline now


def test_proxies_from_the_environment_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    with HTTPChatModel(ModelConfig(base_url="http://models.internal:11434", model="tiny")) as m:
        assert m._http._mounts  # httpx still routes through the proxy the environment names


def test_a_model_list_that_trickles_in_is_cut_at_the_probes_deadline() -> None:
    """`cra doctor` and the preflight ask for the model list: a server sending it a byte at a
    time, each well within the read timeout, once kept them waiting for ever."""
    import socket
    import threading

    from agent.llm import probe

    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def trickle() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100000\r\n\r\n"
            )
            while not stop.wait(0.2):
                try:
                    conn.sendall(b" ")
                except OSError:
                    return

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    started = time.monotonic()
    try:
        state = probe.probe_server("ollama", url, total_timeout=1.0)
    finally:
        stop.set()
        listener.close()
    assert time.monotonic() - started < 5
    assert not state.models and state.problem == f"no answer from {url}/api/tags within the timeout"
