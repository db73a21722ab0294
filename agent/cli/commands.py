"""The commands of `cra` (agent.cli.main parses their arguments): each run with what it needs;
doctor, index, bench and runs here, solve and plan in agent.cli.solve."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agent.cli.wiring import (
    DEFAULT_ENV_CACHE_MB,
    ModelFactory,
    chosen_sandbox,
    data_dir,
    open_log,
    remove_abandoned_runs,
    trusted_config,
    usable_data_dir,
)
from agent.console import EXIT_FAILED, EXIT_OK, EXIT_USAGE, describe_unknown, unknown_variables
from agent.errors import AgentError, ConfigError, PreflightFailed, SandboxUnavailable, UsageError

if TYPE_CHECKING:
    from agent.config.files import SolveConfig
    from agent.models import EnvironmentReport
    from agent.runlog.store import RunLog
    from agent.sandbox.base import Sandbox

# Each command imports what it uses when it runs (issue 14): a solve does not pay for the
# doctor, the renderings of `cra runs` or the bench, nor for its own later passes, before its
# first model call.

# The CRA_ variables cra itself reads (cra-bot's settings are its own).
CRA_VARIABLES = ("CRA_DATA_DIR", "CRA_DATABASE_URL", "CRA_SANDBOX", "CRA_ENV_CACHE_MB")


def run_command(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Run the parsed command; its exit code."""
    if args.command != "doctor":
        for name, nearest in unknown_variables(env, CRA_VARIABLES, near_misses_only=True):
            print(f"cra: warning: {describe_unknown('cra', name, nearest)}", file=sys.stderr)
    try:
        if args.command == "doctor":
            return _doctor(args, env)
        if args.command == "bench" and args.bench_command == "report":  # no run log needed
            from agent.bench.report.command import report_command

            return report_command(args)
        if args.command == "bench" and args.bench_command in ("split", "merge"):  # files only
            from agent.bench.parts import parts_command

            return parts_command(args)
        if args.command == "index":  # the index needs no run log
            from agent.progress import ProgressBar
            from agent.retrieval.indexing.command import index_repository

            bar = ProgressBar(sys.stderr, "indexing")
            try:
                return index_repository(
                    args.repo,
                    usable_data_dir(args, env),
                    config=args.config,
                    as_json=args.json,
                    progress=bar,
                )
            finally:
                bar.finish()
        with open_log(args, env) as log:
            return _dispatch(args, log, env)
    except (UsageError, ConfigError, PreflightFailed, SandboxUnavailable) as exc:
        print(f"cra: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except AgentError as exc:
        print(f"cra: {exc}", file=sys.stderr)
        return EXIT_FAILED


def _dispatch(args: argparse.Namespace, log: RunLog, env: Mapping[str, str]) -> int:
    if args.command == "bench":
        return _bench(args, log, env)
    if args.command == "solve":
        from agent.cli.solve import solve_command

        return solve_command(args, log, env)
    if args.command == "plan":
        from agent.cli.solve import plan_command

        return plan_command(args, log, env)
    remove_abandoned_runs(log, data_dir(args, env))  # so that a killed run is not listed running
    return _runs(args, log)


def _bench(args: argparse.Namespace, log: RunLog, env: Mapping[str, str]) -> int:
    from agent.bench.commands import BenchWiring, bench_command
    from agent.git import repo as git
    from agent.sandbox.envcache import EnvCache

    repo = Path(args.repo).resolve()
    if not (git.is_work_tree(repo) or _is_bare(repo)):
        raise UsageError(f"{repo} is not a git repository (--repo)")
    config = trusted_config(repo, args, env).config  # a bare repository needs --config
    cache_mb = int(env.get("CRA_ENV_CACHE_MB") or DEFAULT_ENV_CACHE_MB)
    cache = EnvCache(data_dir(args, env) / "envcache", max_bytes=cache_mb << 20)
    wiring = BenchWiring(
        log=log,
        environ=env,
        config=config,
        sandbox=chosen_sandbox(args, env, config),
        data_dir=data_dir(args, env),
        factory=ModelFactory(env),
        cache=cache if cache_mb > 0 else None,
    )
    return bench_command(args, wiring)


def _is_bare(path: Path) -> bool:
    from agent.git import repo as git

    try:
        return git.run_git(["rev-parse", "--is-bare-repository"], path).strip() == "true"
    except (AgentError, OSError):
        return False


def _doctor(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """`cra doctor`: one line per check; 0 only when none failed."""
    from agent.doctor.local import LocalCheckout, local_report
    from agent.doctor.report import render

    checkout = LocalCheckout(
        repo=Path(args.repo).resolve(),
        config_file=args.config,
        data_dir=data_dir(args, env),
        environ=env,
        trust_repo_config=args.trust_repo_config,
    )
    from agent.run.environment import try_setup

    def setup(config: SolveConfig, sandbox: Sandbox) -> EnvironmentReport:
        return try_setup(
            checkout.repo,
            config.testing,
            sandbox=sandbox,
            environ=env,
            work_dir=checkout.data_dir / "doctor",
        )

    report = local_report(
        checkout,
        known_variables=CRA_VARIABLES,
        sandbox=lambda config: chosen_sandbox(args, env, config, say=False),
        setup=setup,
    )
    print(render(report, as_json=args.json))
    return EXIT_OK if report.passed else EXIT_FAILED


def _runs(args: argparse.Namespace, log: RunLog) -> int:
    from agent.cli.render import render_orchestrator_run, render_run_list, render_task_run

    if args.run is None:
        task_runs = log.list_task_runs(limit=args.limit, modes=("single_pass", "plan"))
        orchestrated = log.list_orchestrator_runs(limit=args.limit)
        print(render_run_list(task_runs, orchestrated, as_json=args.json, limit=args.limit))
        return EXIT_OK
    if not args.run.isdigit():
        orchestrator_run = log.get_orchestrator_run(args.run)
        if orchestrator_run is not None:
            details = [log.get_task_run(p.task_run_id) for p in orchestrator_run.passes]
            print(render_orchestrator_run(orchestrator_run, details, as_json=args.json))
            return EXIT_OK
    detail = log.get_task_run(int(args.run) if args.run.isdigit() else args.run)
    if detail is None:
        raise UsageError(f"no run {args.run} (`cra runs` lists them)")
    print(detail.model_dump_json(indent=2) if args.json else render_task_run(detail))
    return EXIT_OK
