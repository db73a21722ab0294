"""`cra-bot bench`: an installed repository's past fixes replayed with the server's models, here
or on the queue's workers, and the report published as a page."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agent.console import EXIT_OK
from bot.errors import SettingsError
from bot.settings import BotSettings

if TYPE_CHECKING:
    from bot.bench.replay import Prepared


def add_bench_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], below: argparse.ArgumentParser
) -> None:
    """The `bench` subcommand's arguments."""
    parser = commands.add_parser(
        "bench",
        parents=[below],
        help="replay a repository's past fixes with the server's models and publish the report",
    )
    parser.add_argument("--repo", help="owner/name (with --actions: this job's repository)")
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        help="a model name the server "
        "allows, or oracle (repeatable; default: the configured models)",
    )
    parser.add_argument(
        "--tasks",
        type=Path,
        help="a task file (SWE-bench's format) instead of mining the default branch",
    )
    parser.add_argument("--max", type=int, default=500, help="commits to examine when mining")
    parser.add_argument("--since", help="only commits after this date (git's --since)")
    parser.add_argument(
        "--jobs",
        type=int,
        help="commits replayed at once when mining "
        "(default: the CPUs cra may use) and tasks solved at once (default: 1)",
    )
    parser.add_argument("--installation", type=int, help="the App installation id")
    parser.add_argument(
        "--actions",
        action="store_true",
        help="inside GitHub Actions: the job's token and repository, a throwaway data dir",
    )
    parser.add_argument(
        "--out", type=Path, help="also write report.html, report.json and results.jsonl here"
    )
    parser.add_argument(
        "--summary",
        type=Path,
        help="append the report as Markdown to this file ($GITHUB_STEP_SUMMARY)",
    )
    parser.add_argument(
        "--results",
        type=Path,
        help="the results file (default: bench/OWNER/NAME/results.jsonl in the data dir)",
    )
    parser.add_argument(
        "--tests",
        choices=("hidden", "given"),
        default="hidden",
        help="hidden "
        "(default): each run starts without the fix's tests and is asked as a "
        "user would ask; given: with them in its tree and its statement",
    )
    parser.add_argument(
        "--queue",
        nargs="?",
        const="",
        metavar="REDIS_URL",
        help="fan the "
        "tasks out on RQ (this Redis, else CRA_REDIS_URL) to `cra-bot worker`s, "
        "gather their results, then publish",
    )
    parser.add_argument(
        "--no-wait",
        action="store_true",
        help="with --queue: enqueue and exit; the same command run again gathers and publishes",
    )


def bench(settings: BotSettings, args: argparse.Namespace, repo: str) -> int:
    """`cra-bot bench`: bench a repository here, or on the workers of a queue, and publish its
    report as a page."""
    from agent.bench.report.text import render_text
    from bot.bench.replay import BenchRequest, prepare, publish, run_here, write_outputs
    from bot.cli import startup
    from bot.sandboxes import check_sandbox
    from bot.services import build_services

    if args.no_wait and args.queue is None:
        raise SettingsError("--no-wait goes with --queue (a bench run here always waits)")
    if args.jobs is not None and args.jobs < 1:
        raise SettingsError(f"--jobs must be 1 or more, not {args.jobs}")
    startup.check_worker(settings, queue=False)
    services = build_services(settings)
    say = lambda line: print(f"  {line}", file=sys.stderr)  # noqa: E731
    try:
        check_sandbox(settings, services.sandbox)
        installation = args.installation
        if installation is None and settings.app_id is not None:
            installation = services.github.installation_for(repo)
        request = BenchRequest(
            repository=repo,
            installation_id=installation,
            models=args.model,
            tasks=args.tasks,
            max_commits=args.max,
            since=args.since,
            jobs=args.jobs,
            results=args.results,
            tests=args.tests,
        )
        prepared = prepare(services, request, say)
        if args.queue is None:
            run_here(services, prepared, request.solve_jobs, say)
        elif left := _fan_out(settings, args, prepared, say):
            print(
                f"cra-bot: {left} job(s) on the queue; run the same command again to gather "
                f"their results into {prepared.results} and publish the report"
            )
            return EXIT_OK
        published = publish(services, prepared)
    finally:
        services.close()
    write_outputs(published, repo, out=args.out, summary=args.summary)
    print(render_text(published.report))
    if not args.actions:
        where = published.url if settings.public_url else f"{published.url} on this server"
        print(f"\nreport: {where}")
    print(f"results: {published.results}" + (f"\nwritten to: {args.out}" if args.out else ""))
    return EXIT_OK


def _fan_out(
    settings: BotSettings, args: argparse.Namespace, prepared: Prepared, say: Callable[[str], None]
) -> int:
    """The bench's tasks on the queue's workers; the jobs left there (none once gathered)."""
    from bot.bench.fanout import FanOut, bench_jobs

    url = args.queue or settings.redis_url
    if not url:
        raise SettingsError("--queue needs Redis: --queue redis://HOST:6379/0, or CRA_REDIS_URL")
    fan_out = FanOut(
        url,
        settings.queue_name,
        job_timeout=math.ceil(settings.max_run_minutes * 60 + settings.stale_after),
    )
    try:
        return fan_out.run(prepared.results, bench_jobs(prepared), say, wait=not args.no_wait)
    except KeyboardInterrupt:
        print(
            "cra-bot: stopped waiting; the jobs go on on the workers: run the same command "
            "again to gather their results",
            file=sys.stderr,
        )
        raise
    finally:
        fan_out.close()
