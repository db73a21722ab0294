"""The door holds: 64 stalled connections on loopback while /healthz and signed deliveries keep
answering within a second, and the stalled ones are closed once their timeout passes."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from waitress import wasyncore

from bot.intake.webhooks import sign
from bot.settings import BotSettings
from bot.store.runs import BotStore
from bot.web.app import create_app
from bot.web.door import DoorLimits, DoorServer, _Channel, make_door, serve_in_thread
from tests.bot.web.test_app import SECRET, TestServices
from tests.fixtures import webhook_bytes

STALLED = 64
ANSWER_WITHIN = 1.0  # seconds: the bound on every answer while the door is under siege
CLOSED_WITHIN = 15.0  # seconds a stalled connection may wait for the server to close it
PARTIAL_HEADERS = b"POST /webhook HTTP/1.1\r\nHost: cra\r\nX-GitHub-Event: iss"
PARTIAL_BODY = (
    b"POST /webhook HTTP/1.1\r\nHost: cra\r\nX-GitHub-Event: issues\r\n"
    b'Content-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"acti'
)


@pytest.fixture
def door(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[DoorServer]:
    """cra's app behind the door on a loopback port, with one-second timeouts (or the read
    timeout a test's `read_timeout` marker asks for)."""
    marker = request.node.get_closest_marker("read_timeout")
    read_timeout = marker.args[0] if marker else 1.0
    settings = BotSettings(
        webhook_secret=SECRET,
        label="bug",
        data_dir=tmp_path,
        database_url=f"sqlite:///{tmp_path / 'cra.db'}",
    )
    with BotStore.open(settings.database_url) as store:
        server = make_door(
            create_app(settings, TestServices(store)),
            host="127.0.0.1",
            port=0,
            limits=DoorLimits(
                threads=4, header_timeout=1.0, read_timeout=read_timeout, max_connections=200
            ),
        )
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
    return client.post(
        f"http://127.0.0.1:{port}/webhook",
        content=body,
        headers={
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": sign(body, SECRET),
            "Content-Type": "application/json",
        },
    )


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
        stalled = [
            held.enter_context(stall(door.port, PARTIAL_BODY if n % 2 else PARTIAL_HEADERS))
            for n in range(STALLED)
        ]
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
        ignored = client.post(
            f"http://127.0.0.1:{door.port}/webhook",
            content=opened,
            headers={
                "X-GitHub-Event": "issues",
                "X-GitHub-Delivery": str(uuid.uuid4()),
                "X-Hub-Signature-256": sign(opened, SECRET),
                "Content-Type": "application/json",
            },
        )
        first = ignored.extensions["network_stream"].get_extra_info("socket").getsockname()
        queued = delivery(door.port, client, 7)
        second = queued.extensions["network_stream"].get_extra_info("socket").getsockname()
    assert (ignored.status_code, "connection" in ignored.headers) == (204, False)
    assert (queued.status_code, second) == (202, first)


def test_a_client_asking_to_close_after_a_204_is_obeyed(door: DoorServer) -> None:
    opened = webhook_bytes("issues", "opened.payload.json")
    with httpx.Client(timeout=5) as client:
        answer = client.post(
            f"http://127.0.0.1:{door.port}/webhook",
            content=opened,
            headers={
                "X-GitHub-Event": "issues",
                "X-GitHub-Delivery": str(uuid.uuid4()),
                "X-Hub-Signature-256": sign(opened, SECRET),
                "Content-Type": "application/json",
                "Connection": "close",
            },
        )
    assert (answer.status_code, answer.headers.get("connection")) == (204, "close")


def test_a_full_thread_pool_is_reported_once_a_minute_not_per_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from bot.web.door import _Dispatcher

    dispatcher = _Dispatcher()  # no threads: every task waits
    try:
        with caplog.at_level(logging.WARNING):
            for _ in range(50):
                dispatcher.add_task(object())
        lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(lines) == 1 and "requests waited" in lines[0]
    finally:
        dispatcher.queue.clear()


class _SlowSendChannel(_Channel):
    """A connection whose request threads take 0.3 s to hand each answer to the socket."""

    sending = threading.Event()

    def send(self, data: bytes, do_close: bool = True) -> int:
        if threading.current_thread().name.startswith("waitress-"):
            self.sending.set()
            time.sleep(0.3)  # inside write_soon: the buffer's lock is held meanwhile
        return int(super().send(data, do_close=do_close))


def _serve(
    app: object, monkeypatch: pytest.MonkeyPatch, channel: type[_Channel] = _Channel
) -> tuple[DoorServer, list[int]]:
    """`app` behind the door on a loopback port, counting the I/O loop's turns."""
    turns = [0]
    poll = wasyncore.poll

    def counted(timeout: float = 0.0, map: dict[int, object] | None = None) -> None:
        turns[0] += 1
        poll(timeout, map)

    monkeypatch.setattr(wasyncore, "poll", counted)
    server = make_door(
        app,
        host="127.0.0.1",
        port=0,
        limits=DoorLimits(threads=2, header_timeout=5.0, read_timeout=5.0, max_connections=10),
    )
    server.channel_class = channel
    return server, turns


def test_the_io_loop_waits_while_a_request_thread_sends_its_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While a request's thread is writing its answer (holding the connection's buffer), the
    I/O thread does not turn on the writable socket: that spin held the GIL from every request
    thread and cost most of the server's CPU under load."""

    def app(environ: dict[str, object], start_response: Callable[..., object]) -> list[bytes]:
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
        return [b"ok"]

    server, turns = _serve(app, monkeypatch, _SlowSendChannel)
    thread = serve_in_thread(server)
    answers: list[str] = []
    try:
        with httpx.Client(timeout=10) as client:
            asking = threading.Thread(
                target=lambda: answers.append(client.get(f"http://127.0.0.1:{server.port}/").text)
            )
            asking.start()
            assert _SlowSendChannel.sending.wait(10)
            before = turns[0]
            server.pull_trigger()  # as another connection's traffic would: the loop turns
            asking.join(10)
            during = turns[0] - before
    finally:
        server.stop()
        thread.join(30)
    assert answers == ["ok"]
    assert during < 20, f"{during} turns of the I/O loop in 0.3 s"


MIB = bytes(range(256)) * 4096


def _large_answer_to_a_slow_reader(
    monkeypatch: pytest.MonkeyPatch, mebibytes: int, channel: type[_Channel] = _Channel
) -> int:
    """The bytes a client that reads its first 2 MiB slowly receives of a `mebibytes` answer
    (headers included)."""

    def app(environ: dict[str, object], start_response: Callable[..., object]) -> Iterator[bytes]:
        start_response(
            "200 OK",
            [
                ("Content-Type", "application/octet-stream"),
                ("Content-Length", str(mebibytes * len(MIB))),
            ],
        )
        for _ in range(mebibytes):
            yield MIB

    server, _ = _serve(app, monkeypatch, channel)
    thread = serve_in_thread(server)
    try:
        received = 0
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: cra\r\nConnection: close\r\n\r\n")
            while data := sock.recv(65536):
                received += len(data)
                time.sleep(0.0005) if received < 2 * len(MIB) else None
    finally:
        server.stop()
        thread.join(30)
    return received


def test_a_large_answer_reaches_a_slow_reader_while_its_request_still_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a request's thread could not send at once is sent by the I/O thread while the
    request goes on writing, past the buffer's high-water mark (16 MiB), where the request
    waits for it."""
    assert _large_answer_to_a_slow_reader(monkeypatch, 24) > 24 * len(MIB)  # body and headers


class _WatchedChannel(_Channel):
    """A connection that notes, each time the I/O thread is woken for it while a request's
    thread hands part of its answer over, whether that thread still held the buffer."""

    wakes: ClassVar[list[bool]] = []

    def __init__(self, server: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(server, *args, **kwargs)
        pull = server.pull_trigger
        lock = self.outbuf_lock  # a Condition: _is_owned() is its own test of its holder

        def watched() -> None:
            if self.writing:
                _WatchedChannel.wakes.append(lock._is_owned())  # type: ignore[attr-defined]
            pull()

        server.pull_trigger = watched

    writing = False

    def write_soon(self, data: Any) -> int:
        self.writing = True  # a request's thread is handing part of its answer over
        try:
            return int(super().write_soon(data))
        finally:
            self.writing = False


def test_the_io_thread_is_woken_once_a_request_lets_go_of_bytes_it_could_not_send(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A request thread that finds the socket full leaves the rest to the I/O thread and wakes
    it — while still holding the buffer, so the I/O thread passes the connection by; a wake
    after the buffer is let go is what sends the rest at once rather than at the loop's next
    event or its 1 s timeout."""
    _WatchedChannel.wakes.clear()
    assert _large_answer_to_a_slow_reader(monkeypatch, 8, _WatchedChannel) > 8 * len(MIB)
    assert True in _WatchedChannel.wakes  # the socket was full while the request wrote
    assert False in _WatchedChannel.wakes, "the I/O thread was woken only while held off"
