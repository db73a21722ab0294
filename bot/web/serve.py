"""Serving: the webhook app behind the door (waitress; or Flask's dev server)."""

from __future__ import annotations

import logging
import signal
import sys
import threading

from flask import Flask

from agent.errors import AgentError
from agent.git.workspace import remove_abandoned
from bot.queue.liveness import Patience, Reaper, recover
from bot.queue.queues import INTERRUPTED, ThreadQueue
from bot.run.replying import report_ended
from bot.run.runner import execute_run
from bot.services import Services, build_services
from bot.settings import BotSettings
from bot.web.app import create_app
from bot.web.door import DoorLimits, make_door

log = logging.getLogger(__name__)

# A server told to stop ends within Docker's stop timeout (10 s, then SIGKILL): the door's
# in-flight requests (up to 5 s), then these.
STOP_GRACE = 2.0  # seconds the runs in progress get to end by themselves
REPORT_WAIT = 2.5  # seconds at most for telling GitHub about the runs the stop ended


def make_app(settings: BotSettings) -> tuple[Flask, Services]:
    """The app with real services; with the thread queue, what a dead process of this host
    left is recovered (bot.queue.liveness.recover; another live server's runs are its own).

    Reporting them to GitHub is best effort: a run that cannot be reported (its repository
    gone, GitHub down) is still ended, and the server still starts.
    """
    services = build_services(settings, execute=execute_run)
    if settings.queue == "thread":  # the runs, worktrees and environments a dead process left
        try:  # one that cannot be removed is left; the server still starts
            remove_abandoned(settings.data_dir / "work")
        except (AgentError, OSError) as exc:
            log.warning("could not remove the worktrees a dead process left: %s", exc)
        recovered = recover(services.store, services.queue)
        report_in_background(recovered.interrupted, services)
    services.store.prune_deliveries()
    return create_app(settings, services), services


def report_in_background(run_ids: list[int], services: Services) -> threading.Thread | None:
    """Tell GitHub about runs recovery ended, from a daemon thread: a GitHub that is slow or
    failing (retries, Retry-After) never holds up the server's start."""
    if not run_ids:
        return None

    def report() -> None:
        for run_id in run_ids:
            report_ended(run_id, services)

    thread = threading.Thread(target=report, name="cra-recovery-report", daemon=True)
    thread.start()
    return thread


def start_reaper(settings: BotSettings, services: Services) -> Reaper | None:
    """The server's reaper (bot.queue.liveness), unless CRA_REAP_INTERVAL is 0."""
    if settings.reap_interval <= 0:
        return None
    patience = Patience(
        stale_after=settings.stale_after,
        requeue_after=settings.requeue_after,
        stall_after=settings.run_stall_timeout,
    )
    reaper = Reaper(
        services.store,
        services.queue,
        patience,
        report=lambda run_id: report_ended(run_id, services),
        work_dir=settings.data_dir / "work",
    )
    return reaper.start(settings.reap_interval)


def serve(settings: BotSettings, *, host: str, port: int, dev: bool) -> int:
    """Serve until stopped: one process, its I/O thread reading requests whole before
    CRA_SERVER_THREADS threads answer them (bot.web.door says why)."""
    settings.require_webhook_secret()  # bot.cli.startup.check_serve proved the rest (the sandbox …)
    app, services = make_app(settings)
    reaper = start_reaper(settings, services)
    try:
        if dev:
            app.run(host=host, port=port, threaded=True)
            return 0
        server = make_door(app, host=host, port=port, limits=DoorLimits.of(settings))
        if threading.current_thread() is threading.main_thread():  # `docker stop` sends TERM
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        log.info("serving on http://%s:%s", host, server.port)
        server.run()  # returns on SystemExit and KeyboardInterrupt, its threads stopped
    finally:
        if threading.current_thread() is threading.main_thread():  # a second TERM: let the
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # stop below end its runs (≤ 5 s)
        if reaper is not None:
            reaper.stop()
        stop_runs(services)
        services.close()
    return 0


def stop_runs(
    services: Services, *, grace: float = STOP_GRACE, report_wait: float = REPORT_WAIT
) -> list[int]:
    """A server told to stop, with its runs in this process (the thread queue): none starts any
    more (the queued ones wait in the database for the next start), and those in progress get
    `grace` seconds to end; the rest are ended now — failed, "interrupted", each once (the
    reaper or a cancel may have ended it first) — and reported on their issues, waiting
    `report_wait` seconds at most for GitHub (the status is recorded whatever GitHub does).
    Their threads, and with them their sandboxes, end with the process; their worktrees are
    removed at the next start. The ids of the runs it ended."""
    if not isinstance(services.queue, ThreadQueue):
        return []  # RQ: the runs are the workers' (the reaper ends those of a dead worker)
    left = services.queue.stop(grace)
    ended = [
        run_id for run_id in left if services.store.end_run(run_id, "failed", error=INTERRUPTED)
    ]
    if ended:
        log.warning(
            "stopping: ended run(s) %s, still in progress (interrupted)", ", ".join(map(str, ended))
        )
        thread = report_in_background(ended, services)
        if thread is not None:
            thread.join(report_wait)
    return ended
