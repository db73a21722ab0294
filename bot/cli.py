"""`cra-bot`: serve the webhook, run workers, run one issue, run inside Actions, register."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bot.errors import BotError
from bot.settings import BotSettings, actions_environment

log = logging.getLogger("cra-bot")
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    """The `cra-bot` argument parser."""
    parser = argparse.ArgumentParser(prog="cra-bot", description="cra's GitHub App")
    parser.add_argument("--env-file", type=Path, help="a .env file beneath the environment")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the webhook (waitress; --dev: Flask)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--dev", action="store_true", help="Flask's development server")
    worker = commands.add_parser("worker", help="an RQ worker executing runs (CRA_QUEUE=rq)")
    worker.add_argument("--burst", action="store_true",
                        help="execute the queued runs, then exit")
    run = commands.add_parser("run", help="solve one issue now, from this terminal")
    run.add_argument("--repo", required=True, help="owner/name")
    run.add_argument("--issue", type=int, required=True)
    run.add_argument("--instructions", default="")
    run.add_argument("--installation", type=int, help="the App installation id")
    commands.add_parser("action", help="inside GitHub Actions: handle this workflow's event")
    commands.add_parser("register", help="register the GitHub App from app.yml",
                        add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `cra-bot`; 0 success, 1 failure, 2 usage or settings error."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["register"]:
        from bot.register import register_main

        return register_main(args_list[1:])
    try:
        args = build_parser().parse_args(args_list)
    except SystemExit as exc:
        return EXIT_USAGE if exc.code not in (0, None) else EXIT_OK
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        return _dispatch(args)
    except BotError as exc:
        print(f"cra-bot: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "action":
        return _action()
    settings = BotSettings.load(args.env_file)
    if args.command == "serve":
        from bot.serve import serve

        return serve(settings, host=args.host, port=args.port, dev=args.dev)
    if args.command == "worker":
        from bot.serve import rq_worker

        return rq_worker(settings, burst=args.burst)
    return _run_one(settings, args.repo, args.issue, args.instructions, args.installation)


def _run_one(
    settings: BotSettings, repo: str, issue: int, instructions: str, installation: int | None
) -> int:
    """`cra-bot run`: store a run started from the server's terminal and execute it here."""
    from bot.runner import execute_run
    from bot.sandboxes import check_sandbox
    from bot.services import build_services
    from bot.triggers import Trigger

    services = build_services(settings)
    try:
        check_sandbox(settings, services.sandbox)
        if installation is None and settings.app_id is not None:
            installation = services.github.installation_for(repo)
        trigger = Trigger(command="solve", repository=repo, issue_number=issue, actor="cli",
                          instructions=instructions, source="cli", installation_id=installation,
                          delivery_id=f"cli-{uuid.uuid4()}")
        run = services.store.create_run(trigger)
        execute_run(run.id, services)
        return _report(services, run.id)
    finally:
        services.close()


def _action() -> int:
    """`cra-bot action`: the workflow's event through the same triggers, executed in this job."""
    from bot.runner import execute_run
    from bot.sandboxes import check_sandbox
    from bot.services import build_services
    from bot.triggers import route
    from bot.webhooks import event_from_payload

    env = actions_environment()
    settings = BotSettings.for_actions(env)
    payload: dict[str, Any] = json.loads(Path(env.event_path).read_text(encoding="utf-8"))
    event = event_from_payload(env.event_name, f"actions-{env.run_id or uuid.uuid4()}", payload)
    if event.repository is None:  # an Actions event file may lack it; the job knows
        event = event.model_copy(update={"repository": env.repository})
    trigger = route(event, label=settings.label)
    if trigger is None:
        print("cra-bot: this event asks nothing of cra")
        return EXIT_OK
    services = build_services(settings)
    try:
        from bot.app import store_run

        check_sandbox(settings, services.sandbox)
        run = store_run(services.store, trigger, public_url=settings.public_url)
        if run is None:
            print("cra-bot: a run is already active on this issue, and it has been told so")
            return EXIT_OK
        execute_run(run.id, services)
        return _report(services, run.id)
    finally:
        services.close()


def _report(services: Any, run_id: int) -> int:
    run = services.store.get_run(run_id)
    if run is None:
        return EXIT_FAILED
    print(f"run {run.id}: {run.status}" + (f" — {run.pr_url}" if run.pr_url else "")
          + (f" ({run.error})" if run.error else ""))
    return EXIT_OK if run.status in ("succeeded", "rejected") else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
