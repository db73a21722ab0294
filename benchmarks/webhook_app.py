"""The webhook apps without a server: cra's and the minimal Flask app called as WSGI functions
in this process, the same deliveries as benchmarks/webhook.py, CPU per delivery and the ratio.

What the server adds (threads, the GIL's hand-offs between them, sockets) is left out: this is
the apps' own cost, cra's against the floor of a Python receiver. SQLite in a temporary folder;
cra's worker busy with its first run (as in webhook.py). `--profile` prints cProfile's heaviest
functions for cra.

Run: .venv/bin/python benchmarks/webhook_app.py [-n 6000] [--rounds 3] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import logging
import os
import pstats
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from webhook import LABEL, SECRET, Delivery, deliveries  # noqa: E402

from bot.intake.webhooks import sign  # noqa: E402

App = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def environ(delivery: Delivery) -> dict[str, Any]:
    """The WSGI environ of the delivery's POST /webhook, as waitress builds it."""
    return {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/webhook",
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
        "wsgi.input": io.BytesIO(delivery.body),
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(delivery.body)),
        "HTTP_X_GITHUB_EVENT": "issues",
        "HTTP_X_GITHUB_DELIVERY": delivery.delivery_id,
        "HTTP_X_HUB_SIGNATURE_256": sign(delivery.body, SECRET),
        "HTTP_USER_AGENT": "GitHub-Hookshot/benchmark",
    }


def build(kind: str, work: Path) -> App:
    """cra's app or the minimal one on a fresh SQLite file in `work` (cra with its INFO log)."""
    import webhook_servers

    os.environ.update(
        {
            "CRA_WEBHOOK_SECRET": SECRET,
            "BENCH_SECRET": SECRET,
            "CRA_LABEL": LABEL,
            "CRA_DATABASE_URL": f"sqlite:///{work / 'cra.db'}",
            "CRA_DATA_DIR": str(work),
            "BENCH_DATABASE": str(work / "minimal.db"),
            "CRA_QUEUE": "thread",
            "CRA_WORKERS": "1",
            "CRA_TOKEN": "bench",  # the services' GitHub client is built, never called
            "CRA_SANDBOX": "none",  # no run is executed
        }
    )
    if kind == "cra":  # `cra-bot serve`'s line per run, into a file
        handler = logging.FileHandler(work / "server.log")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
        logging.getLogger().addHandler(handler)
        logging.getLogger().setLevel(logging.INFO)
        return webhook_servers.cra_app()  # type: ignore[no-any-return]
    return webhook_servers.minimal_app()


def feed(app: App, environs: list[dict[str, Any]], expected: list[int]) -> float:
    """Call the app once per environ; the process's CPU seconds. SystemExit on a wrong status."""
    statuses: list[int] = []

    def start_response(status: str, headers: Any, exc_info: Any = None) -> None:
        statuses.append(int(status.split()[0]))

    began = time.process_time()
    for env in environs:
        body = app(env, start_response)
        for _ in body:
            pass
        close = getattr(body, "close", None)
        if close is not None:
            close()
    spent = time.process_time() - began
    if statuses != expected:
        wrong = sum(a != b for a, b in zip(statuses, expected, strict=True))
        raise SystemExit(f"{wrong} deliveries were answered with another status")
    return spent


def measure(kind: str, count: int, rounds: int, profile: bool) -> float:
    """CPU ms per delivery: a fresh batch (new ids and issues) per round, the median round."""
    spent: list[float] = []
    with tempfile.TemporaryDirectory(prefix=f"cra-webhook-app-{kind}-") as folder:
        app = build(kind, Path(folder))
        for round_ in range(rounds + 1):  # the first round warms up
            batch = deliveries(count, first_issue=1000 + 2 * count * round_, repeat_every=20)
            environs = [environ(d) for d in batch]
            expected = [d.request(kind).expected for d in batch]
            profiler = cProfile.Profile() if profile and round_ == rounds else None
            if profiler is not None:
                profiler.enable()
            seconds = feed(app, environs, expected)
            if profiler is not None:
                profiler.disable()
                pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
            elif round_:
                spent.append(seconds / len(batch) * 1000)
    spent.sort()
    return spent[len(spent) // 2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=6000, help="deliveries per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="profile cra's last round")
    args = parser.parse_args(argv)
    floor = measure("min", args.n, args.rounds, profile=False)
    cra = measure("cra", args.n, args.rounds + (1 if args.profile else 0), args.profile)
    print(
        f"WSGI apps in one process, SQLite, {args.n} deliveries (+ redeliveries) x "
        f"{args.rounds} rounds "
        f"(median), CPU per delivery:"
    )
    print(f"  minimal Flask app   {floor:.3f} ms")
    print(f"  cra's app           {cra:.3f} ms  = {cra / floor:.2f}x the minimal app")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
