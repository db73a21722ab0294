"""`cra`: the agent's command line (plan, solve, runs)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from agent import git
from agent.bwrap import build_sandbox
from agent.config import ModelConfig, SolveConfig, load_config, resolve_api_key
from agent.context import IndexedFactory
from agent.envcache import EnvCache
from agent.errors import AgentError, ConfigError
from agent.llm.client import ChatModel, HTTPChatModel
from agent.llm.router import ModelRouter
from agent.models import PlanArtifact
from agent.orchestrator import solve
from agent.planning import plan_task
from agent.render import render_orchestrator_run, render_result, render_run_list, render_task_run
from agent.retrieval.command import index_repository
from agent.runtime import Runtime
from agent.sandbox import Sandbox, SandboxKind, describe_sandbox, hidden_paths
from agent.single_pass import run_single_pass
from agent.store import RunLog

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
DEFAULT_ENV_CACHE_MB = 10240
SANDBOX_CHOICES: dict[str, SandboxKind | Literal["auto"]] = {
    "auto": "auto", "bwrap": "bwrap", "none": "none"}


class UsageError(Exception):
    """The command line or its inputs are wrong: exit 2."""


def build_parser() -> argparse.ArgumentParser:
    """The `cra` argument parser."""
    parser = argparse.ArgumentParser(prog="cra", description="cra, the Clean Room Agent")
    parser.add_argument("--db", help="run log database URL (default: $CRA_DATABASE_URL or a "
                        "SQLite file in the data dir)")
    parser.add_argument("--data-dir", type=Path, help="where cra keeps its run log and "
                        "worktrees (default: $CRA_DATA_DIR or ~/.local/share/cra)")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_plan(commands)
    _add_solve(commands)
    index = commands.add_parser("index", help="build or refresh the repository index")
    index.add_argument("--repo", type=Path, default=Path("."), help="the git repository")
    index.add_argument("--config", type=Path, help="config file (default: .github/cra.toml "
                       "or cra.toml in the repository)")
    index.add_argument("--json", action="store_true", help="print the stats as JSON")
    runs = commands.add_parser("runs", help="list recorded runs, or show one in full")
    runs.add_argument("run", nargs="?", help="a run id (number) or task id")
    runs.add_argument("--limit", type=int, default=20)
    runs.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _add_common(command: argparse.ArgumentParser) -> None:
    command.add_argument("task", help="what to do, in words")
    command.add_argument("--repo", type=Path, default=Path("."), help="the git repository")
    command.add_argument("--config", type=Path, help="config file (default: .github/cra.toml "
                         "or cra.toml in the repository)")


def _add_plan(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    plan = commands.add_parser("plan", help="plan a task (a meta-plan) without changing anything")
    _add_common(plan)
    plan.add_argument("--output", type=Path, help="write the plan JSON here (default: stdout)")


def _add_solve(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    solve_cmd = commands.add_parser("solve", help="plan and implement a task in a worktree, "
                                    "gated by tests")
    _add_common(solve_cmd)
    solve_cmd.add_argument("--plan", type=Path, help="a PlanArtifact JSON file: one "
                           "implement pass instead of the orchestrator")
    solve_cmd.add_argument("--in-place", action="store_true",
                           help="apply the final diff to your working tree instead of a branch")
    solve_cmd.add_argument("--json", action="store_true", help="print the result as JSON")
    solve_cmd.add_argument("--sandbox", choices=["auto", "bwrap", "none"],
                           help="where the repository's commands run (default: $CRA_SANDBOX or "
                           "auto: bwrap when bubblewrap is installed, else none)")


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run `cra`; returns the exit code (0 success, 1 failure, 2 usage or config error)."""
    env = dict(os.environ if environ is None else environ)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return EXIT_USAGE if exc.code not in (0, None) else EXIT_OK
    try:
        if args.command == "index":  # the index needs no run log
            return index_repository(args.repo, data_dir(args, env), config=args.config,
                                    as_json=args.json)
        with RunLog.open(_db_url(args, env)) as log:
            return _dispatch(args, log, env)
    except (UsageError, ConfigError) as exc:
        print(f"cra: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except AgentError as exc:
        print(f"cra: {exc}", file=sys.stderr)
        return EXIT_FAILED


def _dispatch(args: argparse.Namespace, log: RunLog, env: Mapping[str, str]) -> int:
    if args.command == "solve":
        return _solve(args, log, env)
    if args.command == "plan":
        return _plan(args, log, env)
    return _runs(args, log)


def data_dir(args: argparse.Namespace, env: Mapping[str, str]) -> Path:
    """--data-dir, else $CRA_DATA_DIR, else $XDG_DATA_HOME/cra or ~/.local/share/cra."""
    if args.data_dir is not None:
        return Path(args.data_dir)
    if env.get("CRA_DATA_DIR"):
        return Path(env["CRA_DATA_DIR"])
    base = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".local/share")
    return Path(base) / "cra"


def _db_url(args: argparse.Namespace, env: Mapping[str, str]) -> str:
    if args.db:
        return str(args.db)
    if env.get("CRA_DATABASE_URL"):
        return env["CRA_DATABASE_URL"]
    return f"sqlite:///{data_dir(args, env) / 'cra.db'}"


def _repo_and_config(args: argparse.Namespace) -> tuple[Path, SolveConfig]:
    repo = Path(args.repo).resolve()
    if not git.is_work_tree(repo):
        raise UsageError(f"{repo} is not a git repository")
    return repo, load_config(repo, args.config)


def _runtime(log: RunLog, config: SolveConfig, args: argparse.Namespace,
             env: Mapping[str, str]) -> Runtime:
    router = ModelRouter(config.models, factory=_Factory(env))
    sandbox = _sandbox(args, env)
    cache_mb = int(env.get("CRA_ENV_CACHE_MB") or DEFAULT_ENV_CACHE_MB)
    cache = EnvCache(data_dir(args, env) / "envcache", max_bytes=cache_mb << 20)
    return Runtime(log=log, models=router, environ=env, work_dir=data_dir(args, env),
                   sandbox=sandbox, env_cache=cache if cache_mb > 0 else None)


def _sandbox(args: argparse.Namespace, env: Mapping[str, str]) -> Sandbox:
    """The sandbox --sandbox (or $CRA_SANDBOX) names, hiding cra's data dir; says which."""
    kind = getattr(args, "sandbox", None) or env.get("CRA_SANDBOX") or "auto"
    if kind not in SANDBOX_CHOICES:
        raise UsageError(f"CRA_SANDBOX={kind}: expected auto, bwrap or none")
    db = _db_url(args, env)
    data = [data_dir(args, env), *([Path(db.removeprefix("sqlite:///"))]
                                   if db.startswith("sqlite:///") else [])]
    home = Path(env["HOME"]) if env.get("HOME") else None
    sandbox = build_sandbox(SANDBOX_CHOICES[kind], hide=hidden_paths(data=data, home=home))
    print(f"cra: {describe_sandbox(sandbox, chosen=kind)}", file=sys.stderr)
    return sandbox


def _solve(args: argparse.Namespace, log: RunLog, env: Mapping[str, str]) -> int:
    repo, config = _repo_and_config(args)
    config.require_test_command()
    plan = _load_plan(args.plan) if args.plan else None
    runtime = _runtime(log, config, args, env)
    contexts = IndexedFactory(data_dir(args, env), config.retrieval)
    try:
        if plan is not None:
            result = run_single_pass(args.task, repo, plan, config, runtime,
                                     in_place=args.in_place, context_factory=contexts)
        else:
            result = solve(args.task, repo, config, runtime, in_place=args.in_place,
                           context_factory=contexts)
    finally:
        runtime.models.close()
    print(result.model_dump_json(indent=2) if args.json else render_result(result))
    return EXIT_OK if result.status == "complete" and not result.error else EXIT_FAILED


def _plan(args: argparse.Namespace, log: RunLog, env: Mapping[str, str]) -> int:
    repo, config = _repo_and_config(args)
    runtime = _runtime(log, config, args, env)
    context = IndexedFactory(data_dir(args, env), config.retrieval)(repo)
    try:
        artifact = plan_task(args.task, repo, config, runtime, context=context)
    finally:
        context.close()
        runtime.models.close()
    text = artifact.model_dump_json(indent=2)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
        print(f"plan written to {args.output}")
    else:
        print(text)
    return EXIT_OK


def _load_plan(path: Path) -> PlanArtifact:
    try:
        return PlanArtifact.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read plan {path}: {exc}") from exc
    except ValidationError as exc:
        raise UsageError(f"{path} is not a valid plan: {exc}") from exc


class _Factory:
    """Builds an HTTP model client per role, its API key read from the named variable."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env

    def __call__(self, model: ModelConfig) -> ChatModel:
        return HTTPChatModel(model, api_key=resolve_api_key(model, self._env))


def _runs(args: argparse.Namespace, log: RunLog) -> int:
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
        raise UsageError(f"no run {args.run}")
    print(detail.model_dump_json(indent=2) if args.json else render_task_run(detail))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
