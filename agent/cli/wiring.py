"""What the commands of `cra` run with, built from their options and the environment: the data
dir, the run log, the repository and its config, the model servers checked, the sandbox, the
runtime."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from agent.console import shown_url
from agent.errors import GitError, UsageError

if TYPE_CHECKING:
    from agent.config.files import ModelConfig, SolveConfig
    from agent.config.trust import RepoConfig
    from agent.llm.client import ChatModel
    from agent.run.runtime import Runtime
    from agent.runlog.store import RunLog
    from agent.sandbox.base import Sandbox, SandboxKind

DEFAULT_ENV_CACHE_MB = 10240
SANDBOX_CHOICES: dict[str, SandboxKind | Literal["auto"]] = {
    "auto": "auto",
    "bwrap": "bwrap",
    "none": "none",
}


def data_dir(args: argparse.Namespace, env: Mapping[str, str]) -> Path:
    """--data-dir, else $CRA_DATA_DIR, else $XDG_DATA_HOME/cra or ~/.local/share/cra; made
    absolute, since git commands run in other folders are given paths inside it."""
    if args.data_dir is not None:
        return Path(args.data_dir).absolute()
    if env.get("CRA_DATA_DIR"):
        return Path(env["CRA_DATA_DIR"]).absolute()
    base = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".local/share")
    return Path(base) / "cra"


def usable_data_dir(args: argparse.Namespace, env: Mapping[str, str]) -> Path:
    """The data dir, created if needed; UsageError naming the option when it cannot be."""
    path = data_dir(args, env)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"cannot use {path} as the data dir (--data-dir or CRA_DATA_DIR): "
            f"{exc.strerror or exc} → point it at a writable directory"
        ) from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"the data dir {path} is not writable (--data-dir or CRA_DATA_DIR)")
    return path


def db_url(args: argparse.Namespace, env: Mapping[str, str]) -> str:
    """--db, else $CRA_DATABASE_URL, else the SQLite file cra.db in the data dir."""
    if args.db:
        return str(args.db)
    if env.get("CRA_DATABASE_URL"):
        return env["CRA_DATABASE_URL"]
    return f"sqlite:///{usable_data_dir(args, env) / 'cra.db'}"


def open_log(args: argparse.Namespace, env: Mapping[str, str]) -> RunLog:
    """The run log, migrated; UsageError naming the setting when it cannot be opened."""
    from sqlalchemy.exc import SQLAlchemyError

    from agent.runlog.store import RunLog

    url = db_url(args, env)
    try:
        return RunLog.open(url)
    except (SQLAlchemyError, OSError) as exc:
        reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
        raise UsageError(
            f"cannot open the run log {shown_url(url)} (--db, CRA_DATABASE_URL or "
            f"the data dir): {reason}"
        ) from exc


def repo_and_config(args: argparse.Namespace, env: Mapping[str, str]) -> tuple[Path, RepoConfig]:
    """The --repo checkout (a git work tree with a commit) and its trusted config."""
    from agent.git import repo as git

    repo = Path(args.repo).resolve()
    if not git.is_work_tree(repo):
        raise UsageError(f"{repo} is not a git repository (--repo)")
    try:
        git.head_commit(repo)
    except GitError:
        raise UsageError(
            f"{repo} has no commits yet: cra works from a commit (commit the code "
            "and its tests first)"
        ) from None
    return repo, trusted_config(repo, args, env)


def trusted_config(repo: Path, args: argparse.Namespace, env: Mapping[str, str]) -> RepoConfig:
    """The run's config under the trust rule (agent.config.trust); says once what it left out."""
    from agent.config.trust import load_repo_config

    loaded = load_repo_config(repo, args.config, env, trust_flag=args.trust_repo_config)
    what, fix = loaded.notice()
    if what:
        print(f"cra: warning: {what}; {fix}", file=sys.stderr)
    return loaded


def api_keys(config: SolveConfig, env: Mapping[str, str]) -> dict[str, str | None]:
    """Each role's API key, from the variable its api_key_env names."""
    from agent.config.files import resolve_api_key

    return {
        role: resolve_api_key(getattr(config.models, role), env)
        for role in ("reasoning", "coding", "classifier")
    }


def preflight(loaded: RepoConfig, env: Mapping[str, str], *, plans: bool, implements: bool) -> None:
    """Before the first model call: each role the command uses has a server that answers (and,
    said as a warning, the model it names)."""
    from agent.doctor.checks import in_config, roles_used
    from agent.doctor.preflight import require_model_servers

    config = loaded.config
    where = in_config(config.source or ".github/cra.toml", loaded.endpoints_in)
    for line in require_model_servers(
        config.models,
        api_keys(config, env),
        where,
        roles_used(config, plans=plans, implements=implements),
    ):
        print(f"cra: warning: {line}", file=sys.stderr)


def build_runtime(
    log: RunLog,
    config: SolveConfig,
    args: argparse.Namespace,
    env: Mapping[str, str],
    run_id: str | None = None,
) -> Runtime:
    """A run's runtime: its models, sandbox, environment cache, run log and progress lines."""
    from dataclasses import replace

    from agent.llm.router import ModelRouter
    from agent.progress import StepPrinter
    from agent.run.runtime import Runtime
    from agent.sandbox.envcache import EnvCache

    router = ModelRouter(config.models, factory=ModelFactory(env))
    sandbox = chosen_sandbox(args, env, config)
    cache_mb = int(env.get("CRA_ENV_CACHE_MB") or DEFAULT_ENV_CACHE_MB)
    cache = EnvCache(data_dir(args, env) / "envcache", max_bytes=cache_mb << 20)
    runtime = Runtime(
        log=log,
        models=router,
        environ=env,
        work_dir=data_dir(args, env),
        sandbox=sandbox,
        env_cache=cache if cache_mb > 0 else None,
        observer=StepPrinter(sys.stderr),
    )
    return runtime if run_id is None else replace(runtime, new_id=lambda: run_id)


def chosen_sandbox(
    args: argparse.Namespace,
    env: Mapping[str, str],
    config: SolveConfig | None,
    *,
    say: bool = True,
) -> Sandbox:
    """The sandbox --sandbox (or $CRA_SANDBOX) names, hiding cra's data dir and opening the
    networks `config` allows (from --config FILE); says which."""
    from agent.sandbox.base import describe_sandbox, hidden_paths
    from agent.sandbox.bwrap import build_sandbox

    kind = getattr(args, "sandbox", None) or env.get("CRA_SANDBOX") or "auto"
    if kind not in SANDBOX_CHOICES:
        raise UsageError(f"CRA_SANDBOX={kind}: expected auto, bwrap or none")
    db = db_url(args, env)
    data = [
        data_dir(args, env),
        *([Path(db.removeprefix("sqlite:///"))] if db.startswith("sqlite:///") else []),
    ]
    home = Path(env["HOME"]) if env.get("HOME") else None
    allowed = config.sandbox.allow_addresses if config is not None else ()
    sandbox = build_sandbox(
        SANDBOX_CHOICES[kind], hide=hidden_paths(data=data, home=home), allow_addresses=allowed
    )
    if say:
        print(f"cra: {describe_sandbox(sandbox, chosen=kind)}", file=sys.stderr)
    return sandbox


class ModelFactory:
    """Builds an HTTP model client per role, its API key read from the named variable."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env

    def __call__(self, model: ModelConfig) -> ChatModel:
        from agent.config.files import resolve_api_key
        from agent.llm.client import HTTPChatModel

        return HTTPChatModel(model, api_key=resolve_api_key(model, self._env))


def remove_abandoned_runs(log: RunLog, work_dir: Path) -> None:
    """Worktrees of runs whose `cra` died (killed, the machine restarted) are removed, and the
    runs, still "running" in the log, are marked failed; one line each says so."""
    from agent.git.workspace import remove_abandoned

    for gone in remove_abandoned(work_dir):
        log.abandon_run(gone.run_id, "interrupted: its cra process is gone")
        kept = ""
        if not gone.branch_deleted and gone.branch:
            kept = (
                f"; its branch {gone.branch} keeps the commits it made "
                f"(`git branch -D {gone.branch}` deletes it)"
            )
        print(
            f"cra: removed the worktree of run {gone.run_id}, whose process is gone{kept}",
            file=sys.stderr,
        )
