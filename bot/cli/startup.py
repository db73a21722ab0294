"""What `cra-bot serve`, `worker` and `run` check before they start, so that a mistake is one
line naming the setting — not a traceback from inside a gunicorn worker.

The same functions answer the doctor's questions about the data directory, the database and
the queue.
"""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Iterable
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from agent.config.files import ModelsConfig
from agent.console import shown_url
from agent.doctor.checks import check_models
from agent.doctor.report import Finding
from agent.runlog.store import RunLog
from bot.errors import SettingsError
from bot.sandboxes import startup_check
from bot.services import token_provider
from bot.settings import BotSettings
from bot.store.runs import BotStore


def check_serve(settings: BotSettings, *, host: str, port: int) -> None:
    """Everything `serve` needs, checked in the parent process; SettingsError on the first gap.
    The sandbox comes early (fail closed): nothing but the data dir exists before it is proved."""
    settings.require_webhook_secret()
    require_data_dir(settings.data_dir)  # the sandbox's probe hides a canary in it
    if settings.queue == "thread":  # this process runs the workers
        startup_check(settings)
    token_provider(settings)  # the App id and a PEM RSA key (or the Actions token)
    require_free_port(host, port)
    require_database(settings.database_url)
    _require_queue(settings)


def check_worker(settings: BotSettings, *, queue: bool = True) -> None:
    """What an RQ worker (`queue`) or `cra-bot run` needs before it takes a run; a worker's
    sandbox first, as for serve (`run` proves the sandbox of the services it builds)."""
    require_data_dir(settings.data_dir)
    if queue:
        startup_check(settings)
    token_provider(settings)
    require_database(settings.database_url)
    if queue:
        _require_queue(settings)


def require_data_dir(path: Path) -> None:
    """The data directory exists (created if needed) and is writable."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SettingsError(
            f"cannot use {path} as the data dir (CRA_DATA_DIR): "
            f"{exc.strerror or exc} → point CRA_DATA_DIR at a writable "
            "directory"
        ) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise SettingsError(f"the data dir {path} is not writable by this user (CRA_DATA_DIR)")


def require_free_port(host: str, port: int) -> None:
    """Nothing else listens on host:port (as gunicorn binds it: SO_REUSEADDR)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise SettingsError(f"cannot listen on {host} (--host): {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise SettingsError(
                    f"port {port} on {host} is in use (--port): stop what "
                    "listens there, or pass another --port"
                ) from None
            raise SettingsError(
                f"cannot listen on {host}:{port} (--host/--port): {exc.strerror}"
            ) from None


def require_database(url: str) -> None:
    """The database answers and is migrated (here, once, before any worker process starts)."""
    try:
        RunLog.open(url).close()
        BotStore.open(url).close()
    except (SQLAlchemyError, OSError) as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise SettingsError(
            f"cannot open the database {shown_url(url)} (CRA_DATABASE_URL): {reason}"
        ) from None


def queue_problem(settings: BotSettings) -> str | None:
    """Why the configured queue cannot take runs, or None (threads always can)."""
    if settings.queue != "rq":
        return None
    if not settings.redis_url:
        return "CRA_QUEUE=rq needs CRA_REDIS_URL"
    try:
        from bot.queue.redis_queue import RQQueue

        queue = RQQueue(settings.redis_url)
    except ImportError:
        return "CRA_QUEUE=rq needs the redis extra: pip install 'clean-room-agent[redis]'"
    try:
        if not queue.healthy():
            return (
                f"Redis at {shown_url(settings.redis_url)} (CRA_REDIS_URL) does not answer: "
                "start it, or fix CRA_REDIS_URL"
            )
    finally:
        queue.close()
    return None


def _require_queue(settings: BotSettings) -> None:
    problem = queue_problem(settings)
    if problem is not None:
        raise SettingsError(problem)


def server_model_findings(settings: BotSettings) -> Iterable[Finding]:
    """The doctor's line per role: its server answers, has its model, and the window fits."""
    endpoints = settings.endpoints()
    models = ModelsConfig.model_validate(
        {role: endpoint.as_model_config(role).model_dump() for role, endpoint in endpoints.items()}
    )
    keys: dict[str, str | None] = {role: endpoint.key() for role, endpoint in endpoints.items()}
    return check_models(models, keys, in_environment)


def in_environment(role: str, key: str) -> str:
    """Where the server sets a role's key: CRA_CODING_MODEL."""
    return f"CRA_{role.upper()}_{key.upper()}"


def model_warnings(settings: BotSettings) -> list[str]:
    """A line per role whose model server does not answer or lacks the model right now.

    Not fatal: a server may start before its model server; its runs fail until that answers.
    """
    return [
        f"the {f.check}: {f.detail} → {f.fix}"
        for f in server_model_findings(settings)
        if f.status == "fail"
    ]
