"""The door holds: 64 stalled connections on loopback while /healthz and signed deliveries keep
answering within a second, and the stalled ones are closed once their timeout passes."""

from __future__ import annotations

import json
import logging
import socket
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from bot.app import create_app
from bot.door import DoorServer, make_door, serve_in_thread
from bot.settings import BotSettings
from bot.store import BotStore
from bot.webhooks import sign
from tests.bot.test_app import SECRET, TestServices
from tests.fixtures import webhook_bytes

STALLED = 64
ANSWER_WITHIN = 1.0  # seconds: the bound on every answer while the door is under siege
CLOSED_WITHIN = 15.0  # seconds a stalled connection may wait for the server to close it
PARTIAL_HEADERS = b"POST /webhook HTTP/1.1\r\nHost: cra\r\nX-GitHub-Event: iss"
PARTIAL_BODY = (b"POST /webhook HTTP/1.1\r\nHost: cra\r\nX-GitHub-Event: issues\r\n"
                b"Content-Type: application/json\r\nContent-Length: 5000\r\n\r\n{\"acti")


@pytest.fixture
def door(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[DoorServer]:
    """cra's app behind the door on a loopback port, with one-second timeouts (or the read
    timeout a test's `read_timeout` marker asks for)."""
    marker = request.node.get_closest_marker("read_timeout")
    read_timeout = marker.args[0] if marker else 1.0
    settings = BotSettings(webhook_secret=SECRET, label="bug", data_dir=tmp_path,
                           database_url=f"sqlite:///{tmp_path / 'cra.db'}")
    with BotStore.open(settings.database_url) as store:
        server = make_door(create_app(settings, TestServices(store)), host="127.0.0.1", port=0,
                           threads=4, header_timeout=1.0, read_timeout=read_timeout,
                           max_connections=200)
        thread = serve_in_thread(server)
        try:
            yield server
        finally:
            server.stop()
            thread.join(30)


def stall(port: int, first_bytes: bytes) -> socket.socket:
    """A connection that sends `first_bytes` and then nothing."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(first_bytes)
    return sock


def delivery(port: int, client: httpx.Client, issue: int) -> httpx.Response:
    """A signed `issues.labeled` for issue number `issue` (each one queues its own run)."""
    payload = json.loads(webhook_bytes("issues", "labeled.payload.json"))
    payload["issue"]["number"] = issue
    body = json.dumps(payload).encode()
    return client.post(f"http://127.0.0.1:{port}/webhook", content=body, headers={
        "X-GitHub-Event": "issues", "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": sign(body, SECRET), "Content-Type": "application/json"})


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server ends the connection (EOF or reset) before CLOSED_WITHIN."""
    sock.settimeout(CLOSED_WITHIN)
    try:
        while sock.recv(4096):
            pass  # an error answer (408/400) may come first
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
    return True


def test_stalled_clients_neither_hold_the_door_nor_stay_open(door: DoorServer) -> None:
    with ExitStack() as held:
        stalled = [held.enter_context(stall(door.port, PARTIAL_BODY if n % 2 else PARTIAL_HEADERS))
                   for n in range(STALLED)]
        with httpx.Client(timeout=ANSWER_WITHIN) as client:
            for issue in range(1, 6):
                assert client.get(f"http://127.0.0.1:{door.port}/healthz").status_code == 200
                assert delivery(door.port, client, issue).status_code == 202
        assert all(closed_by_server(sock) for sock in stalled)


@pytest.mark.read_timeout(60.0)
def test_headers_have_a_deadline_of_their_own(door: DoorServer) -> None:
    """With a minute of patience for silence, unfinished headers still go after a second."""
    with stall(door.port, PARTIAL_HEADERS) as sock:
        assert closed_by_server(sock)


def test_a_204_keeps_the_connection_open(door: DoorServer) -> None:
    """An event that triggers nothing (204, no body) and the next delivery share a connection."""
    opened = webhook_bytes("issues", "opened.payload.json")
    with httpx.Client(timeout=5) as client:
        ignored = client.post(f"http://127.0.0.1:{door.port}/webhook", content=opened, headers={
            "X-GitHub-Event": "issues", "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": sign(opened, SECRET), "Content-Type": "application/json"})
        first = ignored.extensions["network_stream"].get_extra_info("socket").getsockname()
        queued = delivery(door.port, client, 7)
        second = queued.extensions["network_stream"].get_extra_info("socket").getsockname()
    assert (ignored.status_code, "connection" in ignored.headers) == (204, False)
    assert (queued.status_code, second) == (202, first)


def test_a_client_asking_to_close_after_a_204_is_obeyed(door: DoorServer) -> None:
    opened = webhook_bytes("issues", "opened.payload.json")
    with httpx.Client(timeout=5) as client:
        answer = client.post(f"http://127.0.0.1:{door.port}/webhook", content=opened, headers={
            "X-GitHub-Event": "issues", "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": sign(opened, SECRET), "Content-Type": "application/json",
            "Connection": "close"})
    assert (answer.status_code, answer.headers.get("connection")) == (204, "close")


def test_a_full_thread_pool_is_reported_once_a_minute_not_per_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from bot.door import _Dispatcher

    dispatcher = _Dispatcher()  # no threads: every task waits
    try:
        with caplog.at_level(logging.WARNING):
            for _ in range(50):
                dispatcher.add_task(object())
        lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(lines) == 1 and "requests waited" in lines[0]
    finally:
        dispatcher.queue.clear()
