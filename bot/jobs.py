"""The RQ job: a run executed by an RQ worker with services built from its environment."""

from __future__ import annotations

from bot.run.runner import execute_run
from bot.services import build_services
from bot.settings import BotSettings


def execute_run_job(run_id: int) -> None:
    """Build the services from the environment, execute the run, release the services."""
    services = build_services(BotSettings.load())
    try:
        execute_run(run_id, services)
    finally:
        services.close()
