"""The doctor's checks of a local set-up: git, directories, variables, config, test command, models.

Each check is a small function returning findings; `cra doctor` lists them in agent.doctor.local and
`cra-bot doctor` reuses the ones that apply to a server.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from agent.config.files import ENDPOINT_KEYS, ModelConfig, ModelsConfig, SolveConfig, TestingConfig
from agent.config.trust import RepoConfig, load_repo_config
from agent.console import describe_unknown, unknown_variables
from agent.doctor.report import Finding, fail, ok, warn
from agent.errors import ConfigError, GitError
from agent.git import repo as git
from agent.llm.probe import ModelState, ServerState, find_model, probe_server
from agent.sandbox.base import Sandbox, SandboxUnavailable
from agent.sandbox.check import SHARED_NETWORK, self_check
from agent.sandbox.commands import scrubbed_env

MIN_GIT = (2, 31)  # GIT_CONFIG_COUNT (the token's header reaches git only through it)
SHELL_WORDS = frozenset(
    {
        "cd",
        ".",
        "exec",
        "export",
        "set",
        "unset",
        "if",
        "for",
        "while",
        "until",
        "case",
        "{",
        "(",
        "!",
        "true",
        "false",
        "test",
        "[",
        "eval",
        "command",
        "env",
        "time",
        "nice",
        "timeout",
    }
)
Where = Callable[[str, str], str]  # (role, key) → how the user sets it, e.g. CRA_CODING_MODEL


def in_config(source: str, endpoints: str | None = None) -> Where:
    """Where a config file sets a role's key: `models.coding.model in cra.toml`; the API key
    through the variable `api_key_env` names (a file never holds the key itself); the server and
    key in `endpoints` (your own file) when the repository's file may not set them."""

    def where(role: str, key: str) -> str:
        name = "api_key_env" if key == "api_key" else key
        file = endpoints if endpoints and name in ENDPOINT_KEYS else source
        return f"models.{role}.{name} in {file}"

    return where


# --- git and directories -----------------------------------------------------------------------


def check_git() -> Iterable[Finding]:
    """git on PATH and at least MIN_GIT."""
    path = shutil.which("git")
    if path is None:
        yield fail("git", "not found on PATH", "install git 2.31 or newer")
        return
    out = subprocess.run(
        [path, "--version"], capture_output=True, text=True, timeout=30, check=False
    ).stdout
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out)
    if match is None:
        yield warn("git", f"cannot tell the version of {path} ({out.strip()!r})")
        return
    found = (int(match[1]), int(match[2]))
    need = ".".join(map(str, MIN_GIT))
    if found < MIN_GIT:
        yield fail(
            "git", f"git {match[0]} is too old; cra needs {need}", f"install git {need} or newer"
        )
    else:
        yield ok("git", f"git {match[0]} ({path})")


def check_directory(label: str, path: Path, setting: str) -> Iterable[Finding]:
    """A directory cra writes to exists and is writable, or can be created."""
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        yield fail(
            label,
            f"{path} cannot be a directory: {existing} is a file",
            f"point {setting} at a directory",
        )
    elif not os.access(existing, os.W_OK | os.X_OK):
        yield fail(
            label,
            f"{existing} is not writable by this user",
            f"point {setting} at a writable directory",
        )
    else:
        yield ok(label, f"{path}" + ("" if existing == path else " (created on first use)"))


def check_variables(
    program: str,
    environ: Mapping[str, str],
    known: Sequence[str],
    *,
    near_misses_only: bool = False,
    ignore: Sequence[str] = (),
) -> Iterable[Finding]:
    """CRA_ variables nothing reads: a near miss of a setting fails, any other one warns."""
    unknown = unknown_variables(environ, known, near_misses_only=near_misses_only, ignore=ignore)
    for name, nearest in unknown:
        line = describe_unknown(program, name, nearest)
        if nearest:
            yield fail("variables", line, f"rename it {nearest}")
        else:
            yield warn(
                "variables", line, "remove it, or see the variables table in docs/configuration.md"
            )
    if not unknown:
        count = sum(name.startswith("CRA_") for name in environ)
        yield ok("variables", f"{count} CRA_ variable(s), each read by {program}")


def check_sandbox(build: Callable[[], Sandbox], data_dir: Path, setting: str) -> Iterable[Finding]:
    """The sandbox repository commands run in: a probe proves what it confines (a canary in
    the data dir stays hidden, the system is read-only, no network, its own PIDs)."""
    try:
        sandbox = build()
        facts = self_check(sandbox, data_dir=data_dir)
    except SandboxUnavailable as exc:
        yield fail("sandbox", str(exc))
        return
    except OSError as exc:  # the probe hides a canary in the data dir
        yield fail(
            "sandbox",
            f"cannot run its probe in {data_dir}: {exc.strerror or exc}",
            "fix the data dir first",
        )
        return
    if sandbox.isolated:
        yield ok("sandbox", "; ".join(fact for fact in facts if fact != SHARED_NETWORK))
        if SHARED_NETWORK in facts:
            yield warn(
                "sandbox network",
                SHARED_NETWORK,
                "install slirp4netns (apt-get install slirp4netns) to give it a network "
                "of its own, or forbid the network (CRA_SANDBOX_NETWORK=false; cra.toml: "
                "testing.setup_network = false)",
            )
    else:
        yield warn(
            "sandbox",
            facts[0],
            f"install bubblewrap (apt-get install bubblewrap), or "
            f"keep {setting}=none knowing what it means",
        )


# --- the repository's config and test command --------------------------------------------------


def load_for_doctor(
    repo: Path, explicit: Path | None, environ: Mapping[str, str], *, trust_flag: bool = False
) -> tuple[RepoConfig | None, list[Finding]]:
    """The run's config under the trust rule and the findings about it: which files, or what
    is wrong, and what of the repository's own file a run would leave out."""
    if not git.is_work_tree(repo):
        return None, [
            fail(
                "repository",
                f"{repo} is not a git repository",
                "run cra inside a git checkout, or pass --repo",
            )
        ]
    try:
        git.head_commit(repo)
    except GitError:  # `cra solve` refuses it the same way
        return None, [
            fail(
                "repository",
                f"{repo} has no commits yet: cra works from a commit",
                "commit the code and its tests first",
            )
        ]
    try:
        loaded = load_repo_config(repo, explicit, environ, trust_flag=trust_flag)
    except ConfigError as exc:
        return None, [fail("config", str(exc), f"fix {exc.key or 'the file'} and run again")]
    where = loaded.config.source or "no .github/cra.toml or cra.toml: the defaults"
    mine = f", over your {loaded.user_file}" if Path(loaded.user_file).is_file() else ""
    findings = [ok("config", f"{where} is valid{mine}")]
    what, fix = loaded.notice()
    if what:
        findings.append(warn("config trust", what, fix))
    elif loaded.trusted and explicit is None and loaded.config.source:
        findings.append(
            ok(
                "config trust",
                f"you trust {repo}: its own file applies whole, "
                "testing.env and model servers included",
            )
        )
    return loaded, findings


def first_program(command: str) -> str | None:
    """The program the shell starts first (leading assignments skipped); None if unparsable."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        for word in lexer:
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word):
                return word
    except ValueError:
        return None
    return None


def check_test_command(
    repo: Path,
    testing: TestingConfig,
    environ: Mapping[str, str],
    source: str | None = None,
) -> Iterable[Finding]:
    """The test command is set and its first program can be found from the repository."""
    where = source or ".github/cra.toml"
    command = testing.test_command
    if not command:
        yield fail(
            "test command",
            f"no [testing] test_command in {where}: tests are the gate",
            f'add test_command = "pytest -q" (your tests\' command) under [testing] in {where}',
        )
        return
    program = first_program(command)
    if program is None:
        yield fail(
            "test command",
            f"{command!r} is not a valid shell command",
            f"fix testing.test_command in {where}",
        )
        return
    problem = _program_problem(program, repo, {**scrubbed_env(environ, testing.env)})
    if problem:
        yield fail(
            "test command",
            f"{command!r}: {problem}",
            f"install {program}, or fix testing.test_command in {where}",
        )
    else:
        yield ok("test command", f"{command!r} ({program} found)")


def _program_problem(program: str, repo: Path, env: Mapping[str, str]) -> str | None:
    """Why the shell could not start `program` in `repo`, or None when it can."""
    if program in SHELL_WORDS:
        return None
    if "/" in program:
        path = (repo / program) if not os.path.isabs(program) else Path(program)
        if not path.exists():
            return f"{program} does not exist"
        return None if os.access(path, os.X_OK) else f"{program} is not executable (chmod +x)"
    found = subprocess.run(
        ["/bin/sh", "-c", 'command -v -- "$1"', "sh", program],
        cwd=repo,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return None if found.returncode == 0 else f"{program} is not found on PATH"


# --- model servers -----------------------------------------------------------------------------


def roles_used(config: SolveConfig, *, plans: bool, implements: bool) -> tuple[str, ...]:
    """The roles a command will call: planning asks the reasoning model, implementing the coding
    model, and the classifier answers retrieval's stages and the decomposed adjustment."""
    classifier = bool(config.retrieval.stages) or (
        plans
        and implements
        and config.orchestrator.decomposed_adjustment
        and config.orchestrator.max_adjustment_rounds > 0
    )
    return tuple(
        role
        for role, used in (("reasoning", plans), ("coding", implements), ("classifier", classifier))
        if used
    )


def check_models(
    models: ModelsConfig,
    keys: Mapping[str, str | None],
    where: Where,
    roles: Sequence[str] = ("reasoning", "coding", "classifier"),
) -> Iterable[Finding]:
    """Each role's server answers, lists the named model, and its window fits the config's."""
    servers: dict[tuple[str, str, str | None], ServerState] = {}
    for role in roles:
        config: ModelConfig = getattr(models, role)
        key = keys.get(role)
        server_key = (config.provider, config.base_url, key)
        if server_key not in servers:
            servers[server_key] = probe_server(config.provider, config.base_url, key)
        yield model_finding(role, config, find_model(servers[server_key], config, key), where)


def model_finding(role: str, config: ModelConfig, state: ModelState, where: Where) -> Finding:
    """One line about a role's model: down, missing, window too small, or fine."""
    label, server = f"{role} model", state.server
    if server.problem is not None:
        fix = (
            f"start the server ({_start_hint(config)}), or fix {where(role, 'base_url')}"
            if not server.reachable
            else f"check {where(role, 'api_key')}"
        )
        return fail(label, server.problem, fix)
    if state.present is False:
        listed = ", ".join(sorted(server.models or {})[:8]) or "none"
        fix = (
            f"ollama pull {config.model}"
            if config.provider == "ollama"
            else f"serve it, or set {where(role, 'model')} to one it serves"
        )
        return fail(label, f"{config.model} is not on {config.base_url} (it has: {listed})", fix)
    return _window_finding(label, config, state, where(role, "context_window"))


def _window_finding(label: str, config: ModelConfig, state: ModelState, setting: str) -> Finding:
    name = f"{config.model} on {config.base_url}"
    if state.present is None:
        return ok(label, f"{name}: the server answers (it lists no models to check the name)")
    if state.window is None:
        return ok(label, f"{name}: present; cra uses a {config.context_window}-token window")
    if state.window >= config.context_window:
        return ok(
            label, f"{name}: present; window {state.window}, cra uses {config.context_window}"
        )
    detail = (
        f"{name}: cra uses a {config.context_window}-token window but the "
        f"{'model was trained on' if config.provider == 'ollama' else 'server allows'} "
        f"{state.window}"
    )
    fix = f"set {setting} to {state.window} or less"
    if config.provider == "ollama":  # Ollama runs it anyway, with a window it was not made for
        return warn(label, detail, fix)
    return fail(label, detail, fix + " (or start the server with a larger window)")


def _start_hint(config: ModelConfig) -> str:
    return "`ollama serve`" if config.provider == "ollama" else "your OpenAI-compatible server"
