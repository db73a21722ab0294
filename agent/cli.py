"""`cra`: the agent's command line (solve, runs)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import ValidationError

from agent import git
from agent.config import ModelConfig, load_config, resolve_api_key
from agent.errors import AgentError, ConfigError
from agent.llm.client import ChatModel, HTTPChatModel
from agent.llm.router import ModelRouter
from agent.models import OrchestratorResult, PlanArtifact, ValidationResult
from agent.runtime import Runtime
from agent.single_pass import run_single_pass
from agent.store import RunLog, TaskRunDetail

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


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
    solve = commands.add_parser("solve", help="implement a task in a worktree, gated by tests")
    solve.add_argument("task", help="what to do, in words")
    solve.add_argument("--repo", type=Path, default=Path("."), help="the git repository")
    solve.add_argument("--plan", type=Path, required=True, help="a PlanArtifact JSON file")
    solve.add_argument("--config", type=Path, help="config file (default: .github/cra.toml or "
                       "cra.toml in the repository)")
    solve.add_argument("--in-place", action="store_true",
                       help="apply the final diff to your working tree instead of a branch")
    solve.add_argument("--json", action="store_true", help="print the result as JSON")
    runs = commands.add_parser("runs", help="list recorded runs, or show one")
    runs.add_argument("run", nargs="?", help="a run id or task id")
    runs.add_argument("--limit", type=int, default=20)
    runs.add_argument("--json", action="store_true", help="print JSON")
    return parser


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run `cra`; returns the exit code (0 success, 1 failure, 2 usage or config error)."""
    env = dict(os.environ if environ is None else environ)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return EXIT_USAGE if exc.code not in (0, None) else EXIT_OK
    try:
        with RunLog.open(_db_url(args, env)) as log:
            if args.command == "solve":
                return _solve(args, log, env)
            return _runs(args, log)
    except (UsageError, ConfigError) as exc:
        print(f"cra: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except AgentError as exc:
        print(f"cra: {exc}", file=sys.stderr)
        return EXIT_FAILED


def _data_dir(args: argparse.Namespace, env: Mapping[str, str]) -> Path:
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
    return f"sqlite:///{_data_dir(args, env) / 'cra.db'}"


def _solve(args: argparse.Namespace, log: RunLog, env: Mapping[str, str]) -> int:
    repo = Path(args.repo).resolve()
    if not git.is_work_tree(repo):
        raise UsageError(f"{repo} is not a git repository")
    config = load_config(repo, args.config)
    config.require_test_command()
    plan = _load_plan(args.plan)
    router = ModelRouter(config.models, factory=_Factory(env))
    try:
        runtime = Runtime(log=log, models=router, environ=env, work_dir=_data_dir(args, env))
        result = run_single_pass(args.task, repo, plan, config, runtime, in_place=args.in_place)
    finally:
        router.close()
    _print_result(result, as_json=args.json)
    return EXIT_OK if result.status == "complete" and not result.error else EXIT_FAILED


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


def _print_result(result: OrchestratorResult, *, as_json: bool) -> None:
    if as_json:
        print(result.model_dump_json(indent=2))
        return
    print(f"status: {result.status}")
    for attempt in result.attempts:
        tests = "tests not run" if attempt.validation is None else _verdict(attempt.validation)
        problem = f" — {attempt.error_info.splitlines()[0]}" if attempt.error_info else ""
        print(f"attempt {attempt.attempt}: {len(attempt.edits)} edits, {tests}{problem}")
    if result.branch:
        print(f"branch: {result.branch} (commit {result.commit})")
    elif result.status == "complete":
        print("applied to your working tree")
    usage = result.usage
    print(f"model calls answered: {usage.calls}, tokens: {usage.total_tokens}, "
          f"latency: {usage.latency_ms} ms")
    if result.error:
        print(f"error: {result.error}")


def _runs(args: argparse.Namespace, log: RunLog) -> int:
    if args.run is None:
        runs = log.list_task_runs(limit=args.limit)
        if args.json:
            print(json.dumps([r.model_dump(mode="json") for r in runs], indent=2))
        for r in [] if args.json else runs:
            print(f"{r.id:>5}  {r.status:<9} {r.created_at:%Y-%m-%d %H:%M}  "
                  f"{r.task_description[:60]}")
        return EXIT_OK
    key: int | str = int(args.run) if args.run.isdigit() else args.run
    detail = log.get_task_run(key)
    if detail is None:
        raise UsageError(f"no run {args.run}")
    print(detail.model_dump_json(indent=2) if args.json else _describe_run(detail))
    return EXIT_OK


def _describe_run(detail: TaskRunDetail) -> str:
    """A task run as text: its header, baseline, attempts with validations, model calls."""
    usage = detail.usage
    lines = [
        f"run {detail.id} ({detail.task_id}) — {detail.status}",
        f"task: {detail.task_description}",
        f"repo: {detail.repo_path}" + (f"  branch: {detail.branch}" if detail.branch else ""),
        f"tokens: {usage.total_tokens}  latency: {usage.latency_ms} ms",
    ]
    if detail.error:
        lines.append(f"error: {detail.error}")
    lines += [f"baseline: {_verdict(v.result)}" for v in detail.baseline]
    for attempt in detail.attempts:
        verdicts = ", ".join(_verdict(v.result) for v in attempt.validations) or "tests not run"
        problem = f" — {attempt.error_info.splitlines()[0]}" if attempt.error_info else ""
        lines.append(f"attempt {attempt.attempt}: patch "
                     f"{'applied' if attempt.patch_applied else 'not applied'}, "
                     f"{verdicts}{problem}")
    for call in detail.llm_calls:
        rec = call.record
        outcome = f"error: {rec.error}" if rec.error else f"{len(rec.response or '')} chars"
        lines.append(f"call {call.id}: {rec.stage} {rec.model} "
                     f"{rec.prompt_tokens}+{rec.completion_tokens} tokens "
                     f"{rec.latency_ms} ms — {outcome}")
    return "\n".join(lines)


def _verdict(result: ValidationResult) -> str:
    if result.timed_out:
        return "tests timed out"
    if result.success:
        return "tests passed"
    return f"tests failed ({', '.join(result.failing_tests) or 'see output'})"


if __name__ == "__main__":
    sys.exit(main())

