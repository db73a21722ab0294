"""A TCP proxy in front of PostgreSQL that can lose a statement's answer: the statement ran (and,
outside a transaction, committed), then the connection broke before the client heard back."""

from __future__ import annotations

import socket
import struct
import threading
from contextlib import suppress
from types import TracebackType
from typing import Self

from sqlalchemy import make_url

READY_FOR_QUERY = b"Z"


def _answered(data: bytes) -> bool:
    """Whether the server's bytes hold a whole ReadyForQuery message (the statement's end)."""
    at = 0
    while at + 5 <= len(data):
        kind, length = data[at : at + 1], struct.unpack("!I", data[at + 1 : at + 5])[0]
        if at + 1 + length > len(data):
            return False
        if kind == READY_FOR_QUERY:
            return True
        at += 1 + length
    return False


class AnswerLosingProxy:
    """Relays connections to host:port; once armed with a marker, the first statement whose
    text holds it reaches the server, and its connection is cut when the answer is complete."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._marker: bytes | None = None
        self._lock = threading.Lock()
        self.cut = 0  # connections cut so far
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def url(self, url: str) -> str:
        """A SQLAlchemy PostgreSQL URL routed through the proxy (unencrypted: the proxy reads
        the server's answers)."""
        parsed = make_url(url)
        proxied = parsed.set(host="127.0.0.1", port=self.port).update_query_dict(
            {"sslmode": "disable", "gssencmode": "disable"}
        )
        return proxied.render_as_string(hide_password=False)

    def arm(self, marker: bytes) -> None:
        """Lose the answer to the next statement whose text holds `marker`."""
        with self._lock:
            self._marker = marker

    def _take(self, data: bytes) -> bool:
        """Whether these client bytes are the armed statement (disarming it)."""
        with self._lock:
            if self._marker is None or self._marker not in data:
                return False
            self._marker = None
            return True

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self._target)
            losing = threading.Event()
            threading.Thread(
                target=self._upstream, args=(client, server, losing), daemon=True
            ).start()
            threading.Thread(
                target=self._downstream, args=(server, client, losing), daemon=True
            ).start()

    def _upstream(
        self, client: socket.socket, server: socket.socket, losing: threading.Event
    ) -> None:
        """Client to server; marks the connection whose answer is to be lost."""
        try:
            while data := client.recv(65536):
                if self._take(data):
                    losing.set()
                server.sendall(data)
        except OSError:  # a side closed: the relay ends
            pass
        finally:
            _close(server)

    def _downstream(
        self, server: socket.socket, client: socket.socket, losing: threading.Event
    ) -> None:
        """Server to client; once losing, holds the answer back and cuts it when complete."""
        held = b""
        try:
            while data := server.recv(65536):
                if not losing.is_set():
                    client.sendall(data)
                    continue
                held += data
                if _answered(held):
                    self.cut += 1
                    break
        except OSError:  # a side closed: the relay ends
            pass
        finally:
            _close(client)
            _close(server)

    def close(self) -> None:
        self._listener.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _close(sock: socket.socket) -> None:
    with suppress(OSError):  # the other side may have gone first
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
