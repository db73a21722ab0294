"""The trust rule of `cra`: what a repository's own cra.toml may decide only if the user trusts it.

A repository's file may not widen what leaves the machine: `testing.env` (your variables in its
commands) and a model's provider, base_url and api_key_env (where your prompts go, which secret is
read) apply only when you trust the checkout — `--trust-repo-config`, or its path under
`[trust] repositories` in your own config file. A file you name with `--config` is your own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from agent.config.files import (
    ENDPOINT_KEYS,
    SolveConfig,
    find_config_file,
    parse_config,
    read_config_file,
)
from agent.config.user import (
    USER_CONFIG,
    TrustConfig,
    UserConfig,
    load_user_config,
    user_config_path,
)

GLOB_CHARS = frozenset("*?[")
TRUST_FLAG = "--trust-repo-config"


@dataclass(frozen=True)
class RepoConfig:
    """A run's config, and what of the repository's own file it left out and why."""

    config: SolveConfig
    ignored: list[str]  # `testing.env (A, B)`, `models.coding.base_url`
    repo: Path
    user_file: str  # where the user's own config is (or would be)
    trusted: bool  # the file applies whole: a trusted checkout's, or one named by --config

    @property
    def endpoints_in(self) -> str:
        """The file that sets the models' provider, base_url and api_key_env."""
        return (self.config.source or ".github/cra.toml") if self.trusted else self.user_file

    def notice(self) -> tuple[str, str]:
        """What was ignored and why, and how to trust the checkout; ("", "") when nothing."""
        if not self.ignored:
            return "", ""
        what = (
            f"ignored from this repository's {self.config.source}: {', '.join(self.ignored)}"
            " — a repository's own config may not pass your environment to its commands, "
            "nor choose where your prompts go or which key is read"
        )
        fix = (
            f"if you trust {self.repo}, pass {TRUST_FLAG}, or add {str(self.repo)!r} to "
            f"[trust] repositories in {self.user_file}"
        )
        return what, fix


def load_repo_config(
    repo: Path, explicit: Path | None, environ: Mapping[str, str], *, trust_flag: bool = False
) -> RepoConfig:
    """The config of a run in `repo`: the user's models beneath the repository's file (or the
    `--config` file), the untrusted keys of a repository's own file left out."""
    user = load_user_config(environ)
    path = find_config_file(repo, explicit)
    data = read_config_file(path) if path is not None else {}
    ignored: list[str] = []
    trusted = explicit is not None or trust_flag or is_trusted(repo, user.trust, environ)
    if not trusted:
        data, ignored = strip_untrusted(data, user.trust.env)
    config = parse_config(beneath_user(data, user), source=str(path) if path else None)
    where = user.source or str(user_config_path(environ) or f"~/.config/{USER_CONFIG}")
    return RepoConfig(config, ignored, repo, where, trusted)


def is_trusted(repo: Path, trust: TrustConfig, environ: Mapping[str, str]) -> bool:
    """True when the checkout's path is one of the user's trusted repositories."""
    here = repo.resolve()
    return any(_expand(entry, environ) == here for entry in trust.repositories)


def _expand(entry: str, environ: Mapping[str, str]) -> Path:
    if (entry == "~" or entry.startswith("~/")) and environ.get("HOME"):
        entry = environ["HOME"] + entry[1:]
    return Path(entry).resolve()


def strip_untrusted(
    data: Mapping[str, Any], allowed_env: Sequence[str]
) -> tuple[dict[str, Any], list[str]]:
    """The file's mapping without what only a trusted file may set; the keys it dropped."""
    kept, ignored = dict(data), []
    testing = data.get("testing")
    if isinstance(testing, Mapping) and isinstance(testing.get("env"), list):
        names = testing["env"]
        passed = [n for n in names if not isinstance(n, str) or _allowed(n, allowed_env)]
        if len(passed) < len(names):
            dropped = ", ".join(str(n) for n in names if n not in passed)
            ignored.append(f"testing.env ({dropped})")
            kept["testing"] = {**testing, "env": passed}
    models = data.get("models")
    if isinstance(models, Mapping):
        sections = dict(models)
        for role, section in models.items():
            if isinstance(section, Mapping):
                ignored += [f"models.{role}.{key}" for key in ENDPOINT_KEYS if key in section]
                sections[role] = {k: v for k, v in section.items() if k not in ENDPOINT_KEYS}
        kept["models"] = sections
    return kept, ignored


def _allowed(name: str, patterns: Sequence[str]) -> bool:
    """A name the user's `[trust] env` lets any repository pass; a pattern only if the user
    wrote that very pattern (a glob of the repository's may reach further than the user's)."""
    if GLOB_CHARS & set(name):
        return name in patterns
    return any(fnmatchcase(name, pattern) for pattern in patterns)


def beneath_user(data: Mapping[str, Any], user: UserConfig) -> dict[str, Any]:
    """The file's mapping with the user's [models] keys beneath each role's section."""
    mine = user.models_set()
    if not mine:
        return dict(data)
    theirs = data.get("models")
    if not isinstance(theirs, Mapping):
        return {**data, "models": mine} if theirs is None else dict(data)
    models: dict[str, Any] = dict(theirs)
    for role, section in mine.items():
        over = theirs.get(role)
        models[role] = (
            {**section, **over} if isinstance(over, Mapping) else section if over is None else over
        )  # a wrong type: its error
    return {**data, "models": models}
