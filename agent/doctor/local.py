"""`cra doctor`: the checks of a local checkout, in the order a newcomer meets the problems
(the setup step tried once among them)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.config.files import SolveConfig, resolve_api_key
from agent.doctor.checks import (
    check_directory,
    check_git,
    check_models,
    check_sandbox,
    check_test_command,
    check_variables,
    in_config,
    load_for_doctor,
    roles_used,
)
from agent.doctor.report import Check, Finding, Report, fail, ok, run_checks, warn
from agent.errors import ConfigError, GitError
from agent.models import EnvironmentReport
from agent.sandbox.base import Sandbox, SandboxUnavailable

TrySetup = Callable[[SolveConfig, Sandbox], EnvironmentReport]  # the setup step, tried once


@dataclass(frozen=True)
class LocalCheckout:
    """What `cra doctor` is pointed at: the checkout, the config file named on the command line
    (or None), the data dir, the environment, and whether the repository's config is trusted."""

    repo: Path
    config_file: Path | None
    data_dir: Path
    environ: Mapping[str, str]
    trust_repo_config: bool = False


def local_report(
    checkout: LocalCheckout,
    *,
    known_variables: Sequence[str],
    sandbox: Callable[[SolveConfig | None], Sandbox],
    setup: TrySetup | None = None,
) -> Report:
    """The checks of a local checkout, in the order a newcomer meets the problems; `sandbox`
    builds the sandbox for the config (None when it cannot be read); `setup` tries the
    config's setup step in it, as a run would (agent.run.environment.try_setup)."""
    repo, data_dir, environ = checkout.repo, checkout.data_dir, checkout.environ
    loaded, config_findings = load_for_doctor(
        repo, checkout.config_file, environ, trust_flag=checkout.trust_repo_config
    )
    config = loaded.config if loaded is not None else None
    endpoints_in = loaded.endpoints_in if loaded is not None else ""
    checks: list[tuple[str, Check]] = [
        ("git", check_git),
        (
            "variables",
            lambda: check_variables("cra", environ, known_variables, near_misses_only=True),
        ),
        ("data dir", lambda: check_directory("data dir", data_dir, "--data-dir or CRA_DATA_DIR")),
        ("sandbox", lambda: check_sandbox(lambda: sandbox(config), data_dir, "CRA_SANDBOX")),
        ("config", lambda: config_findings),
    ]
    if config is not None:
        checks += [
            (
                "test command",
                lambda: check_test_command(repo, config.testing, environ, config.source),
            ),
        ]
        if setup is not None and config.testing.setup_command:
            tried = setup
            checks.append(
                ("setup step", lambda: check_setup(lambda: tried(config, sandbox(config)), config))
            )
        checks.append(("models", lambda: _local_models(config, environ, endpoints_in)))
    return run_checks("cra", checks)


def check_setup(tried: Callable[[], EnvironmentReport], config: SolveConfig) -> Iterable[Finding]:
    """The setup step, tried once: how it ended (the command, its status and the last lines
    of its output when it failed), and its notes."""
    where = config.source or ".github/cra.toml"
    command = config.testing.setup_command
    try:
        report = tried()
    except GitError as exc:
        yield fail("setup step", f"no checkout of HEAD to try it in: {exc}", "commit something")
        return
    except SandboxUnavailable:
        yield fail("setup step", "not tried: the sandbox cannot run here", "see the sandbox line")
        return
    if report.failure is not None:
        yield fail(
            "setup step",
            report.failure.explained(),
            f"run it by hand in a fresh clone, then fix testing.setup_command in {where}",
        )
        return
    yield ok("setup step", f"{command!r} ran in the {report.sandbox} sandbox")
    for note in report.notes:
        yield warn("setup step", note, f"change testing.setup_command in {where}")


def _local_models(
    config: SolveConfig, environ: Mapping[str, str], endpoints: str
) -> Iterable[Finding]:
    """The models of a local config; a missing API-key variable fails its role."""
    where = in_config(config.source or ".github/cra.toml", endpoints)
    keys: dict[str, str | None] = {}
    for role in roles_used(config, plans=True, implements=True):
        try:
            keys[role] = resolve_api_key(getattr(config.models, role), environ)
        except ConfigError as exc:
            yield fail(
                f"{role} model", str(exc), f"export that variable, or fix {where(role, 'api_key')}"
            )
    used = roles_used(config, plans=True, implements=True)
    roles = [role for role in used if role in keys]
    yield from check_models(config.models, keys, where, roles)
