"""A run whose worker hangs ends, though the worker's heartbeat beats on: `cra-bot serve` as a
real process, its worker stuck in a model call that answers after a minute, the run's stall
timeout fifteen seconds (its test commands limited to fourteen)."""

from __future__ import annotations

import pytest

from tests.e2e.bot_world import BotWorld
from tests.e2e.test_no_stuck_runs import (
    Server,
    bot_comments,
    hold_the_model,
    server_env,
    status_of,
    wait_for,
)

pytestmark = pytest.mark.usefixtures("isolated_git")


def test_a_run_stuck_in_a_model_call_ends_as_stalled_while_its_heartbeat_beats(
    world: BotWorld,
) -> None:
    hold_the_model(world)
    server = Server(server_env(world, CRA_RUN_STALL_TIMEOUT="15", CRA_MAX_TEST_TIMEOUT="14"))
    try:
        run_id = server.label(world)
        ended = wait_for(
            "the stall timeout",
            lambda: (r := status_of(world, run_id)).status not in ("queued", "running") and r,
            timeout=60,
        )
        assert ended.status == "failed", ended
        assert ended.error is not None and ended.error.startswith(
            "no progress for 15 seconds (CRA_RUN_STALL_TIMEOUT): last progress was a call to "
        )
        assert "started at" in ended.error  # the call that never answered
        assert ended.heartbeat_at is not None and ended.progress_at is not None
        assert ended.heartbeat_at > ended.progress_at  # the worker was alive all along
        wait_for(
            "the issue to be told",
            lambda: any("no progress for 15 seconds" in body for body in bot_comments(world)),
        )
        again = server.solve_again(world)
        assert again.status_code == 202, again.text  # the issue is free again
    finally:
        server.stop()
