"""The commands of `cra` (agent.cli.main parses their arguments): doctor, index, plan, solve,
runs."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from agent.cli.console import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    describe_unknown,
    shown_url,
    unknown_variables,
)
from agent.errors import AgentError, ConfigError, GitError, PreflightFailed, SandboxUnavailable

if TYPE_CHECKING:
    from agent.config.files import ModelConfig, SolveConfig
    from agent.config.trust import RepoConfig
    from agent.llm.client import ChatModel
    from agent.models import OrchestratorResult, PlanArtifact
    from agent.run.runtime import Runtime
    from agent.runlog.store import RunLog
    from agent.sandbox.base import Sandbox, SandboxKind

# Each command imports what it uses when it runs (issue 14): a solve does not pay for the
# doctor, the renderings of `cra runs` or the bench, nor for its own later passes, before its
# first model call.

# The CRA_ variables cra itself reads (cra-bot's settings are its own).
CRA_VARIABLES = ("CRA_DATA_DIR", "CRA_DATABASE_URL", "CRA_SANDBOX", "CRA_ENV_CACHE_MB")
INDEX_BAR_MIN_FILES = 200  # inside solve and plan, a bar only for an index worth waiting for
DEFAULT_ENV_CACHE_MB = 10240
SANDBOX_CHOICES: dict[str, SandboxKind | Literal["auto"]] = {
    "auto": "auto", "bwrap": "bwrap", "none": "none"}


def run_command(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """Run the parsed command; its exit code."""
    if args.command != "doctor":
        for name, nearest in unknown_variables(env, CRA_VARIABLES, near_misses_only=True):
            print(f"cra: warning: {describe_unknown('cra', name, nearest)}", file=sys.stderr)
    try:
        if args.command == "doctor":
            return _doctor(args, env)
        if args.command == "bench" and args.bench_command == "report":  # no run log needed
            from agent.bench.report import report_command

            return report_command(args)
        if args.command == "bench" and args.bench_command in ("split", "merge"):  # files only
            from agent.bench.parts import parts_command

            return parts_command(args)
        if args.command == "index":  # the index needs no run log
            from agent.cli.progress import ProgressBar
            from agent.retrieval.command import index_repository

            bar = ProgressBar(sys.stderr, "indexing")
            try:
                return index_repository(args.repo, _usable_data_dir(args, env),
                                        config=args.config, as_json=args.json, progress=bar)
            finally:
                bar.finish()
        with _open_log(args, env) as log:
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
        return _solve(args, log, env)
    if args.command == "plan":
        return _plan(args, log, env)
    _remove_abandoned(log, data_dir(args, env))  # so that a killed run is not listed running
    return _runs(args, log)


def data_dir(args: argparse.Namespace, env: Mapping[str, str]) -> Path:
    """--data-dir, else $CRA_DATA_DIR, else $XDG_DATA_HOME/cra or ~/.local/share/cra; made
    absolute, since git commands run in other folders are given paths inside it."""
    if args.data_dir is not None:
        return Path(args.data_dir).absolute()
    if env.get("CRA_DATA_DIR"):
        return Path(env["CRA_DATA_DIR"]).absolute()
    base = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".local/share")
    return Path(base) / "cra"


def _usable_data_dir(args: argparse.Namespace, env: Mapping[str, str]) -> Path:
    """The data dir, created if needed; UsageError naming the option when it cannot be."""
    path = data_dir(args, env)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot use {path} as the data dir (--data-dir or CRA_DATA_DIR): "
                         f"{exc.strerror or exc} → point it at a writable directory") from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"the data dir {path} is not writable (--data-dir or CRA_DATA_DIR)")
    return path


def _db_url(args: argparse.Namespace, env: Mapping[str, str]) -> str:
    if args.db:
        return str(args.db)
    if env.get("CRA_DATABASE_URL"):
        return env["CRA_DATABASE_URL"]
    return f"sqlite:///{_usable_data_dir(args, env) / 'cra.db'}"


def _open_log(args: argparse.Namespace, env: Mapping[str, str]) -> RunLog:
    """The run log, migrated; UsageError naming the setting when it cannot be opened."""
    from sqlalchemy.exc import SQLAlchemyError

    from agent.runlog.store import RunLog

    url = _db_url(args, env)
    try:
        return RunLog.open(url)
    except (SQLAlchemyError, OSError) as exc:
        reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
        raise UsageError(f"cannot open the run log {shown_url(url)} (--db, CRA_DATABASE_URL or "
                         f"the data dir): {reason}") from exc


def _repo_and_config(args: argparse.Namespace, env: Mapping[str, str]
                     ) -> tuple[Path, RepoConfig]:
    from agent.git import repo as git

    repo = Path(args.repo).resolve()
    if not git.is_work_tree(repo):
        raise UsageError(f"{repo} is not a git repository (--repo)")
    try:
        git.head_commit(repo)
    except GitError:
        raise UsageError(f"{repo} has no commits yet: cra works from a commit (commit the code "
                         "and its tests first)") from None
    return repo, _trusted_config(repo, args, env)


def _trusted_config(repo: Path, args: argparse.Namespace, env: Mapping[str, str]) -> RepoConfig:
    """The run's config under the trust rule (agent.config.trust); says once what it left out."""
    from agent.config.trust import load_repo_config

    loaded = load_repo_config(repo, args.config, env, trust_flag=args.trust_repo_config)
    what, fix = loaded.notice()
    if what:
        print(f"cra: warning: {what}; {fix}", file=sys.stderr)
    return loaded


def _note_uncommitted(repo: Path) -> None:
    """Say so when the checkout holds changes the run will not see: it starts from HEAD."""
    from agent.git import repo as git
    from agent.git import worktrees

    changed = [path for code, path in worktrees.status_entries(repo) if code != "!!"]
    if changed:
        more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        print(f"cra: note: the run starts from HEAD ({git.head_commit(repo)[:12]}); uncommitted "
              f"changes are not part of it: {', '.join(changed[:3])}{more}", file=sys.stderr)


def _keys(config: SolveConfig, env: Mapping[str, str]) -> dict[str, str | None]:
    """Each role's API key, from the variable its api_key_env names."""
    from agent.config.files import resolve_api_key

    return {role: resolve_api_key(getattr(config.models, role), env)
            for role in ("reasoning", "coding", "classifier")}


def _preflight(loaded: RepoConfig, env: Mapping[str, str], *, plans: bool,
               implements: bool) -> None:
    """Before the first model call: each role the command uses has a server that answers (and,
    said as a warning, the model it names)."""
    from agent.cli.doctor_checks import in_config, roles_used
    from agent.run.preflight import require_model_servers

    config = loaded.config
    where = in_config(config.source or ".github/cra.toml", loaded.endpoints_in)
    for line in require_model_servers(config.models, _keys(config, env), where,
                                      roles_used(config, plans=plans, implements=implements)):
        print(f"cra: warning: {line}", file=sys.stderr)


def _runtime(log: RunLog, config: SolveConfig, args: argparse.Namespace,
             env: Mapping[str, str], run_id: str | None = None) -> Runtime:
    from dataclasses import replace

    from agent.cli.progress import StepPrinter
    from agent.llm.router import ModelRouter
    from agent.run.runtime import Runtime
    from agent.sandbox.envcache import EnvCache

    router = ModelRouter(config.models, factory=_Factory(env))
    sandbox = _sandbox(args, env, config)
    cache_mb = int(env.get("CRA_ENV_CACHE_MB") or DEFAULT_ENV_CACHE_MB)
    cache = EnvCache(data_dir(args, env) / "envcache", max_bytes=cache_mb << 20)
    runtime = Runtime(log=log, models=router, environ=env, work_dir=data_dir(args, env),
                      sandbox=sandbox, env_cache=cache if cache_mb > 0 else None,
                      observer=StepPrinter(sys.stderr))
    return runtime if run_id is None else replace(runtime, new_id=lambda: run_id)


def _sandbox(args: argparse.Namespace, env: Mapping[str, str], config: SolveConfig | None, *,
             say: bool = True) -> Sandbox:  # fmt: skip
    """The sandbox --sandbox (or $CRA_SANDBOX) names, hiding cra's data dir and opening the
    networks `config` allows (from --config FILE); says which."""
    from agent.sandbox.base import describe_sandbox, hidden_paths
    from agent.sandbox.bwrap import build_sandbox

    kind = getattr(args, "sandbox", None) or env.get("CRA_SANDBOX") or "auto"
    if kind not in SANDBOX_CHOICES:
        raise UsageError(f"CRA_SANDBOX={kind}: expected auto, bwrap or none")
    db = _db_url(args, env)
    data = [data_dir(args, env), *([Path(db.removeprefix("sqlite:///"))]
                                   if db.startswith("sqlite:///") else [])]
    home = Path(env["HOME"]) if env.get("HOME") else None
    allowed = config.sandbox.allow_addresses if config is not None else ()
    sandbox = build_sandbox(SANDBOX_CHOICES[kind], hide=hidden_paths(data=data, home=home),
                            allow_addresses=allowed)
    if say:
        print(f"cra: {describe_sandbox(sandbox, chosen=kind)}", file=sys.stderr)
    return sandbox


def _announce(run_id: str, args: argparse.Namespace) -> None:
    """Say the run's id at its start, and how to see it."""
    where = [f"--{name.replace('_', '-')} {getattr(args, name)}"
             for name in ("data_dir", "db") if getattr(args, name)]
    command = " ".join(["cra", *where, "runs", run_id])
    print(f"cra: run {run_id} started — see it with `{command}`", file=sys.stderr)


def _solve(args: argparse.Namespace, log: RunLog, env: Mapping[str, str]) -> int:
    import uuid

    from agent.cli.progress import ProgressBar
    from agent.run.interrupts import interruptible
    from agent.run.sources import IndexedFactory

    repo, loaded = _repo_and_config(args, env)
    config = loaded.config
    config.require_test_command()
    _note_uncommitted(repo)
    plan = _load_plan(args.plan) if args.plan else None
    _preflight(loaded, env, plans=plan is None, implements=True)
    _remove_abandoned(log, data_dir(args, env))
    run_id = str(uuid.uuid4())
    _announce(run_id, args)
    runtime = _runtime(log, config, args, env, run_id)
    bar = ProgressBar(sys.stderr, "  indexing", min_total=INDEX_BAR_MIN_FILES)
    contexts = IndexedFactory(data_dir(args, env), config.retrieval, progress=bar)
    with interruptible() as interrupts:
        try:
            if plan is not None:
                from agent.run.single_pass import run_single_pass

                result = run_single_pass(args.task, repo, plan, config, runtime,
                                         in_place=args.in_place, context_factory=contexts)
            else:
                from agent.run.orchestrator import solve

                result = solve(args.task, repo, config, runtime, in_place=args.in_place,
                               context_factory=contexts)
        finally:
            bar.finish()
            runtime.models.close()
        if interrupts.exit_code is not None:
            return _interrupted(result, repo, interrupts.exit_code, keep=args.keep,
                                as_json=args.json)
    from agent.cli.render import render_result  # the run's end: not paid before its first call

    print(result.model_dump_json(indent=2) if args.json else render_result(result))
    return EXIT_OK if result.status == "complete" and not result.error else EXIT_FAILED


def _remove_abandoned(log: RunLog, work_dir: Path) -> None:
    """Worktrees of runs whose `cra` died (killed, the machine restarted) are removed, and the
    runs, still "running" in the log, are marked failed; one line each says so."""
    from agent.git.workspace import remove_abandoned

    for gone in remove_abandoned(work_dir):
        log.abandon_run(gone.run_id, "interrupted: its cra process is gone")
        kept = ""
        if not gone.branch_deleted and gone.branch:
            kept = (f"; its branch {gone.branch} keeps the commits it made "
                    f"(`git branch -D {gone.branch}` deletes it)")
        print(f"cra: removed the worktree of run {gone.run_id}, whose process is gone{kept}",
              file=sys.stderr)


def _interrupted(result: OrchestratorResult, repo: Path, code: int, *, keep: bool,
                 as_json: bool) -> int:
    """A run SIGINT or SIGTERM ended: its branch goes too unless --keep; one line says so (and
    with --json, the result, cancelled, is printed as it would have been)."""
    from agent.git import repo as git

    kept = ""
    if result.branch and keep:
        kept = f"; its branch {result.branch} holds the {result.steps_completed} step(s) passed"
    elif result.branch:
        if git.branch_exists(repo, result.branch):
            git.delete_branch(repo, result.branch)
        result = result.model_copy(update={"branch": None})
    if as_json:
        print(result.model_dump_json(indent=2))
    print(f"cra: run {result.task_id} cancelled ({result.error or 'interrupted'}){kept}",
          file=sys.stderr)
    return code


def _plan(args: argparse.Namespace, log: RunLog, env: Mapping[str, str]) -> int:
    from agent.cli.progress import ProgressBar
    from agent.run.interrupts import interruptible
    from agent.run.planning import plan_task
    from agent.run.sources import IndexedFactory

    repo, loaded = _repo_and_config(args, env)
    config = loaded.config
    _preflight(loaded, env, plans=True, implements=False)
    runtime = _runtime(log, config, args, env)
    bar = ProgressBar(sys.stderr, "indexing", min_total=INDEX_BAR_MIN_FILES)
    context = IndexedFactory(data_dir(args, env), config.retrieval, progress=bar)(repo)
    bar.finish()
    try:
        with interruptible():  # a signal ends the plan run cancelled; run_main says so
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


def _bench(args: argparse.Namespace, log: RunLog, env: Mapping[str, str]) -> int:
    from agent.bench.commands import bench_command
    from agent.git import repo as git
    from agent.sandbox.envcache import EnvCache

    repo = Path(args.repo).resolve()
    if not (git.is_work_tree(repo) or _is_bare(repo)):
        raise UsageError(f"{repo} is not a git repository (--repo)")
    config = _trusted_config(repo, args, env).config  # a bare repository needs --config
    cache_mb = int(env.get("CRA_ENV_CACHE_MB") or DEFAULT_ENV_CACHE_MB)
    cache = EnvCache(data_dir(args, env) / "envcache", max_bytes=cache_mb << 20)
    return bench_command(args, log, env, config=config, sandbox=_sandbox(args, env, config),
                         data_dir=data_dir(args, env), factory=_Factory(env),
                         cache=cache if cache_mb > 0 else None)


def _is_bare(path: Path) -> bool:
    from agent.git import repo as git

    try:
        return git.run_git(["rev-parse", "--is-bare-repository"], path).strip() == "true"
    except (AgentError, OSError):
        return False


def _doctor(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """`cra doctor`: one line per check; 0 only when none failed."""
    from agent.cli.doctor import render
    from agent.cli.doctor_checks import local_report

    report = local_report(Path(args.repo).resolve(), args.config, data_dir(args, env), env,
                          known_variables=CRA_VARIABLES, trust_flag=args.trust_repo_config,
                          sandbox=lambda config: _sandbox(args, env, config, say=False))
    print(render(report, as_json=args.json))
    return EXIT_OK if report.passed else EXIT_FAILED


def _load_plan(path: Path) -> PlanArtifact:
    from pydantic import ValidationError

    from agent.models import PlanArtifact

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
        from agent.config.files import resolve_api_key
        from agent.llm.client import HTTPChatModel

        return HTTPChatModel(model, api_key=resolve_api_key(model, self._env))


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
