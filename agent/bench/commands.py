"""The `cra bench` commands: mine, run and report (agent.cli.main parses their arguments)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from agent.bench.mining.journal import journal_path
from agent.bench.mining.mine import (
    Mined,
    MineOptions,
    failed_setups,
    mine,
    mine_jobs,
    throughput,
)
from agent.bench.oracle.label import parse_label
from agent.bench.oracle.model import oracle_factory
from agent.bench.report.command import report_command
from agent.bench.results import BenchResult
from agent.bench.run import Bench, Factory, files_before, run_bench, with_model
from agent.bench.tasks import BenchTask, read_tasks, write_tasks
from agent.bench.trees import TestBed
from agent.config.files import ModelConfig, SolveConfig
from agent.console import EXIT_FAILED, EXIT_OK
from agent.errors import JournalMismatch, MixedSettings, UsageError
from agent.llm.client import ChatModel
from agent.progress import ProgressBar
from agent.runlog.store import RunLog
from agent.sandbox.base import Sandbox
from agent.sandbox.envcache import EnvCache


@dataclass(frozen=True)
class BenchWiring:
    """What `cra bench mine|run` runs with, built by the command line: the run log, the
    environment, the config, the sandbox, the data dir, the environment cache and the model
    factory."""

    log: RunLog
    environ: Mapping[str, str]
    config: SolveConfig
    sandbox: Sandbox
    data_dir: Path
    factory: Callable[[ModelConfig], ChatModel]
    cache: EnvCache | None


def bench_command(args: argparse.Namespace, wiring: BenchWiring) -> int:
    """Dispatch `cra bench mine|run`."""
    if args.bench_command == "mine":
        return _mine(args, wiring)
    return _run(args, wiring)


def _mine(args: argparse.Namespace, wiring: BenchWiring) -> int:
    config, env = wiring.config, wiring.environ
    config.require_test_command()
    options = MineOptions(
        rev=args.rev,
        max_commits=args.max,
        since=args.since,
        max_source_files=args.max_source_files,
        max_source_lines=args.max_source_lines,
        repo_name=args.repo_name,
        github_api=args.github_api,
        github_token=env.get("GITHUB_TOKEN") or env.get("GH_TOKEN"),
    )
    bed = TestBed(
        testing=config.testing,
        sandbox=wiring.sandbox,
        environ=env,
        work_dir=wiring.data_dir / "bench" / "work",
        cache=wiring.cache,
    )
    jobs = mine_jobs(args.jobs)
    if jobs < 1:
        raise UsageError(f"--jobs must be 1 or more, not {jobs}")
    journal = journal_path(args.output)
    mined = _mined(args.repo.resolve(), bed, options, jobs, journal)
    if mined.resumed:
        print(
            f"cra: resumed: {mined.resumed} commit(s) examined before, read from {journal}",
            file=sys.stderr,
        )
    for note in mined.notes:
        print(f"cra: {note}", file=sys.stderr)
    for said in failed_setups(mined):
        print(f"cra: {said}", file=sys.stderr)
    for commit, why, tests in mined.excluded:
        print(
            f"cra: excluded {commit[:12]}: {why}" + (f": {tests}" if tests else ""), file=sys.stderr
        )
    count = write_tasks(args.output, mined.tasks)
    journal.unlink(missing_ok=True)  # the output holds it all now
    reasons = ", ".join(
        f"{n} {why}" for why, n in sorted(mined.skipped.items(), key=lambda item: -item[1])
    )
    print(
        f"cra: {count} task(s) from {mined.examined} commit(s) written to {args.output}"
        + (f"; left out: {reasons}" if reasons else ""),
        file=sys.stderr,
    )
    print(f"cra: {throughput(mined)}", file=sys.stderr)
    return EXIT_OK


def _mined(repo: Path, bed: TestBed, options: MineOptions, jobs: int, journal: Path) -> Mined:
    """The mine, its progress shown as it goes (and a line for each setup command that runs:
    minutes, maybe); a journal left with other settings is a usage error, and an interrupted
    mine says how to resume."""
    bar = ProgressBar(sys.stderr, "  mining", unit="commits")

    def progress(done: int, total: int, mined: Mined) -> None:
        bar(done, total, f"{len(mined.tasks)} tasks")

    try:
        return mine(
            repo,
            bed,
            options,
            progress=progress,
            jobs=jobs,
            journal=journal,
            notice=lambda line: bar.note(f"  {line}"),
        )
    except JournalMismatch as exc:
        raise UsageError(str(exc)) from None
    except KeyboardInterrupt:
        if journal.exists():
            bar.finish()
            print(
                f"cra: the commits examined so far are in {journal}: the same command resumes",
                file=sys.stderr,
            )
        raise
    finally:
        bar.finish()


def _run(args: argparse.Namespace, wiring: BenchWiring) -> int:
    config, factory = wiring.config, wiring.factory
    tasks = list(read_tasks(args.tasks))
    if args.only:
        tasks = [t for t in tasks if t.instance_id in set(args.only)]
    labels = args.model or ["oracle"]
    for label in labels:
        try:
            parse_label(label)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    bench = Bench(
        repo=args.repo.resolve(),
        config=config,
        sandbox=wiring.sandbox,
        environ=wiring.environ,
        data_dir=wiring.data_dir,
        log=wiring.log,
        cache=wiring.cache,
        tests=args.tests,
    )

    def factory_for(label: str, task: BenchTask) -> Factory:
        if parse_label(label) is None:
            return factory
        oracle = oracle_factory(label, task, files_before(bench, task), tests=bench.tests)
        assert oracle is not None
        return oracle

    def config_for(label: str) -> SolveConfig:
        return config if parse_label(label) is not None else with_model(config, label)

    def progress(result: BenchResult, done: int, total: int) -> None:
        print(
            f"  [{done}/{total}] {result.instance_id} {result.model}: {result.outcome} "
            f"({result.wall_s:.0f} s, run {result.run_id})",
            file=sys.stderr,
            flush=True,
        )

    try:
        results = run_bench(
            bench,
            tasks,
            labels,
            args.results,
            factory_for=factory_for,
            config_for=config_for,
            jobs=args.jobs,
            progress=progress,
        )
    except MixedSettings as exc:
        raise UsageError(str(exc)) from None
    resolved = sum(r.resolved for r in results)
    errors = sum(r.outcome == "error" for r in results)
    print(
        f"cra: {len(results)} result(s) appended to {args.results}: {resolved} resolved, "
        f"{errors} harness error(s); `cra bench report {args.results}` shows them all",
        file=sys.stderr,
    )
    return EXIT_OK if not errors else EXIT_FAILED


__all__ = ["BenchWiring", "bench_command", "report_command"]
