"""`cra`: the agent's command line (doctor, index, plan, solve, runs).

Only the parser lives here, so that `cra --help` and a mistyped option answer at once; the
commands and everything they import load in agent.cli.commands once the arguments parse.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from agent.console import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    add_version,
    configure_logging,
    global_options,
    run_main,
    suppressed,
)
from agent.errors import UsageError

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "UsageError", "build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The `cra` argument parser; global options go before or after the subcommand."""
    common = global_options()
    common.add_argument(
        "--db",
        help="run log database URL (default: $CRA_DATABASE_URL or a SQLite file in the data dir)",
    )
    common.add_argument(
        "--data-dir",
        type=Path,
        help="where cra keeps its run log and "
        "worktrees (default: $CRA_DATA_DIR or ~/.local/share/cra)",
    )
    parser = argparse.ArgumentParser(
        prog="cra", description="cra, the Clean Room Agent", parents=[common]
    )
    add_version(parser, "cra")
    below = suppressed(common)
    commands = parser.add_subparsers(dest="command", required=True)
    doctor = commands.add_parser(
        "doctor", parents=[below], help="check git, the config, the test command and the models"
    )
    _add_repo(doctor)
    _add_trust(doctor)
    doctor.add_argument("--json", action="store_true", help="print the findings as JSON")
    _add_plan(commands, below)
    _add_solve(commands, below)
    index = commands.add_parser(
        "index", parents=[below], help="build or refresh the repository index"
    )
    _add_repo(index)
    index.add_argument("--json", action="store_true", help="print the stats as JSON")
    _add_bench(commands, below)
    runs = commands.add_parser(
        "runs", parents=[below], help="list recorded runs, or show one in full"
    )
    runs.add_argument("run", nargs="?", help="a run id (number) or task id")
    runs.add_argument("--limit", type=int, default=20)
    runs.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _add_repo(command: argparse.ArgumentParser) -> None:
    command.add_argument("--repo", type=Path, default=Path("."), help="the git repository")
    command.add_argument(
        "--config",
        type=Path,
        help="config file (default: .github/cra.toml or cra.toml in the repository)",
    )


def _add_trust(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--trust-repo-config",
        action="store_true",
        help="let the "
        "repository's own cra.toml pass your environment to its commands "
        "(testing.env) and choose model servers and keys (default: only for "
        "the checkouts under [trust] repositories in ~/.config/cra/config.toml)",
    )


def _add_plan(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], below: argparse.ArgumentParser
) -> None:
    plan = commands.add_parser(
        "plan", parents=[below], help="plan a task (a meta-plan) without changing anything"
    )
    plan.add_argument("task", help="what to do, in words")
    _add_repo(plan)
    _add_trust(plan)
    plan.add_argument("--output", type=Path, help="write the plan JSON here (default: stdout)")


def _add_solve(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], below: argparse.ArgumentParser
) -> None:
    solve_cmd = commands.add_parser(
        "solve", parents=[below], help="plan and implement a task in a worktree, gated by tests"
    )
    solve_cmd.add_argument("task", help="what to do, in words")
    _add_repo(solve_cmd)
    _add_trust(solve_cmd)
    solve_cmd.add_argument(
        "--plan",
        type=Path,
        help="a PlanArtifact JSON file: one implement pass instead of the orchestrator",
    )
    solve_cmd.add_argument(
        "--in-place",
        action="store_true",
        help="apply the final diff to your working tree instead of a branch",
    )
    solve_cmd.add_argument("--json", action="store_true", help="print the result as JSON")
    solve_cmd.add_argument(
        "--keep",
        action="store_true",
        help="when interrupted (Ctrl-C, SIGTERM), keep the run's branch",
    )
    solve_cmd.add_argument(
        "--sandbox",
        choices=["auto", "bwrap", "none"],
        help="where the repository's commands run (default: $CRA_SANDBOX or "
        "auto: bwrap when bubblewrap is installed, else none)",
    )


def _add_bench(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], below: argparse.ArgumentParser
) -> None:
    bench = commands.add_parser(
        "bench", parents=[below], help="replay a repository's past fixes and score models on them"
    )
    steps = bench.add_subparsers(dest="bench_command", required=True)
    mine = steps.add_parser(
        "mine", parents=[below], help="find past fixes that make tasks (SWE-bench's format)"
    )
    _add_repo(mine)
    _add_trust(mine)
    _add_sandbox(mine)
    mine.add_argument("--output", type=Path, default=Path("tasks.jsonl"))
    mine.add_argument("--rev", default="HEAD", help="walk the history from here")
    mine.add_argument("--max", type=int, default=500, help="commits to examine")
    mine.add_argument("--since", help="only commits after this date (git's --since)")
    mine.add_argument("--max-source-files", type=int, default=3)
    mine.add_argument("--max-source-lines", type=int, default=200)
    mine.add_argument("--repo-name", help="owner/name (default: from the origin remote)")
    mine.add_argument(
        "--github-api",
        help="read linked issues here, e.g. https://api.github.com ($GITHUB_TOKEN if set)",
    )
    mine.add_argument(
        "--jobs", type=int, help="commits replayed at once (default: the CPUs cra may use)"
    )
    run = steps.add_parser(
        "run", parents=[below], help="solve each task with each model and score it"
    )
    run.add_argument("tasks", type=Path, help="a task file (JSON Lines, SWE-bench's format)")
    _add_repo(run)
    _add_trust(run)
    _add_sandbox(run)
    run.add_argument(
        "--model",
        action="append",
        help="a model name on the config's servers, "
        "or oracle, or oracle:<noise mode>[@rate] (repeatable; default: oracle)",
    )
    run.add_argument("--results", type=Path, default=Path("results.jsonl"))
    run.add_argument("--jobs", type=int, default=1, help="tasks solved at once")
    run.add_argument("--only", action="append", help="only this instance id (repeatable)")
    run.add_argument(
        "--tests",
        choices=("hidden", "given"),
        default="hidden",
        help="hidden "
        "(default): each run starts without the fix's tests and is asked as a "
        "user would ask; given: with them in its tree and its statement",
    )
    report = steps.add_parser(
        "report", parents=[below], help="the results as a table, JSON or an HTML page"
    )
    report.add_argument("results", type=Path)
    report.add_argument("--tasks", type=Path)
    report.add_argument("--baseline", type=Path, help="an earlier results file or JSON report")
    report.add_argument(
        "--across-settings",
        action="store_true",
        help="compare with a baseline "
        "whose rows ran with the fix's tests in the other setting (given/hidden)",
    )
    report.add_argument("--html", type=Path, help="write the HTML page here")
    report.add_argument("--json", action="store_true", help="print JSON")
    report.add_argument(
        "--summary",
        type=Path,
        help="also append the table as Markdown to this file ($GITHUB_STEP_SUMMARY)",
    )
    _add_bench_parts(steps, below)


def _add_bench_parts(
    steps: argparse._SubParsersAction[argparse.ArgumentParser], below: argparse.ArgumentParser
) -> None:
    split = steps.add_parser(
        "split", parents=[below], help="deal a task file into parts, one per parallel runner"
    )
    split.add_argument("tasks", type=Path, help="a task file (JSON Lines, SWE-bench's format)")
    split.add_argument("--parts", type=int, required=True, help="how many parts")
    split.add_argument(
        "--out", type=Path, required=True, help="write tasks-1.jsonl … tasks-N.jsonl here"
    )
    merge = steps.add_parser(
        "merge",
        parents=[below],
        help="one results file from several: one result per task and model, in order",
    )
    merge.add_argument(
        "results",
        type=Path,
        nargs="+",
        help="results files (JSON Lines), or folders: every results.jsonl under each",
    )
    merge.add_argument("--out", type=Path, required=True, help="the merged results file")


def _add_sandbox(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--sandbox",
        choices=["auto", "bwrap", "none"],
        help="where the repository's commands run (default: $CRA_SANDBOX or auto)",
    )


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run `cra`; returns the exit code (0 success, 1 failure, 2 usage or config error)."""
    env = dict(os.environ if environ is None else environ)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return EXIT_USAGE if exc.code not in (0, None) else EXIT_OK
    configure_logging(verbose=args.verbose, debug=args.debug)
    from agent.cli.commands import run_command  # the heavy part, once the arguments are good

    return run_main("cra", lambda: run_command(args, env), debug=args.debug)


if __name__ == "__main__":
    import sys

    sys.exit(main())
