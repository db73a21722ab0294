"""Serving: the webhook app under gunicorn (or Flask's dev server) and the RQ worker."""

from __future__ import annotations

import logging
import shutil
import sys
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication

from bot.app import create_app
from bot.errors import SettingsError
from bot.queue import recover
from bot.runner import execute_run, report_interrupted
from bot.services import Services, build_services
from bot.settings import BotSettings

log = logging.getLogger(__name__)


def make_app(settings: BotSettings) -> tuple[Flask, Services]:
    """The app with real services; with the thread queue, interrupted runs are recovered."""
    services = build_services(settings, execute=execute_run)
    if settings.queue == "thread":  # no run is live yet: clear what a dead process left
        services.mirrors.clean_worktrees(settings.data_dir / "work" / "worktrees")
        shutil.rmtree(settings.data_dir / "work" / "envs", ignore_errors=True)
        recovered = recover(services.store, services.queue)
        for run_id in recovered.interrupted:
            report_interrupted(run_id, services)
    services.store.prune_deliveries()
    return create_app(settings, services), services


class _Gunicorn(BaseApplication):  # type: ignore[misc]
    """gunicorn serving the app factory; each worker process builds its own services."""

    def __init__(self, settings: BotSettings, options: dict[str, Any]) -> None:
        self._settings = settings
        self._options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            self.cfg.set(key, value)

    def load(self) -> Flask:
        app, _ = make_app(self._settings)
        return app


def serve(settings: BotSettings, *, host: str, port: int, processes: int, dev: bool,
          verbose: bool = False) -> int:
    """Serve until stopped (bot.startup.check_serve first: the sandbox, the key, the port …).
    The thread queue lives in its process: one process, many threads. gunicorn's own start-up
    lines show with `verbose`; errors and the access log always."""
    settings.require_webhook_secret()
    if settings.queue == "thread" and processes != 1:
        raise SettingsError("the thread queue runs inside one process: use --processes 1, "
                            "or CRA_QUEUE=rq with `cra-bot worker`s")
    print(f"cra-bot: serving http://{host}:{port}/webhook "
          f"({'Flask development server' if dev else f'gunicorn, {processes} process(es)'}; "
          "Ctrl-C stops it)", file=sys.stderr, flush=True)
    if dev:
        app, services = make_app(settings)
        try:
            app.run(host=host, port=port, threaded=True)
        finally:
            services.close()
        return 0
    options = {"bind": f"{host}:{port}", "workers": processes, "threads": 8,
               "worker_class": "gthread", "timeout": 30, "accesslog": "-",
               "loglevel": "info" if verbose else "warning"}
    _Gunicorn(settings, options).run()
    return 0


def rq_worker(settings: BotSettings, *, burst: bool = False) -> int:
    """An RQ worker executing `bot.jobs.execute_run_job` jobs from CRA_REDIS_URL
    (bot.startup.check_worker first: the sandbox, the key, the database, Redis)."""
    if settings.queue != "rq" or not settings.redis_url:
        raise SettingsError("cra-bot worker needs CRA_QUEUE=rq and CRA_REDIS_URL")
    from redis import Redis
    from rq import Queue, Worker

    connection = Redis.from_url(settings.redis_url)
    worker = Worker([Queue("cra", connection=connection)], connection=connection)
    worker.work(burst=burst, with_scheduler=False)
    return 0
