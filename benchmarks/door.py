"""The door under siege: N stalled connections against cra's app, under the old set-up (gunicorn,
one gthread worker with 8 threads) and under `cra-bot serve`'s (bot.web.door: waitress with header
and read timeouts).

For each: open N connections that send part of a request and stall, then ask /healthz R times
(each with a 2 s client timeout) and report how many answered and within what time, then how
many of the stalled connections the server closed within 15 s. Loopback only, bounded in count
and time. Prints ratios of the two set-ups' answer rates; never asserts on time.

Run: .venv/bin/python benchmarks/door.py [--stalled 64] [--requests 20]
"""

from __future__ import annotations

import argparse
import os
import selectors
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bot.services import build_services  # noqa: E402
from bot.settings import BotSettings  # noqa: E402
from bot.web.app import create_app  # noqa: E402
from bot.web.door import DoorLimits, make_door, serve_in_thread  # noqa: E402

STALL = (
    b"POST /webhook HTTP/1.1\r\nHost: cra\r\nContent-Type: application/json\r\n"
    b'Content-Length: 5000\r\n\r\n{"action"'
)
CLOSE_WAIT_S = 15.0


def bench_app() -> Any:
    """cra's app from CRA_* settings, its thread workers doing nothing (gunicorn factory)."""
    settings = BotSettings()
    return create_app(settings, build_services(settings, execute=lambda run_id, services: None))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def siege(port: int, stalled: int, requests: int) -> dict[str, float]:
    """Hold `stalled` connections, ask /healthz `requests` times; what answered, what closed."""
    socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(stalled)]
    for sock in socks:
        sock.sendall(STALL)
    answered, slowest = 0, 0.0
    with httpx.Client(timeout=2.0) as client:
        for _ in range(requests):
            start = time.perf_counter()
            try:
                answered += client.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
                slowest = max(slowest, time.perf_counter() - start)
            except httpx.HTTPError:
                slowest = max(slowest, time.perf_counter() - start)
    closed = count_closed(socks)
    for sock in socks:
        sock.close()
    return {"answered": answered, "slowest_s": slowest, "closed": closed}


def count_closed(socks: list[socket.socket]) -> int:
    """How many of `socks` the server closes (EOF or reset) within CLOSE_WAIT_S in all."""
    waiting, closed = selectors.DefaultSelector(), 0
    for sock in socks:
        sock.setblocking(False)
        waiting.register(sock, selectors.EVENT_READ)
    deadline = time.monotonic() + CLOSE_WAIT_S
    while waiting.get_map() and (left := deadline - time.monotonic()) > 0:
        for key, _ in waiting.select(left):
            try:
                data = key.fileobj.recv(4096)  # type: ignore[union-attr]
            except (ConnectionResetError, BrokenPipeError):
                data = b""
            if not data:
                waiting.unregister(key.fileobj)
                closed += 1
    waiting.close()
    return closed


def with_gunicorn(env: dict[str, str], run: Callable[[int], dict[str, float]]) -> dict[str, float]:
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "gunicorn",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        "1",
        "--threads",
        "8",
        "--worker-class",
        "gthread",
        "--timeout",
        "30",
        "benchmarks.door:bench_app()",
    ]
    proc = subprocess.Popen(
        argv, cwd=HERE.parent, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        _wait_up(port)
        return run(port)
    finally:
        proc.terminate()
        proc.wait(30)


def with_door(run: Callable[[int], dict[str, float]]) -> dict[str, float]:
    limits = DoorLimits(threads=8, header_timeout=10.0, read_timeout=5.0, max_connections=500)
    server = make_door(bench_app(), host="127.0.0.1", port=0, limits=limits)
    thread = serve_in_thread(server)
    try:
        _wait_up(server.port)
        return run(server.port)
    finally:
        server.stop()
        thread.join(30)


def _wait_up(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise SystemExit(f"nothing answered on port {port}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stalled", type=int, default=64)
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cra-door-bench-") as tmp:
        os.environ.update(
            {
                "CRA_WEBHOOK_SECRET": "bench",
                "CRA_TOKEN": "bench",  # the services' GitHub client is built, never called
                "CRA_SANDBOX": "none",  # no run is executed
                "CRA_DATA_DIR": tmp,
                "CRA_DATABASE_URL": f"sqlite:///{tmp}/cra.db",
            }
        )
        env = {**os.environ, "PYTHONPATH": str(HERE.parent)}

        def run(port: int) -> dict[str, float]:
            return siege(port, args.stalled, args.requests)

        results = {
            "gunicorn gthread (8 threads)": with_gunicorn(env, run),
            "cra-bot serve (bot.web.door)": with_door(run),
        }
    print(f"{args.stalled} stalled connections, {args.requests} /healthz requests (2 s timeout)")
    for name, r in results.items():
        print(
            f"  {name:30} answered {int(r['answered']):3}/{args.requests}  "
            f"slowest {r['slowest_s']:.2f} s  stalled closed {int(r['closed'])}/{args.stalled}"
        )
    old, new = (r["answered"] for r in results.values())
    print(
        f"  answer rate, door / gunicorn: {new / old:.1f}x"
        if old
        else "  answer rate, door / gunicorn: gunicorn answered none"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
