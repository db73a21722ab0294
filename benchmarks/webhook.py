"""Webhook intake: `cra-bot serve` beside a minimal Flask app and Probot, in one run.

Each target serves on a loopback port with a fresh database and gets the same signed deliveries
from the same client (benchmarks/webhook_load.py: 32 keep-alive connections by default): half
`issues.labeled` with the label (each its own issue), half `issues.opened` (nothing triggers),
and a share sent twice with the same delivery id (GitHub's redelivery). Targets:

- cra   — cra's app behind the door, as `cra-bot serve` runs it (bot.web.door: waitress, CRA_*
  server
          settings); runs are stored and enqueued, never executed: its one worker is busy with
          the first run, as during a burst (--idle-workers: it takes each run and does nothing);
- min   — the minimal Flask app (verify HMAC, parse, insert the delivery, WAL) behind the same door;
- min-g — the same minimal app under gunicorn (gthread workers);
- probot — Probot 14 on Node (installed with npm into a scratch folder the first time);
- cra-g — cra's app under gunicorn (only with --targets: is the server the bottleneck?).

It prints, per database (SQLite; PostgreSQL with --postgres URL or CRA_TEST_POSTGRES_URL):
throughput, p50/p99 latency, the server process tree's CPU per delivery, unexpected answers, lost
deliveries (sent − recorded) and duplicated runs, then cra's figures as ratios of its peers and
the goals of issue 14. Exits 1 when a delivery is lost or duplicated or answered wrongly.

Run: .venv/bin/python benchmarks/webhook.py [-n 10000] [--concurrency 32] [--postgres URL]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # the recorded payloads live in tests/fixtures
sys.path.insert(0, str(HERE))

from webhook_load import Load, Request, http_request, send  # noqa: E402
from webhook_targets import (  # noqa: E402
    TARGETS,
    Database,
    Target,
    count_recorded,
    probot_ready,
    running,
)

from bot.intake.webhooks import sign  # noqa: E402
from tests.fixtures import webhook_bytes  # noqa: E402

SECRET = "benchmark-secret"
LABEL = "cra"


@dataclass(frozen=True)
class Delivery:
    """One delivery: its id, exact body, and whether it triggers a run or repeats one."""

    delivery_id: str
    body: bytes
    triggers: bool
    repeat: bool = False

    def request(self, kind: str) -> Request:
        """The signed request, expecting cra's status (202/204/200) or a peer's 200."""
        expected = 200 if kind != "cra" or self.repeat else 202 if self.triggers else 204
        headers = {
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": self.delivery_id,
            "X-GitHub-Hook-ID": "292430182",
            "User-Agent": "GitHub-Hookshot/benchmark",
            "X-Hub-Signature-256": sign(self.body, SECRET),
            "Content-Type": "application/json",
        }
        return Request(self.delivery_id, http_request("/webhook", headers, self.body), expected)


def deliveries(count: int, first_issue: int, repeat_every: int) -> list[Delivery]:
    """Half labeled (each its own issue), half opened; every `repeat_every`-th of the first
    half is sent again half a batch later."""
    labeled = json.loads(webhook_bytes("issues", "labeled.payload.json"))
    labeled["label"]["name"] = LABEL
    opened = webhook_bytes("issues", "opened.payload.json")
    made: list[Delivery] = []
    for n in range(count):
        if n % 2 == 0:
            labeled["issue"]["number"] = first_issue + n
            made.append(Delivery(str(uuid.uuid4()), json.dumps(labeled).encode(), True))
        else:
            made.append(Delivery(str(uuid.uuid4()), opened, False))
    repeats = {n + count // 2: made[n] for n in range(0, count // 2, max(1, repeat_every))}
    out: list[Delivery] = []
    for n, delivery in enumerate(made):
        out.append(delivery)
        if n in repeats:
            again = repeats[n]
            out.append(Delivery(again.delivery_id, again.body, again.triggers, repeat=True))
    return out


# --- one target ------------------------------------------------------------------------------


@dataclass
class Outcome:
    """A target's load figures plus what its database holds afterwards."""

    target: Target
    load: Load
    lost: int
    duplicated: int


def measure(
    keys: list[str],
    database: Database,
    args: argparse.Namespace,
    batch: list[Delivery],
    warmup: list[Delivery],
) -> dict[str, Outcome]:
    """Start every target on a fresh database of its own, warm each up, then send the batch in
    rounds, each target in turn, so that the machine's other load falls on all of them alike;
    finally count what each recorded."""
    with ExitStack() as stack:
        urls = {key: stack.enter_context(database.fresh()) for key in keys}
        servers = {
            key: stack.enter_context(
                running(TARGETS[key], urls[key], database.work, args, SECRET, LABEL)
            )
            for key in keys
        }
        loads = {key: Load() for key in keys}
        for key in keys:
            send(
                servers[key].port,
                [d.request(TARGETS[key].kind) for d in warmup],
                args.concurrency,
                args.max_seconds,
                servers[key].pid,
            )
        size = -(-len(batch) // args.rounds)
        for start in range(0, len(batch), size):
            for key in keys:
                requests = [d.request(TARGETS[key].kind) for d in batch[start : start + size]]
                loads[key].add(
                    send(
                        servers[key].port,
                        requests,
                        args.concurrency,
                        args.max_seconds,
                        servers[key].pid,
                    )
                )
        unique = {d.delivery_id for d in batch}
        outcomes = {}
        for key in keys:
            recorded, runs, distinct_runs = count_recorded(TARGETS[key], urls[key], unique)
            outcomes[key] = Outcome(
                TARGETS[key],
                loads[key],
                lost=len(unique) - recorded,
                duplicated=runs - distinct_runs,
            )
    return outcomes


# --- report ----------------------------------------------------------------------------------


def _ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def report(database: str, outcomes: dict[str, Outcome], args: argparse.Namespace) -> bool:
    """Print the table, cra's ratios and the goals; whether nothing was lost or duplicated."""
    print(
        f"\n{database}: {args.n} deliveries + redeliveries, concurrency {args.concurrency}, "
        f"door {args.threads} threads, gunicorn {args.gunicorn_workers} x "
        f"{args.gunicorn_threads} gthread"
    )
    print(
        f"{'target':34}{'req/s':>8}{'p50 ms':>8}{'p99 ms':>8}{'CPU ms':>8}{'sys':>6}"
        f"{'bad':>5}{'fail':>5}{'lost':>5}{'dup':>5}{'closed':>7}"
    )
    clean = True
    for outcome in outcomes.values():
        load = outcome.load
        print(
            f"{outcome.target.title:34}{load.throughput:>8.0f}{load.percentile(0.5):>8.1f}"
            f"{load.percentile(0.99):>8.1f}{load.cpu_ms_per_request:>8.2f}"
            f"{load.system_ms_per_request:>6.2f}{load.unexpected:>5}"
            f"{load.failed:>5}{outcome.lost:>5}{outcome.duplicated:>5}"
            f"{load.reconnects:>7}"
        )
        clean &= not (outcome.lost or outcome.duplicated or load.unexpected or load.failed)
    if "cra" in outcomes:
        print_goals(outcomes)
    return clean


def print_goals(outcomes: dict[str, Outcome]) -> None:
    """cra's figures against each peer measured in this run, and issue 14's goals."""
    cra = outcomes["cra"].load
    for key in ("min", "min-g", "probot", "cra-g"):
        if key in outcomes:
            peer = outcomes[key].load
            print(
                f"  cra / {outcomes[key].target.title}: throughput "
                f"{_ratio(cra.throughput, peer.throughput):.2f}x, CPU per delivery "
                f"{_ratio(cra.cpu_ms_per_request, peer.cpu_ms_per_request):.2f}x, p50 "
                f"{_ratio(cra.percentile(0.5), peer.percentile(0.5)):.2f}x, p99 "
                f"{_ratio(cra.percentile(0.99), peer.percentile(0.99)):.2f}x"
            )
    goals = [("CPU per delivery <= 1.5 ms", cra.cpu_ms_per_request <= 1.5)]
    for key in ("min", "min-g"):
        if key in outcomes:
            ratio = _ratio(cra.throughput, outcomes[key].load.throughput)
            goals.append((f"throughput >= 0.9x {outcomes[key].target.title}", ratio >= 0.9))
    if "probot" in outcomes:
        ratio = _ratio(cra.percentile(0.99), outcomes["probot"].load.percentile(0.99))
        goals.append(("p99 <= 2.5x Probot's", ratio <= 2.5))
    goals.append(("0 lost, 0 duplicated", not (outcomes["cra"].lost or outcomes["cra"].duplicated)))
    print("  goals: " + "; ".join(f"{name}: {'met' if ok else 'NOT met'}" for name, ok in goals))


# --- main ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10000, help="deliveries per target")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument(
        "--repeat-every",
        type=int,
        default=20,
        help="every Nth delivery of the first half is redelivered",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="door threads (default: CRA_SERVER_THREADS's default)",
    )
    parser.add_argument(
        "--idle-workers",
        action="store_true",
        help="cra's worker takes every run at once and does nothing (default: "
        "it is busy with its first run, as during a burst)",
    )
    parser.add_argument("--gunicorn-workers", type=int, default=4)
    parser.add_argument("--gunicorn-threads", type=int, default=8)
    parser.add_argument(
        "--targets", default="cra,min,min-g,probot", help=f"comma-separated, of {','.join(TARGETS)}"
    )
    parser.add_argument(
        "--postgres",
        default=os.environ.get("CRA_TEST_POSTGRES_URL"),
        help="a PostgreSQL URL (postgresql+psycopg://…) to run there too",
    )
    parser.add_argument("--no-sqlite", action="store_true", help="PostgreSQL only")
    parser.add_argument(
        "--probot-dir",
        type=Path,
        default=Path.home() / ".cache" / "cra-benchmarks" / "probot",
        help="scratch folder where npm installs Probot (outside the repository)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="the batch is sent in this many rounds, the targets taking turns",
    )
    parser.add_argument(
        "--max-seconds", type=float, default=180.0, help="time limit per target and round"
    )
    return parser.parse_args(argv)


def databases(args: argparse.Namespace, work: Path) -> list[Database]:
    """SQLite in the work folder, and PostgreSQL when a URL is given."""
    found = [] if args.no_sqlite else [Database("SQLite", None, work)]
    if args.postgres:
        found.append(Database("PostgreSQL", args.postgres, work))
    return found


@contextmanager
def workdir() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="cra-webhook-bench-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Every target on every database; 1 when a delivery was lost, duplicated or mis-answered."""
    args = parse_args(argv)
    from bot.settings import BotSettings

    args.threads = args.threads or BotSettings.model_fields["server_threads"].default
    chosen = [key for key in args.targets.split(",") if key]
    if "probot" in chosen and not probot_ready(args.probot_dir, HERE / "probot"):
        chosen.remove("probot")
    batch = deliveries(args.n, 1, args.repeat_every)
    warmup = deliveries(min(500, max(50, args.n // 10)), args.n + 10, 10**9)
    clean = True
    with workdir() as work:
        for database in databases(args, work):
            outcomes = measure(chosen, database, args, batch, warmup)
            clean &= report(database.name, outcomes, args)
    return 0 if clean else 1


if __name__ == "__main__":
    raise SystemExit(main())
