"""A total deadline for one HTTP request, however its bytes arrive.

httpx's timeouts bound each network operation (connect, one read, one write), not the request:
a server that trickles a byte every few seconds keeps a "10 s" request going for minutes. This
wraps the connection pool's network backend so that every operation of the calling thread waits
at most until that thread's deadline; past it, the operation raises httpcore's own timeout, which
httpx reports as a timeout like any other. `deadline(seconds)` sets it around one request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

_local = threading.local()


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every network operation of this thread inside the block ends by `seconds` from now."""
    previous = getattr(_local, "until", None)
    _local.until = time.monotonic() + seconds
    try:
        yield
    finally:
        _local.until = previous


def _left(timeout: float | None, error: type[Exception]) -> float | None:
    """The operation's timeout, cut to what is left of the thread's deadline."""
    until = getattr(_local, "until", None)
    if until is None:
        return timeout
    left: float = until - time.monotonic()
    if left <= 0:
        raise error("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    """A network stream whose reads and writes end by the deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, timeout=_left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, timeout=_left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        return _Stream(
            self._inner.start_tls(
                ssl_context, server_hostname, timeout=_left(timeout, httpcore.ConnectTimeout)
            )
        )

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    """The pool's backend, its connections bounded by the calling thread's deadline."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        return _Stream(
            self._inner.connect_tcp(
                host,
                port,
                timeout=_left(timeout, httpcore.ConnectTimeout),
                local_address=local_address,
                socket_options=socket_options,
            )
        )

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        return _Stream(
            self._inner.connect_unix_socket(
                path, timeout=_left(timeout, httpcore.ConnectTimeout), socket_options=socket_options
            )
        )

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def with_deadlines(client: httpx.Client) -> httpx.Client:
    """The client, its own transports (the default one and those of proxies from the
    environment) made to honour `deadline`; transports given by the caller are left alone."""
    transports = [getattr(client, "_transport", None), *getattr(client, "_mounts", {}).values()]
    for transport in transports:
        if type(transport) is not httpx.HTTPTransport:
            continue
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if backend is None:  # pragma: no cover - a future httpcore: the deadline tests say so
            raise RuntimeError("httpx's transport no longer exposes its network backend")
        if not isinstance(backend, _Backend):
            pool._network_backend = _Backend(backend)  # type: ignore[union-attr]
    return client
