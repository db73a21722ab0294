"""The targets of benchmarks/webhook.py: how each server starts, on which fresh database, and
what it recorded afterwards."""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.error import URLError

from sqlalchemy import create_engine, make_url, text

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Target:
    """A server to measure: the app (cra, minimal, probot) and how it is served."""

    title: str
    kind: str  # cra | minimal | probot | bare
    server: str  # door | gunicorn | node


TARGETS = {
    "cra": Target("cra-bot serve (door: waitress)", "cra", "door"),
    "min": Target("minimal Flask (door: waitress)", "minimal", "door"),
    "min-g": Target("minimal Flask (gunicorn gthread)", "minimal", "gunicorn"),
    "probot": Target("Probot 14 (Node)", "probot", "node"),
    "cra-g": Target("cra's app (gunicorn gthread)", "cra", "gunicorn"),
    "bare": Target("bare WSGI 200 (door: waitress)", "bare", "door"),
}


@dataclass(frozen=True)
class Server:
    """A running target: its port and the pid at the root of its process tree."""

    port: int
    pid: int


# --- databases -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Database:
    """Where targets store deliveries: a SQLite file per target, or a fresh PostgreSQL schema."""

    name: str
    postgres_url: str | None
    work: Path

    @contextmanager
    def fresh(self) -> Iterator[str]:
        """A SQLAlchemy URL of an empty database, dropped afterwards."""
        if self.postgres_url is None:
            yield f"sqlite:///{self.work / f'{uuid.uuid4().hex[:8]}.db'}"
            return
        from tests.runlog.test_store import postgres_schema_url  # the tests' fresh-schema helper

        yield from postgres_schema_url(self.postgres_url)


def libpq_url(url: str) -> str:
    """A SQLAlchemy PostgreSQL URL as a libpq one (for psycopg and node-postgres)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def schema_of(url: str) -> str:
    """The schema a URL's search_path option names (public when none)."""
    options = str(make_url(url).query.get("options", ""))
    return options.split("search_path=", 1)[1] if "search_path=" in options else "public"


def count_recorded(target: Target, url: str, ids: set[str]) -> tuple[int, int, int]:
    """(sent ids found among the recorded deliveries, runs stored, distinct deliveries with a
    run) — the last two are 0 for the peers, which store no runs; the bare app stores nothing
    (every id counts as recorded)."""
    if target.kind == "bare":
        return len(ids), 0, 0
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT delivery_id FROM deliveries"))
            found = {row[0] for row in rows}
            runs = distinct = 0
            if target.kind == "cra":
                runs, distinct = connection.execute(
                    text("SELECT count(*), count(DISTINCT delivery_id) FROM runs")
                ).one()
    finally:
        engine.dispose()
    return len(found & ids), int(runs), int(distinct)


# --- starting a target -----------------------------------------------------------------------


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _sqlite_path(url: str) -> str | None:
    """The file of a SQLite URL, None for another database."""
    return url.split(":///", 1)[1] if url.startswith("sqlite") else None


def _environment(
    url: str, work: Path, args: argparse.Namespace, secret: str, label: str
) -> dict[str, str]:
    """The server's environment: CRA_* for cra, BENCH_* for the minimal app and Probot."""
    return {
        **os.environ,
        "CRA_WEBHOOK_SECRET": secret,
        "CRA_DATABASE_URL": url,
        "CRA_LABEL": label,
        "CRA_DATA_DIR": str(work),
        "CRA_QUEUE": "thread",
        "CRA_WORKERS": "1",
        "CRA_TOKEN": "bench",  # the services' GitHub client is built, never called
        "CRA_SANDBOX": "none",  # no run is executed
        "CRA_SERVER_THREADS": str(args.threads),
        "BENCH_SECRET": secret,
        "BENCH_DATABASE": _sqlite_path(url) or libpq_url(url),
        "BENCH_IDLE_WORKERS": "1" if args.idle_workers else "0",
        "PYTHONPATH": str(HERE.parent),
        "NODE_ENV": "production",
    }


def _command(target: Target, port: int, url: str, args: argparse.Namespace) -> list[str]:
    """The command line that serves the target."""
    if target.server.startswith("door"):
        return [sys.executable, str(HERE / "webhook_servers.py"), "door", target.kind, str(port)]
    if target.server == "gunicorn":
        app = f"webhook_servers:{'cra' if target.kind == 'cra' else 'minimal'}_app()"
        return [
            sys.executable,
            "-m",
            "gunicorn",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(args.gunicorn_workers),
            "--threads",
            str(args.gunicorn_threads),
            "--worker-class",
            "gthread",
            "--pythonpath",
            str(HERE),
            "--log-level",
            "warning",
            app,
        ]
    database = _sqlite_path(url) or libpq_url(url).split("?")[0]
    return ["node", str(args.probot_dir / "app.mjs"), str(port), database, schema_of(url)]


@contextmanager
def running(
    target: Target, url: str, work: Path, args: argparse.Namespace, secret: str, label: str
) -> Iterator[Server]:
    """The target serving on a loopback port until the block ends; always stopped."""
    if target.kind == "cra":
        from bot.store.runs import BotStore

        BotStore.open(url).close()  # migrate first, as `cra-bot serve` does before serving
    port = free_port()
    data = work / f"{target.kind}-{port}"
    data.mkdir()
    with open(data / "server.log", "wb") as log:
        process = subprocess.Popen(
            _command(target, port, url, args),
            env=_environment(url, data, args, secret, label),
            cwd=args.probot_dir if target.server == "node" else HERE,
            stdout=log,
            stderr=log,
        )
        try:
            _wait_ready(port, process, data / "server.log")
            yield Server(port, process.pid)
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_ready(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    """Poll /healthz until it answers."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited early:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                return
        except (URLError, OSError):
            time.sleep(0.1)
    raise SystemExit(f"the server did not become ready in 60 s:\n{log.read_text()}")


# --- Probot's scratch folder -----------------------------------------------------------------


def probot_ready(folder: Path, source: Path) -> bool:
    """Install Probot with npm into `folder` the first time, copy the peer app; False (and
    why) when Node or npm is missing or the install fails."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        print("Probot skipped: node and npm are needed", file=sys.stderr)
        return False
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(source / "app.mjs", folder / "app.mjs")
    if not (folder / "node_modules" / "probot").is_dir():
        shutil.copy(source / "package.json", folder / "package.json")
        print(f"installing Probot into {folder} (npm) …", file=sys.stderr)
        done = subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=folder)
        if done.returncode != 0:
            print("Probot skipped: npm install failed", file=sys.stderr)
            return False
    return True
