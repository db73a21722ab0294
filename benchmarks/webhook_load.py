"""The load generator of benchmarks/webhook.py: pre-built signed requests over keep-alive
sockets (asyncio, no HTTP library), and the CPU a server's process tree spent meanwhile.

The client is deliberately thin (a few tens of microseconds per request) so that, on a small
machine where client and server share the cores, it takes as little as possible from the server
under test; every target gets the same client and the same requests.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Request:
    """One delivery to send: the exact bytes on the wire, its id and the status it should get."""

    delivery_id: str
    wire: bytes
    expected: int


def http_request(path: str, headers: dict[str, str], body: bytes) -> bytes:
    """An HTTP/1.1 keep-alive POST as bytes."""
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


@dataclass
class Load:
    """What one target did with the requests."""

    latencies: list[float] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)  # delivery id → last status
    unexpected: int = 0
    failed: int = 0  # no answer (connection closed or refused)
    reconnects: int = 0  # connections the server closed after an answer (or a failure)
    elapsed: float = 0.0
    cpu_s: float = 0.0  # user + system
    system_s: float = 0.0  # of which in the kernel (system calls, switching threads)

    def percentile(self, q: float) -> float:
        """The q-quantile latency in milliseconds."""
        ordered = sorted(self.latencies) or [float("nan")]
        return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @property
    def throughput(self) -> float:
        """Answered requests per second."""
        return len(self.latencies) / self.elapsed if self.elapsed else 0.0

    def add(self, other: Load) -> None:
        """Count another round's figures in (latencies, answers, time, CPU)."""
        self.latencies += other.latencies
        self.statuses.update(other.statuses)
        self.unexpected += other.unexpected
        self.failed += other.failed
        self.reconnects += other.reconnects
        self.elapsed += other.elapsed
        self.cpu_s += other.cpu_s
        self.system_s += other.system_s

    @property
    def cpu_ms_per_request(self) -> float:
        """The server's CPU time per request sent, in milliseconds."""
        sent = len(self.latencies) + self.failed
        return 1000 * self.cpu_s / sent if sent else float("nan")

    @property
    def system_ms_per_request(self) -> float:
        """The part of cpu_ms_per_request spent in the kernel."""
        sent = len(self.latencies) + self.failed
        return 1000 * self.system_s / sent if sent else float("nan")


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bool]:
    """Read one response (Content-Length or chunked body): its status code, and whether the
    server closes the connection after it."""
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, _, header_block = head.partition(b"\r\n")
    status = int(status_line.split(b" ", 2)[1])
    length, chunked, close = 0, False, False
    for line in header_block.split(b"\r\n"):
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
        elif name == b"connection" and b"close" in value.lower():
            close = True
    if chunked:
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            await reader.readexactly(size + 2)
        await reader.readuntil(b"\r\n")
    elif length:
        await reader.readexactly(length)
    return status, close


async def _client(port: int, jobs: list[Request], load: Load, deadline: float) -> None:
    """One keep-alive connection sending its share of the requests in order; when the server
    closes it, the next request opens a new one (and its latency includes the connect)."""
    writer: asyncio.StreamWriter | None = None
    for request in jobs:
        if time.perf_counter() > deadline:
            break
        began = time.perf_counter()
        try:
            if writer is None:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request.wire)
            status, close = await _read_response(reader)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            load.failed += 1
            status, close = 0, True
        took = time.perf_counter() - began
        if close and writer is not None:
            load.reconnects += 1
            writer.close()
            writer = None
        if status:
            load.latencies.append(took)
            load.statuses[request.delivery_id] = status
            load.unexpected += status != request.expected
    if writer is not None:
        writer.close()


async def _send(port: int, requests: list[Request], concurrency: int, limit_s: float) -> Load:
    load = Load()
    shares = [requests[n::concurrency] for n in range(concurrency)]
    start = time.perf_counter()
    await asyncio.gather(*(_client(port, share, load, start + limit_s) for share in shares))
    load.elapsed = time.perf_counter() - start
    return load


def send(
    port: int, requests: list[Request], concurrency: int, limit_s: float, server_pid: int
) -> Load:
    """Send every request with `concurrency` connections; the server tree's CPU meanwhile."""
    user, system = tree_cpu_seconds(server_pid)
    load = asyncio.run(_send(port, requests, concurrency, limit_s))
    user_after, system_after = tree_cpu_seconds(server_pid)
    load.cpu_s = user_after + system_after - user - system
    load.system_s = system_after - system
    return load


# --- CPU of a process tree (Linux /proc) -----------------------------------------------------


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name, or None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw.rsplit(")", 1)[1].split()


def _children(pid: int) -> list[int]:
    """Direct children of a process."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found += [int(child) for child in task.read_text().split()]
        except OSError:
            continue
    return found


def tree_cpu_seconds(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of a process and its live descendants (and their reaped
    children)."""
    user, system, pending = 0.0, 0.0, [pid]
    while pending:
        current = pending.pop()
        fields = _stat(current)
        if fields is None:
            continue
        # utime, stime, cutime, cstime are fields 14–17 of stat; index 0 here is field 3
        utime, stime, cutime, cstime = (int(value) / TICKS for value in fields[11:15])
        user += utime + cutime
        system += stime + cstime
        pending += _children(current)
    return user, system
