"""`cra-bot`: serve the webhook, run workers, run one issue, run inside Actions, register,
bench a repository's history, and check the set-up (`doctor`) or the database (`migrate`)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent.console import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    add_version,
    configure_logging,
    describe_unknown,
    global_options,
    run_main,
    shown_url,
    suppressed,
)
from agent.doctor.report import render
from bot.cli.bench import add_bench_parser, bench
from bot.environment import actions_environment, process_environment, unknown_settings
from bot.errors import BotError, SettingsError
from bot.settings import BotSettings

log = logging.getLogger("cra-bot")


def build_parser() -> argparse.ArgumentParser:
    """The `cra-bot` argument parser; global options go before or after the subcommand."""
    common = global_options(env_file=True)
    parser = argparse.ArgumentParser(
        prog="cra-bot", description="cra's GitHub App", parents=[common]
    )
    add_version(parser, "cra-bot")
    below = suppressed(common)
    commands = parser.add_subparsers(dest="command", required=True)
    _add_serve(commands, below)
    worker = commands.add_parser(
        "worker", parents=[below], help="an RQ worker executing runs and bench tasks (CRA_QUEUE=rq)"
    )
    worker.add_argument("--burst", action="store_true", help="execute the queued runs, then exit")
    run = commands.add_parser(
        "run", parents=[below], help="solve one issue now, from this terminal"
    )
    run.add_argument("--repo", required=True, help="owner/name")
    run.add_argument("--issue", type=int, required=True)
    run.add_argument("--instructions", default="")
    run.add_argument("--installation", type=int, help="the App installation id")
    doctor = commands.add_parser(
        "doctor",
        parents=[below],
        help="check the settings, the App's key, the database, the queue and the models",
    )
    doctor.add_argument("--json", action="store_true", help="print the findings as JSON")
    commands.add_parser(
        "migrate", parents=[below], help="create or upgrade the database schema, then exit"
    )
    commands.add_parser(
        "action", parents=[below], help="inside GitHub Actions: handle this workflow's event"
    )
    commands.add_parser("register", help="register the GitHub App from app.yml", add_help=False)
    add_bench_parser(commands, below)
    return parser


def _add_serve(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], below: argparse.ArgumentParser
) -> None:
    serve = commands.add_parser(
        "serve", parents=[below], help="serve the webhook (waitress; --dev: Flask)"
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--dev", action="store_true", help="Flask's development server")


def main(argv: Sequence[str] | None = None) -> int:
    """Run `cra-bot`; 0 success, 1 failure, 2 usage or settings error."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    flags = 0  # `register` has options of its own; -v / --debug may come before it
    while flags < len(args_list) and args_list[flags] in ("-v", "--verbose", "--debug"):
        flags += 1
    if args_list[flags : flags + 1] == ["register"]:
        from bot.cli.register import register_main

        return register_main(args_list[flags + 1 :])
    try:
        args = build_parser().parse_args(args_list)
    except SystemExit as exc:
        return EXIT_USAGE if exc.code not in (0, None) else EXIT_OK
    configure_logging(verbose=args.verbose, debug=args.debug)
    return run_main("cra-bot", lambda: _guarded(args), debug=args.debug)


def _guarded(args: argparse.Namespace) -> int:
    """The subcommand; a BotError (a setting, a file, GitHub) is one line and exit 2."""
    try:
        return _dispatch(args)
    except BotError as exc:
        print(f"cra-bot: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "action":
        return _action()
    if args.command == "doctor":
        return _doctor(args.env_file, as_json=args.json)
    if args.command == "bench" and args.actions:
        env = actions_environment()
        return bench(BotSettings.for_actions(env), args, args.repo or env.repository)
    settings = BotSettings.load(args.env_file)
    _warn_unknown(args.env_file)
    from bot.cli import startup

    if args.command == "serve":
        startup.check_serve(settings, host=args.host, port=args.port)
        _warn_models(settings)
        from bot.web.serve import serve

        return serve(settings, host=args.host, port=args.port, dev=args.dev)
    if args.command == "worker":
        startup.check_worker(settings)
        _warn_models(settings)
        from bot.cli.workers import rq_worker

        return rq_worker(settings, burst=args.burst)
    if args.command == "migrate":
        startup.require_database(settings.database_url)
        print(f"cra-bot: {shown_url(settings.database_url)} is at the newest migration")
        return EXIT_OK
    if args.command == "bench":
        if not args.repo:
            raise SettingsError("cra-bot bench needs --repo owner/name (or --actions)")
        return bench(settings, args, args.repo)
    startup.check_worker(settings, queue=False)
    return _run_one(settings, args.repo, args.issue, args.instructions, args.installation)


def _warn_unknown(env_file: Path | None) -> None:
    """Name each CRA_ variable no setting reads, with the setting it may have meant."""
    for name, nearest in unknown_settings(process_environment(), env_file):
        print(f"cra-bot: warning: {describe_unknown('cra-bot', name, nearest)}", file=sys.stderr)


def _warn_models(settings: BotSettings) -> None:
    """Say which model servers do not answer yet (runs fail until they do)."""
    from bot.cli.startup import model_warnings

    for line in model_warnings(settings):
        print(f"cra-bot: warning: {line}", file=sys.stderr)


def _doctor(env_file: Path | None, *, as_json: bool) -> int:
    """`cra-bot doctor`: one line per check; 0 only when none failed."""
    from bot.cli.doctor import server_report

    try:
        settings: BotSettings | None = BotSettings.load(env_file)
        error = None
    except SettingsError as exc:
        settings, error = None, str(exc)
    report = server_report(settings, process_environment(), env_file, error)
    print(render(report, as_json=as_json))
    return EXIT_OK if report.passed else EXIT_FAILED


def _run_one(
    settings: BotSettings, repo: str, issue: int, instructions: str, installation: int | None
) -> int:
    """`cra-bot run`: store a run started from the server's terminal and execute it here."""
    from bot.intake.triggers import Trigger
    from bot.sandboxes import check_sandbox
    from bot.services import build_services

    services = build_services(settings)
    try:
        check_sandbox(settings, services.sandbox)
        if installation is None and settings.app_id is not None:
            installation = services.github.installation_for(repo)
        trigger = Trigger(
            command="solve",
            repository=repo,
            issue_number=issue,
            actor="cli",
            instructions=instructions,
            source="cli",
            installation_id=installation,
            delivery_id=f"cli-{uuid.uuid4()}",
        )
        run = services.store.create_run(trigger)
        return _execute(services, run.id)
    finally:
        services.close()


def _action() -> int:
    """`cra-bot action`: the workflow's event through the same triggers, executed in this job."""
    from bot.intake.triggers import route
    from bot.intake.webhooks import event_from_payload
    from bot.sandboxes import check_sandbox
    from bot.services import build_services

    env = actions_environment()
    settings = BotSettings.for_actions(env)
    payload: dict[str, Any] = json.loads(Path(env.event_path).read_text(encoding="utf-8"))
    event = event_from_payload(env.event_name, f"actions-{env.run_id or uuid.uuid4()}", payload)
    if event.repository is None:  # an Actions event file may lack it; the job knows
        event = dataclasses.replace(event, repository=env.repository)
    trigger = route(event, label=settings.label)
    if trigger is None:
        print("cra-bot: this event asks nothing of cra")
        return EXIT_OK
    services = build_services(settings)
    try:
        from bot.store.record import store_run

        check_sandbox(settings, services.sandbox)
        run = store_run(
            services.store,
            trigger,
            public_url=settings.public_url,
            stale_after=settings.stale_after,
        )
        if run is None:
            print("cra-bot: a run is already active on this issue, and it has been told so")
            return EXIT_OK
        return _execute(services, run.id)
    finally:
        services.close()


def _execute(services: Any, run_id: int) -> int:
    """Execute a run in this process, SIGINT and SIGTERM ending it cleanly (Actions cancels a
    job with SIGINT, then SIGTERM, then SIGKILL): recorded cancelled, its issue and check told;
    exit 130 or 143 then."""
    from agent.interrupts import interruptible
    from bot.run.runner import execute_run

    with interruptible() as interrupts:
        execute_run(run_id, services)
    code = _report(services, run_id)
    return interrupts.exit_code or code


def _report(services: Any, run_id: int) -> int:
    run = services.store.get_run(run_id)
    if run is None:
        return EXIT_FAILED
    print(
        f"run {run.id}: {run.status}"
        + (f" — {run.pr_url}" if run.pr_url else "")
        + (f" ({run.error})" if run.error else "")
    )
    return EXIT_OK if run.status in ("succeeded", "rejected") else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
