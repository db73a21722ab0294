"""Webhook path: signed deliveries against cra's app under gunicorn, beside a bare 200 app.

Starts gunicorn on a loopback port serving `create_app` (SQLite in a temporary folder, a thread
queue whose workers do nothing: a run is stored and enqueued, never executed), sends N signed
deliveries with 32 concurrent clients (half `issues.labeled` with the label, half `issues.opened`),
then does the same against a bare WSGI app answering 200 under the same gunicorn settings.
Prints throughput, p50 and p99 latency and lost deliveries (sent − recorded in the deliveries
table; must be 0), and cra's numbers as ratios of the bare app's. Exits 1 on a lost delivery or
an unexpected status.

Run: .venv/bin/python benchmarks/webhook.py [-n 2000] [--concurrency 32] [--workers 4]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # the recorded payloads live in tests/fixtures

from bot.app import create_app  # noqa: E402
from bot.settings import BotSettings  # noqa: E402
from bot.store import BotStore  # noqa: E402
from bot.webhooks import sign  # noqa: E402
from tests.fixtures import webhook_bytes  # noqa: E402

SECRET = "benchmark-secret"
LABEL = "cra"


# --- what gunicorn serves --------------------------------------------------------------------


def bench_app() -> Any:
    """cra's app from CRA_* settings, its thread workers doing nothing (gunicorn factory)."""
    return create_app(BotSettings(), execute=lambda run_id: None)


def bare_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """A WSGI app that reads the body and answers 200: the floor to compare against."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    environ["wsgi.input"].read(length)
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]


# --- the deliveries --------------------------------------------------------------------------


@dataclass(frozen=True)
class Delivery:
    """One request to send: its event, exact body, id and the status it should get."""

    event: str
    body: bytes
    delivery_id: str
    expected: int

    def headers(self) -> dict[str, str]:
        """The headers GitHub sends, signed over the exact body."""
        return {
            "X-GitHub-Event": self.event,
            "X-GitHub-Delivery": self.delivery_id,
            "X-GitHub-Hook-ID": "292430182",
            "X-Hub-Signature-256": sign(self.body, SECRET),
            "User-Agent": "GitHub-Hookshot/benchmark",
            "Content-Type": "application/json",
        }


def deliveries(count: int) -> list[Delivery]:
    """Half labeled issues (each its own issue number), half opened issues (recorded bytes)."""
    labeled = json.loads(webhook_bytes("issues", "labeled.payload.json"))
    labeled["label"]["name"] = LABEL
    opened = webhook_bytes("issues", "opened.payload.json")
    made = []
    for n in range(count):
        if n % 2 == 0:
            labeled["issue"]["number"] = n + 1
            body, expected = json.dumps(labeled).encode(), 202
        else:
            body, expected = opened, 204
        made.append(Delivery("issues", body, str(uuid.uuid4()), expected))
    return made


# --- sending ---------------------------------------------------------------------------------


@dataclass
class Result:
    """What one target did with the deliveries."""

    latencies: list[float] = field(default_factory=list)
    unexpected: list[int] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    elapsed: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def percentile(self, q: float) -> float:
        """The q-quantile latency in milliseconds."""
        ordered = sorted(self.latencies) or [float("nan")]
        return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @property
    def throughput(self) -> float:
        return len(self.latencies) / self.elapsed if self.elapsed else 0.0


@dataclass(frozen=True)
class Target:
    """A gunicorn app to measure: its import string, a path answering 200, bare or cra."""

    app: str
    ready_path: str
    bare: bool


CRA = Target("webhook:bench_app()", "/healthz", bare=False)
BARE = Target("webhook:bare_app", "/", bare=True)


def send_all(
    url: str, batch: list[Delivery], concurrency: int, limit_s: float, bare: bool
) -> Result:
    """Send every delivery with `concurrency` clients, stopping after `limit_s` seconds."""
    result = Result()
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    with httpx.Client(base_url=url, limits=limits, timeout=15.0) as client:
        start = time.perf_counter()
        deadline = start + limit_s

        def one(delivery: Delivery) -> None:
            if time.perf_counter() > deadline:
                return
            began = time.perf_counter()
            try:
                status = client.post(
                    "/webhook", content=delivery.body, headers=delivery.headers()
                ).status_code
            except httpx.HTTPError:
                status = 0  # no answer: counted as unexpected (and lost unless recorded)
            took = time.perf_counter() - began
            with result.lock:
                result.latencies.append(took)
                result.sent.append(delivery.delivery_id)
                if status != (200 if bare else delivery.expected):
                    result.unexpected.append(status)

        with ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(one, batch))
        result.elapsed = time.perf_counter() - start
    return result


# --- gunicorn --------------------------------------------------------------------------------


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def gunicorn(
    app: str, port: int, args: argparse.Namespace, env: dict[str, str], log: Path
) -> subprocess.Popen[bytes]:
    """Start gunicorn (gthread workers) serving `app` from this folder on the loopback port."""
    command = [
        sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}",
        "--workers", str(args.workers), "--threads", str(args.threads),
        "--worker-class", "gthread", "--pythonpath", str(HERE),
        "--log-level", "warning", "--error-logfile", str(log), app,
    ]  # fmt: skip
    return subprocess.Popen(command, env={**os.environ, **env}, cwd=HERE)


def wait_ready(url: str, process: subprocess.Popen[bytes], log: Path, path: str) -> None:
    """Poll until the server answers 200, or fail with its log."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"gunicorn exited early:\n{log.read_text()}")
        try:
            if httpx.get(url + path, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"gunicorn did not become ready:\n{log.read_text()}")


def serve_and_send(
    target: Target, args: argparse.Namespace, env: dict[str, str], batch: list[Delivery], work: Path
) -> Result:
    """Start gunicorn, send the batch, and always stop gunicorn again."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = work / f"gunicorn-{port}.log"
    process = gunicorn(target.app, port, args, env, log)
    try:
        wait_ready(url, process, log, target.ready_path)
        return send_all(url, batch, args.concurrency, args.max_seconds, bare=target.bare)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --- report ----------------------------------------------------------------------------------


def recorded(database_url: str, sent: list[str]) -> int:
    """How many of the sent delivery ids the deliveries table holds."""
    with BotStore.open(database_url) as store:
        return sum(store.has_delivery(delivery_id) for delivery_id in sent)


def report(cra: Result, bare: Result, lost: int, runs: int, args: argparse.Namespace) -> None:
    """Print both targets and cra's numbers as ratios of the bare app's."""
    print(
        f"webhook benchmark: {args.n} deliveries (half triggering), concurrency "
        f"{args.concurrency}, gunicorn {args.workers} workers x {args.threads} threads, SQLite"
    )
    print(f"{'':14}{'sent':>7}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'bad':>6}{'lost':>6}")
    for name, r, lost_text in (("cra", cra, str(lost)), ("bare 200", bare, "-")):
        print(f"{name:14}{len(r.sent):>7}{r.throughput:>10.1f}{r.percentile(0.5):>9.2f}"
              f"{r.percentile(0.99):>9.2f}{len(r.unexpected):>6}{lost_text:>6}")  # fmt: skip
    ratio_tp = cra.throughput / bare.throughput if bare.throughput else float("nan")
    ratio_50 = cra.percentile(0.5) / bare.percentile(0.5)
    ratio_99 = cra.percentile(0.99) / bare.percentile(0.99)
    print(f"cra / bare: throughput {ratio_tp:.2f}x, p50 latency {ratio_50:.1f}x, "
          f"p99 latency {ratio_99:.1f}x; runs stored: {runs}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run both targets, print the comparison; 1 when a delivery was lost or answered wrongly."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000, help="deliveries per target")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=8, help="threads per gunicorn worker")
    parser.add_argument("--max-seconds", type=float, default=120.0, help="time limit per target")
    args = parser.parse_args(argv)
    batch = deliveries(args.n)
    with tempfile.TemporaryDirectory(prefix="cra-webhook-bench-") as folder:
        work = Path(folder)
        database_url = f"sqlite:///{work / 'cra.db'}"
        BotStore.open(database_url).close()  # migrate once, as `cra-bot serve` would
        env = {"CRA_WEBHOOK_SECRET": SECRET, "CRA_DATABASE_URL": database_url, "CRA_LABEL": LABEL,
               "CRA_DATA_DIR": str(work), "CRA_QUEUE": "thread", "CRA_WORKERS": "1"}  # fmt: skip
        cra = serve_and_send(CRA, args, env, batch, work)
        bare = serve_and_send(BARE, args, env, batch, work)
        lost = len(cra.sent) - recorded(database_url, cra.sent)
        with BotStore.open(database_url) as store:
            runs = len(store.list_runs(limit=args.n))
    report(cra, bare, lost, runs, args)
    return 1 if lost or cra.unexpected or bare.unexpected else 0


if __name__ == "__main__":
    raise SystemExit(main())
