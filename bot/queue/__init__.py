"""Runs waiting and running: `queues` (in-process worker threads, or RQ on Redis: `redis_queue`),
`liveness` (a working run's heartbeat, and the reaper of runs whose heartbeat stopped) and
`run_progress` (the progress a run stamps as it moves). The RQ job itself lives in bot.jobs, whose
dotted name RQ stores; `cra-bot worker` is bot.cli.workers."""
