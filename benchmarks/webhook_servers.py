"""The servers benchmarks/webhook.py starts: cra's app and a minimal Flask app, each behind the
door (bot.web.door: waitress, as `cra-bot serve` runs) or under gunicorn.

The minimal app is the floor for a Python webhook receiver: verify the HMAC, parse the JSON,
insert the delivery id (deduplicated by the primary key) into SQLite (WAL) or PostgreSQL, answer.

Run: python benchmarks/webhook_servers.py door cra|minimal|bare PORT  (settings: CRA_*, BENCH_*)
gunicorn: --pythonpath benchmarks 'webhook_servers:cra_app()' or 'webhook_servers:minimal_app()'
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flask import Flask, request

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CREATE = (
    "CREATE TABLE IF NOT EXISTS deliveries (delivery_id TEXT PRIMARY KEY, "
    "event TEXT NOT NULL, action TEXT, received_at TEXT NOT NULL)"
)
INSERT_SQLITE = "INSERT INTO deliveries VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING"
INSERT_POSTGRES = "INSERT INTO deliveries VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING"


def cra_app() -> Any:
    """cra's app from CRA_* settings; runs are stored and enqueued, never executed.

    Its worker is busy with the first run for as long as the server lives, as workers are during
    a burst of deliveries (a run takes minutes): the runs after it wait in the queue, and
    enqueueing one wakes no thread. BENCH_IDLE_WORKERS=1 gives it a worker that takes each run
    at once and does nothing with it — a regime no server meets under load (a thousand runs
    finished per second), which charges every delivery with a thread's hand-off.
    """
    from bot.services import build_services
    from bot.settings import BotSettings
    from bot.web.app import create_app

    settings = BotSettings()
    if os.environ.get("BENCH_IDLE_WORKERS") == "1":
        idle = build_services(settings, execute=lambda run_id, services: None)
        return create_app(settings, idle)
    busy = threading.Event()  # never set: the worker's first run lasts until the server ends
    busy_services = build_services(settings, execute=lambda run_id, services: busy.wait())
    return create_app(settings, busy_services)


def _connect(database: str) -> Any:
    """A connection to BENCH_DATABASE: a SQLite path (WAL) or a libpq URL."""
    if database.startswith("postgresql"):
        import psycopg

        return psycopg.connect(database)
    connection = sqlite3.connect(database, check_same_thread=False)
    connection.execute("PRAGMA busy_timeout=5000")
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    return connection


def minimal_app() -> Flask:
    """Verify, parse, insert the delivery id, answer 200: one connection per thread."""
    secret = os.environ["BENCH_SECRET"].encode()
    database = os.environ["BENCH_DATABASE"]
    insert = INSERT_POSTGRES if database.startswith("postgresql") else INSERT_SQLITE
    first = _connect(database)
    if database.startswith("postgresql"):  # gunicorn's workers start at once, and PostgreSQL's
        first.execute("SELECT pg_advisory_xact_lock(14)")  # CREATE … IF NOT EXISTS can race
    first.execute(CREATE)
    first.commit()
    first.close()
    local = threading.local()
    app = Flask(__name__)

    @app.post("/webhook")
    def webhook() -> tuple[str, int]:
        body = request.get_data()
        wanted = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(wanted, request.headers.get("X-Hub-Signature-256", "")):
            return "", 401
        payload = json.loads(body)
        if not hasattr(local, "connection"):
            local.connection = _connect(database)
        local.connection.execute(
            insert,
            (
                request.headers["X-GitHub-Delivery"],
                request.headers["X-GitHub-Event"],
                payload.get("action"),
                datetime.now(UTC).isoformat(),
            ),
        )
        local.connection.commit()  # one transaction per delivery
        return "", 200

    @app.get("/healthz")
    def healthz() -> tuple[str, int]:
        return "ok", 200

    return app


def bare_app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """A WSGI app that reads the body and answers 200: the server's own cost per request."""
    environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]


def serve_door(which: str, port: int) -> None:
    """Serve cra's or the minimal app behind the door, with the settings `cra-bot serve` uses."""
    import logging
    import signal

    from bot.settings import BotSettings
    from bot.web.door import DoorLimits, make_door

    if which == "cra":  # as `cra-bot` configures it: a line per delivery (to the server's log)
        logging.basicConfig(
            level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s"
        )
    settings = BotSettings()
    app = cra_app() if which == "cra" else minimal_app() if which == "minimal" else bare_app
    server = make_door(app, host="127.0.0.1", port=port, limits=DoorLimits.of(settings))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server.run()


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "door" or sys.argv[2] not in ("cra", "minimal", "bare"):
        raise SystemExit(__doc__)
    serve_door(sys.argv[2], int(sys.argv[3]))
