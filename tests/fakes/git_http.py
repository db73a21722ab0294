"""Git smart-HTTP for the fake GitHub: one request served through `git http-backend` as CGI."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import threading
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import IO, cast

READ_SIZE = 64 * 1024


def request_body(handler: BaseHTTPRequestHandler) -> Iterator[bytes]:
    """The request body in pieces, from Content-Length or a chunked transfer encoding."""
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        yield from _dechunked(handler.rfile)
        return
    remaining = int(handler.headers.get("Content-Length") or 0)
    while remaining > 0:
        piece = handler.rfile.read(min(READ_SIZE, remaining))
        if not piece:
            return
        remaining -= len(piece)
        yield piece


def _dechunked(rfile: io.BufferedIOBase) -> Iterator[bytes]:
    """The payload of a `Transfer-Encoding: chunked` body (git sends one for large pushes)."""
    while True:
        size = int(rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return
        yield rfile.read(size)
        rfile.readline()  # the CRLF closing the chunk


def cgi_env(
    handler: BaseHTTPRequestHandler,
    *,
    project_root: Path,
    path_info: str,
    query: str,
    remote_user: str,
) -> dict[str, str]:
    """The CGI environment of `git http-backend` for this request (pushes enabled)."""
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(project_root),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.receivepack",
        "GIT_CONFIG_VALUE_0": "true",
        "GIT_PROJECT_ROOT": str(project_root),
        "GIT_HTTP_EXPORT_ALL": "1",
        "GATEWAY_INTERFACE": "CGI/1.1",
        "REQUEST_METHOD": handler.command,
        "PATH_INFO": path_info,
        "QUERY_STRING": query,
        "REMOTE_USER": remote_user,
        "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_TYPE": handler.headers.get("Content-Type", ""),
    }
    # Without CONTENT_LENGTH (a chunked body) http-backend reads its stdin to the end.
    optional = {
        "CONTENT_LENGTH": handler.headers.get("Content-Length"),
        "HTTP_CONTENT_ENCODING": handler.headers.get("Content-Encoding"),  # gzip: inflated by git
        "HTTP_GIT_PROTOCOL": handler.headers.get("Git-Protocol"),
    }
    env.update({k: v for k, v in optional.items() if v})
    return env


def serve_http_backend(handler: BaseHTTPRequestHandler, env: Mapping[str, str]) -> int:
    """Run `git http-backend`, streaming the request in and its answer out; the HTTP status."""
    proc = subprocess.Popen(
        ["git", "http-backend"],
        env=dict(env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    stdout = cast(io.BufferedReader, proc.stdout)
    feeder = threading.Thread(target=_feed, args=(request_body(handler), proc.stdin), daemon=True)
    drain = threading.Thread(target=_drain, args=(proc.stderr,), daemon=True)
    feeder.start()
    drain.start()
    try:
        status, headers = _cgi_headers(stdout)
        handler.send_response(status)
        for name, value in headers:
            handler.send_header(name, value)
        handler.end_headers()
        _copy(stdout, handler.wfile)
    finally:
        stdout.close()
        proc.wait()
        feeder.join()
        drain.join()
    return status


def _drain(stderr: IO[bytes]) -> None:
    """Read http-backend's stderr to the end (so it never blocks on a full pipe), then close it."""
    with stderr:
        while stderr.read(READ_SIZE):
            pass


def _feed(pieces: Iterator[bytes], stdin: IO[bytes]) -> None:
    """Write the request body into the CGI's stdin, then close it."""
    try:
        for piece in pieces:
            stdin.write(piece)
    except (BrokenPipeError, ConnectionResetError):
        pass  # http-backend answered (an error) without reading everything
    finally:
        with contextlib.suppress(BrokenPipeError):
            stdin.close()


def _cgi_headers(stdout: IO[bytes]) -> tuple[int, list[tuple[str, str]]]:
    """The status and headers a CGI script printed before its body."""
    status, headers = 200, list[tuple[str, str]]()
    while True:
        line = stdout.readline().decode("latin-1").rstrip("\r\n")
        if not line:
            return status, headers
        name, _, value = line.partition(":")
        if name.lower() == "status":
            status = int(value.strip().split()[0])
        else:
            headers.append((name.strip(), value.strip()))


def _copy(source: io.BufferedReader, sink: io.BufferedIOBase) -> None:
    """Stream `source` to `sink` as it arrives; a client that hung up is not an error."""
    try:
        while piece := source.read1(READ_SIZE):
            sink.write(piece)
            sink.flush()
    except (BrokenPipeError, ConnectionResetError):
        pass
