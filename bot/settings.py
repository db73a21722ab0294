"""BotSettings: the server's configuration, read once from CRA_* variables (and a .env file)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from agent.config.files import ModelConfig
from agent.config.wording import plain_errors
from agent.models import ModelRole
from agent.sandbox.base import SandboxLimits, hidden_paths
from agent.sandbox.netblock import AllowedNetwork
from bot.errors import SettingsError
from bot.model_endpoints import (
    ROLES,
    ModelEndpoint,
    check_role,
    default_endpoint,
    role_defaults,
)

DEFAULT_DATA_DIR = Path("~/.local/share/cra-bot")
DEFAULT_DATABASE_URL = "sqlite:///<data_dir>/cra.db"


def _limit(name: str, description: str) -> Any:
    """A sandbox limit field, defaulting to the agent's."""
    return Field(default=SandboxLimits.model_fields[name].default, gt=0, description=description)


class BotSettings(BaseSettings):
    """Everything the server is told by its CRA_ variables (bot.environment reads the rest)."""

    model_config = SettingsConfigDict(
        env_prefix="CRA_",
        env_file=None,
        extra="ignore",
        validate_default=True,
        # CRA_CODING_BASE_URL is coding.base_url: split once, after the role
        env_nested_delimiter="_",
        env_nested_max_split=1,
    )

    app_id: int | None = Field(default=None, description="The GitHub App's id.")
    private_key: SecretStr | None = Field(default=None, description="The App's private key (PEM).")
    private_key_path: Path | None = Field(
        default=None, description="A file holding the App's private key (PEM)."
    )
    webhook_secret: SecretStr | None = Field(
        default=None, description="Signs webhook deliveries; required unless insecure_dev."
    )
    insecure_dev: bool = Field(
        default=False, description="Accept unsigned deliveries when no secret is set (development)."
    )
    data_dir: Path = Field(
        default=DEFAULT_DATA_DIR, description="Home of the database, mirrors and worktrees."
    )
    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        description="SQLAlchemy URL of the bot's database; <data_dir> stands for data_dir.",
    )
    queue: Literal["thread", "rq"] = Field(
        default="thread", description="Run queue: thread (in-process workers) | rq (Redis)."
    )
    workers: int = Field(default=2, ge=1, description="Worker threads of the thread queue.")
    redis_url: str | None = Field(default=None, description="Redis URL, required by queue=rq.")
    queue_name: str = Field(
        default="cra",
        min_length=1,
        max_length=100,
        description="The RQ queue's name (several deployments can share one Redis).",
    )
    github_api_url: str = Field(default="https://api.github.com", description="GitHub REST API.")
    github_url: str = Field(default="https://github.com", description="GitHub web (clone URLs).")
    label: str = Field(default="cra", min_length=1, description="The issue label starting a run.")
    bot_login: str | None = Field(default=None, description="The App's own login, <slug>[bot].")
    on_partial: Literal["draft", "comment"] = Field(
        default="draft", description="A partial run opens a draft PR, or only comments."
    )
    public_url: str | None = Field(default=None, description="Public base URL (run page links).")
    reasoning: ModelEndpoint = default_endpoint("reasoning")
    coding: ModelEndpoint = default_endpoint("coding")
    classifier: ModelEndpoint = default_endpoint("classifier")
    allowed_models: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Model names a repository may pick (comma-separated); the three above always.",
    )
    test_env: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Variables of the server's environment a repository's testing.env may pass "
        "to its commands (names or globs, comma-separated); PATH, HOME, LANG, TMPDIR always, "
        "nothing else.",
    )
    comment_interval: float = Field(
        default=5.0, ge=0, description="Minimum seconds between edits of the progress comment."
    )
    # Liveness: a working run's heartbeat, and the reaper that ends runs whose heartbeat stopped.
    heartbeat_interval: float = Field(
        default=15.0, gt=0, description="Seconds between a working run's heartbeats."
    )
    stale_after: float = Field(
        default=120.0,
        gt=0,
        description="Seconds without a heartbeat after which a running run is ended as stuck.",
    )
    reap_interval: float = Field(
        default=30.0,
        ge=0,
        description="Seconds between the server's sweeps for stuck runs (0: no reaper).",
    )
    max_run_minutes: float = Field(
        default=360.0,
        gt=0,
        description="Longest a run may work; then it is ended as failed, even if its worker "
        "is stuck (the worker stops at its next step and pushes nothing; a stuck in-process "
        "worker is replaced CRA_STALE_AFTER seconds later).",
    )
    run_stall_timeout: float = Field(
        default=3600.0,
        gt=0,
        description="Seconds a running run may go without progress of its own (a model call "
        "started or ended, a test, lint or setup command started, an edit applied) before it "
        "is ended as stalled, though its worker's heartbeat beats on (a hung worker thread); "
        "longer than CRA_MAX_TEST_TIMEOUT.",
    )
    requeue_after: float = Field(
        default=60.0,
        gt=0,
        description="Seconds a run may stay queued, held by no queue, before it is queued "
        "again (three times at most; then it fails).",
    )
    token: SecretStr | None = Field(
        default=None,
        description="A ready token instead of the App's (Actions mode, or a "
        "server receiving repository webhooks, whose deliveries name no installation).",
    )
    # Who may see what: the run pages behind GitHub sign-in, /metrics behind a token.
    run_pages: Literal["private", "public"] = Field(
        default="private",
        description="private: run pages only for signed-in people who can read the run's "
        "repository; public: for anyone who reaches the server.",
    )
    client_id: str | None = Field(
        default=None, description="The App's client id, for signing in to the run pages."
    )
    client_secret: SecretStr | None = Field(default=None, description="The App's client secret.")
    session_secret: SecretStr | None = Field(
        default=None,
        description="Signs and encrypts sign-in cookies; default: derived from the client secret.",
    )
    metrics_token: SecretStr | None = Field(
        default=None,
        description="Bearer token /metrics asks for; without it /metrics answers loopback only.",
    )
    # Operator limits: a repository's cra.toml may lower them, never raise them (bot.run.limits).
    max_tokens_per_run: int = Field(
        default=1_000_000, gt=0, description="Most model tokens one run may use."
    )
    max_tokens_per_step: int = Field(
        default=100_000, gt=0, description="Most model tokens one plan step may use."
    )
    max_retries_per_step: int = Field(default=3, ge=0, description="Most retries of one step.")
    max_reproduction_attempts: int = Field(
        default=3, gt=0, description="Most attempts at the test that reproduces an issue."
    )
    max_samples: int = Field(
        default=3,
        ge=0,
        description="Most candidates sampled for a step once its retries have failed.",
    )
    max_reproduction_rewrites: int = Field(
        default=1,
        ge=0,
        description="Most rewrites of a reproduction judged wrong (the fix fails only on it).",
    )
    max_replans: int = Field(
        default=1,
        ge=0,
        description="Most times a part whose steps all failed is planned again.",
    )
    max_calls_per_step: int = Field(
        default=30, gt=0, description="Most model calls of one plan step."
    )
    max_test_timeout: float = Field(
        default=1800.0, gt=0, description="Most seconds one test, lint or setup command may run."
    )
    max_runs_per_installation: int | None = Field(
        default=None, gt=0, description="Most runs at once per App installation (unset: no limit)."
    )
    max_runs_per_repository: int | None = Field(
        default=None, gt=0, description="Most runs at once per repository (unset: no limit)."
    )
    # The door: slow or stalled clients never hold the server (bot.web.door).
    server_threads: int = Field(default=8, ge=1, description="Threads answering requests.")
    header_timeout: float = Field(
        default=10.0, gt=0, description="Seconds a client has to send a request's headers."
    )
    read_timeout: float = Field(
        default=30.0, gt=0, description="Seconds of silence after which a connection is closed."
    )
    max_connections: int = Field(
        default=500, ge=1, description="Open connections at most; more wait to be accepted."
    )
    sandbox: Literal["bwrap", "none"] = Field(
        default="bwrap",
        description="Where repository commands run: bwrap (bubblewrap) | none (unsandboxed).",
    )
    sandbox_network: bool = Field(
        default=True, description="Let the setup step (and tests that ask) use the network."
    )
    sandbox_allow_addresses: Annotated[list[AllowedNetwork], NoDecode] = Field(
        default_factory=list,
        description="Private or this machine's addresses (comma-separated, or CIDR networks) "
        "the setup step may reach: a package mirror; metadata addresses never.",
    )
    sandbox_hide: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="More paths the sandbox hides (comma-separated); data dir, key and "
        "database always are.",
    )
    sandbox_memory_mb: int = _limit("memory_mb", "Memory per sandboxed process (MB).")
    sandbox_processes: int = _limit("processes", "Processes (and threads) per sandbox.")
    sandbox_cpu_seconds: int = _limit("cpu_seconds", "CPU seconds per sandboxed process.")
    sandbox_file_size_mb: int = _limit("file_size_mb", "Largest file a command may write (MB).")
    sandbox_tmp_mb: int = _limit("tmp_mb", "Size of a sandboxed command's private /tmp (MB).")
    env_cache_mb: int = Field(
        default=10240, ge=0, description="Size bound of the environment cache (MB); 0: off."
    )

    @field_validator("data_dir")
    @classmethod
    def _expand_data_dir(cls, value: Path) -> Path:
        """`~` in the data directory means the user's home."""
        return value.expanduser()

    @model_validator(mode="before")
    @classmethod
    def _fill_role_defaults(cls, data: Any) -> Any:
        """A role given only some of its CRA_<ROLE>_* variables keeps that role's defaults for
        the others."""
        if not isinstance(data, dict):
            return data
        return {
            **data,
            **{
                role: {**role_defaults(role), **data[role]}
                for role in ROLES
                if isinstance(data.get(role), dict)
            },
        }

    @field_validator(
        "allowed_models", "sandbox_hide", "sandbox_allow_addresses", "test_env", mode="before"
    )
    @classmethod
    def _split_models(cls, value: Any) -> Any:
        """A comma-separated string (or a JSON list) from the environment becomes a list."""
        if not isinstance(value, str):
            return value
        if value.lstrip().startswith("["):
            return json.loads(value)
        return [name.strip() for name in value.split(",") if name.strip()]

    @model_validator(mode="after")
    def _database_in_data_dir(self) -> BotSettings:
        """`<data_dir>` in the database URL (the default: a SQLite file) means data_dir."""
        self.database_url = self.database_url.replace("<data_dir>", str(self.data_dir))
        return self

    @model_validator(mode="after")
    def _heartbeats_before_staleness(self) -> BotSettings:
        """A run must be able to miss a heartbeat without being taken for dead."""
        if self.stale_after < 2 * self.heartbeat_interval:
            raise ValueError(
                f"CRA_STALE_AFTER ({self.stale_after:g} s) must be at least twice "
                f"CRA_HEARTBEAT_INTERVAL ({self.heartbeat_interval:g} s), or the reaper ends "
                "runs whose workers are alive"
            )
        return self

    @model_validator(mode="after")
    def _stalls_after_the_longest_command(self) -> BotSettings:
        """A command may run its whole time without being taken for a hang."""
        if self.run_stall_timeout <= self.max_test_timeout:
            raise ValueError(
                f"CRA_RUN_STALL_TIMEOUT ({self.run_stall_timeout:g} s) must be longer than "
                f"CRA_MAX_TEST_TIMEOUT ({self.max_test_timeout:g} s), or a test, lint or setup "
                "command running to its limit is taken for a hung run"
            )
        return self

    @classmethod
    def load(cls, env_file: Path | None = None) -> BotSettings:
        """Settings from the environment, with `env_file` (a .env file) beneath it when given;
        SettingsError in plain words naming the variable (or the missing file); the sandbox
        hides that file (it holds secrets)."""
        if env_file is not None and not env_file.is_file():
            raise SettingsError(
                f"the env file {env_file} does not exist (--env-file): pass "
                "the .env that `cra-bot register` wrote"
            )
        try:
            settings = cls(_env_file=env_file)
        except ValidationError as exc:
            raise SettingsError(settings_problems(exc)) from None
        if env_file is not None:
            settings.sandbox_hide = [*settings.sandbox_hide, str(env_file)]
        return settings

    def sandbox_limits(self) -> SandboxLimits:
        """The resource bounds of every sandboxed command."""
        return SandboxLimits(
            cpu_seconds=self.sandbox_cpu_seconds,
            memory_mb=self.sandbox_memory_mb,
            processes=self.sandbox_processes,
            file_size_mb=self.sandbox_file_size_mb,
            tmp_mb=self.sandbox_tmp_mb,
        )

    def sandbox_hidden(self, home: Path | None) -> tuple[Path, ...]:
        """What the sandbox hides: data dir, private key, database file, the extra paths."""
        data = [self.data_dir, *([self.private_key_path] if self.private_key_path else [])]
        if self.database_url.startswith("sqlite:///"):
            data.append(Path(self.database_url.removeprefix("sqlite:///")))
        return hidden_paths(data=data, home=home, extra=self.sandbox_hide)

    @classmethod
    def for_actions(cls, env: ActionsEnvironment) -> BotSettings:
        """Settings of `cra-bot action`: the job's token and URLs, no webhook, a local store."""
        data_dir = Path(env.temp_dir or "~/.cache/cra-action").expanduser() / "cra"
        return cls(
            token=SecretStr(env.token),
            github_api_url=env.api_url,
            github_url=env.server_url,
            insecure_dev=True,
            data_dir=data_dir,
            database_url=f"sqlite:///{data_dir}/cra.db",
            comment_interval=5.0,
        )

    def require_webhook_secret(self) -> str | None:
        """The webhook secret; None only in insecure_dev mode; SettingsError when missing."""
        secret = self.webhook_secret.get_secret_value() if self.webhook_secret else ""
        if secret:
            return secret
        if self.insecure_dev:
            return None
        raise SettingsError(
            "no webhook secret: set CRA_WEBHOOK_SECRET (or CRA_INSECURE_DEV=1 for local testing)"
        )

    def endpoints(self) -> dict[ModelRole, ModelEndpoint]:
        """The server of each model role."""
        return {"reasoning": self.reasoning, "coding": self.coding, "classifier": self.classifier}

    def model_config_for(self, role: str) -> ModelConfig:
        """The server's model for a role: endpoint, name and window from here, the rest defaults;
        ValueError for an unknown role."""
        known = check_role(role)
        return self.endpoints()[known].as_model_config(known)

    def api_key_for(self, role: str) -> str | None:
        """The API key of a role's server, or None; ValueError for an unknown role."""
        return self.endpoints()[check_role(role)].key()

    def allowed_model_names(self) -> list[str]:
        """What a repository's config may choose: the three server models, then allowed_models."""
        names = [endpoint.model for endpoint in self.endpoints().values()] + self.allowed_models
        return list(dict.fromkeys(names))

    def value_at(self, path: Sequence[str]) -> Any:
        """The value a variable sets, by its path: ("coding", "api_key") → coding.api_key."""
        value: Any = self
        for part in path:
            value = getattr(value, part)
        return value


def variable(loc: Sequence[int | str]) -> str:
    """The environment variable of a settings location: workers → CRA_WORKERS, (coding,
    base_url) → CRA_CODING_BASE_URL."""
    if not loc:
        return "the settings"
    parts = loc[:2] if loc[0] in ROLES else loc[:1]
    return "CRA_" + "_".join(str(part) for part in parts).upper()


def settings_problems(exc: ValidationError) -> str:
    """A settings validation error in plain words, one problem per line."""
    return "\n".join(plain_errors(exc.errors(), BotSettings, name=variable))


class ActionsEnvironment(BaseModel):
    """What GitHub Actions tells a job about itself (GITHUB_* variables)."""

    event_name: str
    event_path: str
    token: str
    api_url: str = "https://api.github.com"
    server_url: str = "https://github.com"
    repository: str
    run_id: str = ""
    temp_dir: str | None = None
