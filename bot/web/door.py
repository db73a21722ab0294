"""The door: the app served by waitress, so that slow or stalled clients never hold the server.

Why waitress: its I/O thread reads every request — headers and body — into a buffer before any
application thread sees it, so a client that stalls costs a socket, not a thread, and /webhook
and /healthz keep answering (gunicorn's threaded workers read the request inside the worker
thread, where a stalled client holds that thread for as long as it likes). waitress closes a
connection that stays silent for `channel_timeout` and caps open connections
(`connection_limit`). Added here: a deadline for a request's headers, against clients that
trickle a byte at a time; keep-alive after a 204; and an I/O loop that does not spin while a
request's thread sends its answer.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import Any

from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser
from waitress.server import TcpWSGIServer
from waitress.task import ThreadedTaskDispatcher, WSGITask
from waitress.wasyncore import close_all

from bot.settings import BotSettings

MAX_BODY = 25 * 1024 * 1024  # GitHub caps webhook payloads at 25 MB
MAX_HEADERS = 64 * 1024  # GitHub's headers are a few kB
QUEUE_WARNING_EVERY = 60.0  # seconds between two "requests are waiting" warnings

log = logging.getLogger(__name__)


class _TimedRequest(HTTPRequestParser):  # type: ignore[misc]
    """A request being read, knowing when its first byte arrived."""

    def __init__(self, adj: Any) -> None:
        super().__init__(adj)
        self.started = time.monotonic()


class _KeepAliveTask(WSGITask):  # type: ignore[misc]
    """waitress's WSGI task, keeping an HTTP/1.1 connection open after a 204 or 304.

    waitress 3 closes the connection after any response without a Content-Length, including
    those that may not carry one (RFC 9110 §8.6: never on a 204); half of GitHub's deliveries
    get a 204, and each close costs the sender a new connection (and TLS at a proxy).
    """

    _bodiless_header = False

    def build_response_header(self) -> bytes:
        self._bodiless_header = not self.has_body
        try:
            return bytes(super().build_response_header())
        finally:
            self._bodiless_header = False

    def set_close_on_finish(self) -> None:
        asked = self.request.headers.get("CONNECTION", "").lower() == "close"
        if self._bodiless_header and self.version == "1.1" and not asked:
            return  # a response without a body ends at its headers: the connection can stay
        super().set_close_on_finish()


class _Channel(HTTPChannel):  # type: ignore[misc]
    """A connection whose requests know when they started, and which the I/O thread does not
    watch for writing while the request's own thread is sending."""

    parser_class = _TimedRequest
    task_class = _KeepAliveTask

    def writable(self) -> bool:
        """waitress's test, less the case where the request's thread holds the output buffer.

        A request's thread sends what it writes itself, holding the buffer's lock, and wakes
        the I/O thread (the trigger) when the socket took less than all of it. waitress counts
        the connection writable as soon as bytes are in the buffer: on any turn of the I/O loop
        in that moment (other connections' traffic), select() answers at once (the socket is
        writable), handle_write cannot take the lock, and the loop turns again — thousands of
        times per send under load, holding the GIL from every request thread (68 turns per
        delivery where 3 do, and three quarters of the server's CPU with one request thread, in
        benchmarks/webhook.py). Past the buffer's high-water mark the request waits for this
        thread to drain it, so the connection stays writable then.
        """
        if self.will_close or self.close_when_flushed:
            return True
        if not self.total_outbufs_len:
            return False
        if not self.requests or self.total_outbufs_len > self.adj.outbuf_high_watermark:
            return True  # only this thread sends, or the request waits (or will) for it to
        if not self.outbuf_lock.acquire(False):
            return False  # the request's thread is sending
        self.outbuf_lock.release()  # it left bytes behind (the socket was full): send them here
        return True

    def write_soon(self, data: Any) -> int:
        """waitress's, and a wake of the I/O thread once the buffer is let go, when bytes were
        left behind: waitress wakes it while this thread still holds the buffer, writable()
        then says no, and the rest of a large answer waited for the loop's next event or its
        1 s timeout while the request went on writing."""
        written = int(super().write_soon(data))
        if self.total_outbufs_len >= self.adj.send_bytes:  # what waitress woke it for
            self.server.pull_trigger()
        return written


class _QueueDepthWarning:
    """waitress's "Task queue depth is N" warning, said at most once a minute.

    waitress says it for every request that finds all threads busy — under load, for nearly
    every request, from the I/O thread all of them wait on: the warning cost more than the
    webhook it was about.
    """

    def __init__(self) -> None:
        self._next = 0.0

    def warning(self, message: str, depth: int) -> None:
        now = time.monotonic()
        if now >= self._next:
            self._next = now + QUEUE_WARNING_EVERY
            log.warning(
                "%d requests waited for one of the server's threads (CRA_SERVER_THREADS) "
                "(said at most once a minute)",
                depth,
            )


class _Dispatcher(ThreadedTaskDispatcher):  # type: ignore[misc]
    """waitress's thread pool, warning about its queue at most once a minute."""

    def __init__(self) -> None:
        super().__init__()
        self.queue_logger = _QueueDepthWarning()


class DoorServer(TcpWSGIServer):  # type: ignore[misc]
    """waitress's server, closing connections whose headers take longer than `header_timeout`."""

    channel_class = _Channel

    def __init__(self, app: Any, *, header_timeout: float, **adjustments: Any) -> None:
        self.header_timeout = header_timeout
        dispatcher = _Dispatcher()
        dispatcher.set_thread_count(adjustments["threads"])
        super().__init__(app, dispatcher=dispatcher, **adjustments)

    def maintenance(self, now: float) -> None:
        """waitress's idle check, then the header deadline (runs in the I/O thread)."""
        super().maintenance(now)
        cutoff = time.monotonic() - self.header_timeout
        for channel in list(self.active_channels.values()):
            request = channel.request
            if (
                isinstance(request, _TimedRequest)
                and not request.headers_finished
                and not channel.requests
                and request.started < cutoff
            ):
                channel.will_close = True  # the I/O loop closes it on its next turn

    @property
    def port(self) -> int:
        """The port it listens on (useful with port 0)."""
        return int(self.effective_port)

    def stop(self) -> None:
        """Close every connection and the listening socket from the I/O thread; run() returns."""
        self.task_dispatcher.shutdown(timeout=5)
        self.trigger.pull_trigger(lambda: close_all(self._map))


@dataclass(frozen=True)
class DoorLimits:
    """What the door allows a client: threads answering, seconds to send the headers, seconds
    of silence, connections open at once."""

    threads: int
    header_timeout: float
    read_timeout: float
    max_connections: int

    @classmethod
    def of(cls, settings: BotSettings) -> DoorLimits:
        """The limits CRA_SERVER_THREADS, CRA_HEADER_TIMEOUT, CRA_READ_TIMEOUT and
        CRA_MAX_CONNECTIONS set."""
        return cls(
            threads=settings.server_threads,
            header_timeout=settings.header_timeout,
            read_timeout=settings.read_timeout,
            max_connections=settings.max_connections,
        )


def make_door(app: Any, *, host: str, port: int, limits: DoorLimits) -> DoorServer:
    """A server for `app` on host:port; call `run()` to serve and `stop()` to end."""
    quickest = min(limits.header_timeout, limits.read_timeout)
    return DoorServer(
        app,
        header_timeout=limits.header_timeout,
        host=host,
        port=port,
        threads=limits.threads,
        channel_timeout=max(1, math.ceil(limits.read_timeout)),
        connection_limit=limits.max_connections,
        cleanup_interval=max(1, math.ceil(quickest / 2)),
        asyncore_loop_timeout=1,
        max_request_body_size=MAX_BODY,
        max_request_header_size=MAX_HEADERS,
        ident="cra",
        expose_tracebacks=False,
    )


def serve_in_thread(server: DoorServer) -> threading.Thread:
    """Run `server` in a daemon thread (tests and the demo stop it with `stop()`)."""
    thread = threading.Thread(target=server.run, name="cra-door", daemon=True)
    thread.start()
    return thread
