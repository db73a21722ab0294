"""The config files: SolveConfig from `--config FILE`, `.github/cra.toml` or `cra.toml`, and the
user's own `~/.config/cra/config.toml`."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from agent.config.wording import plain_errors
from agent.errors import ConfigError
from agent.sandbox.netblock import AllowedNetwork

CONFIG_CANDIDATES = (".github/cra.toml", "cra.toml")
# The keys of a [models.ROLE] section that decide where prompts go and which secret is read.
ENDPOINT_KEYS = ("provider", "base_url", "api_key_env")
DEFAULT_OLLAMA_URL = "http://localhost:11434"
MAX_GROUP_STEPS = 4  # steps that may land together (one gate): more than this is several changes
DEFAULT_PROTECTED: tuple[str, ...] = (".github/workflows/**",)  # globs cra never edits
# The files whose content keys the environment cache: manifests and lock files. A pattern
# without "/" matches a file name at any depth; one with "/" matches the whole path.
DEFAULT_SETUP_INPUTS: tuple[str, ...] = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements*.txt",
    "requirements/*.txt",
    "constraints*.txt",
    "Pipfile",
    "Pipfile.lock",
    "poetry.lock",
    "uv.lock",
    "pdm.lock",
    "tox.ini",
    "noxfile.py",
    "environment.yml",
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "bun.lockb",
    ".nvmrc",
    ".node-version",
    "Cargo.toml",
    "Cargo.lock",
    "rust-toolchain",
    "rust-toolchain.toml",
    "go.mod",
    "go.sum",
    "Gemfile",
    "Gemfile.lock",
    "*.gemspec",
    "composer.json",
    "composer.lock",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "settings.gradle",
    "settings.gradle.kts",
    "gradle.lockfile",
    "mix.exs",
    "mix.lock",
    "*.csproj",
    "packages.lock.json",
    ".tool-versions",
    ".python-version",
)


class Section(BaseModel):
    """A config section: unknown keys and wrong types are errors."""

    model_config = ConfigDict(extra="forbid", strict=True, validate_default=True)


def check_endpoint(url: str) -> str:
    """A model server's base URL: http(s), with no credentials in it — they would be shown in
    every log line, error and run record that names the endpoint (the key goes in an
    environment variable, sent as a bearer token). ValueError in plain words otherwise."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # a port that is not a number
    except ValueError as exc:
        raise ValueError(f"not a URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(
            "expected the http:// or https:// URL of the model server, such as "
            f"{DEFAULT_OLLAMA_URL}"
        )
    if parts.username is not None or parts.password is not None:
        raise ValueError(
            "the URL carries credentials (user:password@host), which would be "
            "shown in logs, errors and run records: give the model server's key "
            "through an environment variable (api_key_env, CRA_<ROLE>_API_KEY) "
            "instead"
        )
    return url


class ModelConfig(Section):
    """One model endpoint: provider, URL, name, window and sampling."""

    provider: Literal["ollama", "openai"] = "ollama"
    base_url: str = DEFAULT_OLLAMA_URL
    model: str
    context_window: int = Field(default=16384, gt=0)
    temperature: float = Field(default=0.0, ge=0.0)
    max_tokens: int = Field(default=2048, gt=0)
    api_key_env: str | None = None
    request_timeout: float = Field(default=300.0, gt=0)
    max_retries: int = Field(default=3, ge=0)

    @field_validator("base_url")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        return check_endpoint(value)


ROLE_DEFAULTS: dict[str, dict[str, Any]] = {
    "reasoning": {"model": "qwen3:4b"},
    "coding": {"model": "qwen2.5-coder:3b"},
    "classifier": {"model": "qwen3:0.6b", "context_window": 8192, "max_tokens": 512},
}


def _role_default(role: str) -> ModelConfig:
    return ModelConfig(**ROLE_DEFAULTS[role])


class ModelsConfig(Section):
    """The three roles: reasoning (planner), coding (implementer), classifier (yes/no)."""

    reasoning: ModelConfig = Field(default_factory=lambda: _role_default("reasoning"))
    coding: ModelConfig = Field(default_factory=lambda: _role_default("coding"))
    classifier: ModelConfig = Field(default_factory=lambda: _role_default("classifier"))

    @model_validator(mode="before")
    @classmethod
    def _fill_role_defaults(cls, data: Any) -> Any:
        """A partial `[models.ROLE]` section keeps that role's defaults for the keys it omits."""
        if not isinstance(data, Mapping):
            return data
        merged = dict(data)
        for role, defaults in ROLE_DEFAULTS.items():
            section = merged.get(role)
            if isinstance(section, Mapping):
                merged[role] = {**defaults, **section}
        return merged


class BudgetConfig(Section):
    """Token ceilings: reserved per call, per step, per run."""

    reserved_tokens: int = Field(default=2048, ge=0)
    max_tokens_per_step: int = Field(default=30000, gt=0)
    max_tokens_per_run: int = Field(default=300000, gt=0)


class TestingConfig(Section):
    """The gate: the test command and the optional lint and type-check commands."""

    __test__ = False  # not a pytest class

    test_command: str | None = None
    lint_command: str | None = None
    type_check_command: str | None = None
    timeout: float = Field(default=600.0, gt=0)
    timeout_factor: float = Field(default=3.0, ge=1.0)
    timeout_margin: float = Field(default=30.0, ge=0)
    env: list[str] = Field(default_factory=list)
    max_output_chars: int = Field(default=20000, gt=200)
    network: bool = False  # tests, lint and type check: no network unless the repository asks
    # jest and vitest asked for a JSON report by flags added to a plain command: off by default,
    # since the flags reach process.argv, which tests of a command-line parser read
    js_report: bool = False
    setup_command: str | None = None
    setup_network: bool = True
    setup_timeout: float = Field(default=1800.0, gt=0)
    setup_inputs: list[str] = Field(default_factory=lambda: list(DEFAULT_SETUP_INPUTS))


class OrchestratorConfig(Section):
    """Retries, call ceilings, refinement and adjustment switches, protected paths."""

    max_retries_per_step: int = Field(default=1, ge=0)
    max_calls_per_step: int = Field(default=12, gt=0)
    max_refinement_loops: int = Field(default=1, ge=0)
    max_adjustment_rounds: int = Field(default=1, ge=0)
    max_steps_per_part: int = Field(default=10, gt=0)
    max_group_steps: int = Field(default=MAX_GROUP_STEPS, gt=0)
    decomposed_adjustment: bool = False
    cache_judgments: bool = True
    # a test that fails on the base commit as the issue describes, written before any fix,
    # is the run's gate (agent.run.reproduction); the attempts at writing it
    reproduce: bool = True
    max_reproduction_attempts: int = Field(default=3, gt=0)
    # times a reproduction judged wrong (the fix fails only on it) may be written again
    max_reproduction_rewrites: int = Field(default=1, ge=0)
    # times a part whose steps all failed is planned again when they show its plan wrong
    # (nothing found to change in the files it names, or a traceback that never reaches them);
    # off by default: on the bench it bought one task in 57 for 6,900 prompt tokens a task
    max_replans: int = Field(default=0, ge=0)
    # once a step's retries have failed, this many candidates sampled from the same prompt at
    # sample_temperature, the first the gate passes kept (0: none)
    samples: int = Field(default=0, ge=0)
    sample_temperature: float = Field(default=0.7, ge=0.0)
    protected_paths: list[str] = Field(default_factory=lambda: list(DEFAULT_PROTECTED))


class RetrievalConfig(Section):
    """Which model stages retrieval runs, and how wide it looks."""

    stages: list[Literal["scope", "precision"]] = Field(
        default_factory=lambda: ["scope", "precision"]  # type: ignore[arg-type]
    )
    top_k: int = Field(default=12, gt=0)
    search_limit: int = Field(default=100, gt=0)
    whole_file_tokens: int = Field(default=1200, ge=0)
    precision_max_questions: int = Field(default=6, ge=0)
    scope_questions: int = Field(default=2, ge=0)
    max_classifier_calls: int = Field(default=12, ge=0)
    plan_context_tokens: int = Field(default=3000, gt=0)
    implement_context_tokens: int = Field(default=8000, gt=0)
    implement_extra_tokens: int = Field(default=1500, ge=0)
    max_file_bytes: int = Field(default=512_000, gt=0)
    skip_dirs: list[str] = Field(
        default_factory=lambda: [
            "node_modules",
            "vendor",
            "third_party",
            ".venv",
            "venv",
            "dist",
            "build",
            "__pycache__",
            ".mypy_cache",
            ".pytest_cache",
            ".tox",
            "target",
        ]
    )
    skip_globs: list[str] = Field(
        default_factory=lambda: [
            "*.min.js",
            "*.min.css",
            "*.map",
            "*_pb2.py",
            "*_pb2_grpc.py",
            "*.pb.go",
            "package-lock.json",
            "yarn.lock",
            "pnpm-lock.yaml",
            "poetry.lock",
            "uv.lock",
            "Cargo.lock",
            "go.sum",
            "composer.lock",
            "Gemfile.lock",
        ]
    )


class SandboxConfig(Section):
    """The operator's widening of the sandbox: networks a command with the network (the setup
    step) may reach although private or this machine's own — a package mirror. Read only from
    an explicit `--config FILE`, never from the repository's own cra.toml."""

    allow_addresses: list[AllowedNetwork] = Field(default_factory=list)


class SolveConfig(Section):
    """Everything one solve run needs to know, read once from TOML."""

    models: ModelsConfig = Field(default_factory=ModelsConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    testing: TestingConfig = Field(default_factory=TestingConfig)
    orchestrator: OrchestratorConfig = Field(default_factory=OrchestratorConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    source: str | None = None

    @model_validator(mode="after")
    def _reserved_fits_every_window(self) -> SolveConfig:
        for role in ("reasoning", "coding", "classifier"):
            window = getattr(self.models, role).context_window
            if self.budget.reserved_tokens >= window:
                raise ValueError(
                    f"budget.reserved_tokens ({self.budget.reserved_tokens}) must be smaller than "
                    f"models.{role}.context_window ({window})"
                )
        return self

    def require_test_command(self) -> str:
        """The test command, or a ConfigError: tests are the gate."""
        if not self.testing.test_command:
            raise ConfigError(
                "no [testing] test_command: cra needs a test command, tests are the gate",
                path=self.source,
                key="testing.test_command",
            )
        return self.testing.test_command


def find_config_file(repo: Path, explicit: Path | None = None) -> Path | None:
    """The explicit file, else `.github/cra.toml`, else `cra.toml`, else None."""
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigError("config file not found", path=str(explicit))
        return explicit
    for name in CONFIG_CANDIDATES:
        candidate = repo / name
        if candidate.is_file():
            return candidate
    return None


def load_config(
    repo: Path, explicit: Path | None = None, *, allow_endpoints: bool = True
) -> SolveConfig:
    """Load the SolveConfig for a repository (defaults when no file exists).

    With `allow_endpoints=False` (a repository's config read by the bot) a file that sets a
    model's provider, base_url or api_key_env is an error: endpoints belong to the server. A
    `[sandbox]` section is the operator's: an error unless the file is the `explicit` one.
    """
    path = find_config_file(repo, explicit)
    if path is None:
        return SolveConfig()
    data = read_config_file(path)
    if not allow_endpoints:
        _reject_endpoints(data, str(path))
    if explicit is None and "sandbox" in data:
        raise ConfigError(
            "[sandbox] widens what the setup step's network reaches: the "
            "operator's choice, given in a --config FILE (cra) or "
            "CRA_SANDBOX_ALLOW_ADDRESSES (cra-bot), never by the repository's "
            "own cra.toml",
            path=str(path),
            key="sandbox",
        )
    return parse_config(data, source=str(path))


def read_config_file(path: Path) -> dict[str, Any]:
    """A config file's TOML as a mapping; ConfigError naming the file when it is not TOML."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"not valid TOML: {exc}", path=str(path)) from exc
    except OSError as exc:
        raise ConfigError(f"cannot read it: {exc.strerror or exc}", path=str(path)) from exc


def parse_config(data: Mapping[str, Any], *, source: str | None = None) -> SolveConfig:
    """Validate a TOML mapping into a SolveConfig; errors name the key and the file."""
    try:
        config = SolveConfig.model_validate({**data, "source": source})
    except ValidationError as exc:
        raise config_error(exc, source) from exc
    return config


def config_error(
    exc: ValidationError, source: str | None, model: type[BaseModel] = SolveConfig
) -> ConfigError:
    """The first key at fault and every problem in plain words, with "did you mean" for typos."""
    errors = [e for e in exc.errors() if e["loc"] != ("source",)]
    first = errors[0] if errors else exc.errors()[0]
    key = ".".join(str(p) for p in first["loc"])
    problems = plain_errors(errors or exc.errors(), model)
    return ConfigError("; ".join(problems), path=source, key=key or None)


def _reject_endpoints(data: Mapping[str, Any], source: str) -> None:
    models = data.get("models", {})
    if not isinstance(models, Mapping):
        return
    for role, section in models.items():
        if not isinstance(section, Mapping):
            continue
        for key in ENDPOINT_KEYS:
            if key in section:
                raise ConfigError(
                    f"models.{role}.{key} is set by the server, not by the repository",
                    path=source,
                    key=f"models.{role}.{key}",
                )


def resolve_api_key(model: ModelConfig, environ: Mapping[str, str]) -> str | None:
    """The API key named by `api_key_env`, or None; a named but unset variable is an error."""
    if not model.api_key_env:
        return None
    value = environ.get(model.api_key_env)
    if not value:
        raise ConfigError(
            f"environment variable {model.api_key_env} (api_key_env of {model.model}) is not set"
        )
    return value
