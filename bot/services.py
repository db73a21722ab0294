"""build_services(settings): the one place the bot's real clients are constructed."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from agent.config.files import ModelConfig, SolveConfig
from agent.llm.client import ChatModel, HTTPChatModel
from agent.llm.router import ModelRouter
from agent.run.sources import ContextFactory
from agent.runlog.store import RunLog
from agent.sandbox.base import Sandbox
from agent.sandbox.envcache import EnvCache
from bot.environment import repository_environment
from bot.errors import SettingsError
from bot.github.api import GitHubAPI
from bot.github.app_key import load_private_key
from bot.github.tokens import AppTokens, Generations, StaticToken, TokenProvider
from bot.mirrors import MirrorCache
from bot.model_endpoints import ROLES
from bot.queue.queues import RunQueue, build_queue, check_health
from bot.queue.run_progress import Progress, ProgressChatModel
from bot.sandboxes import build_bot_sandbox, build_env_cache
from bot.settings import BotSettings
from bot.store.installations import Installations
from bot.store.runs import BotStore

Execute = Callable[[int, "Services"], object]  # e.g. bot.run.runner.execute_run, from the caller


@dataclass
class Services:
    """Everything a worker needs, built once per process."""

    settings: BotSettings
    store: BotStore
    runlog: RunLog
    github: GitHubAPI
    mirrors: MirrorCache
    environ: Mapping[str, str]
    sandbox: Sandbox  # where every repository command runs
    env_cache: EnvCache | None = None
    queue: RunQueue = field(default_factory=lambda: NoQueue())
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep  # the waits between a failed push's tries
    context_factory: ContextFactory | None = None  # None: the repository index (retrieval)
    chat_factory: Callable[[ModelConfig, str | None], ChatModel] = field(
        default=lambda config, key: HTTPChatModel(config, api_key=key)
    )

    def router(self, config: SolveConfig, *, progress: Progress | None = None) -> ModelRouter:
        """Model clients for a run's effective config, keys from the server's settings; each
        call's start and end told to `progress` when given (bot.queue.run_progress)."""
        keys = {id(getattr(config.models, role)): self.settings.api_key_for(role) for role in ROLES}

        def build(model: ModelConfig) -> ChatModel:
            chat = self.chat_factory(model, keys.get(id(model)))
            return chat if progress is None else ProgressChatModel(chat, progress)

        return ModelRouter(config.models, factory=build)

    def health(self) -> dict[str, str]:
        """Database and queue reachability, for /healthz."""
        return check_health(self.store, self.queue)

    def close(self) -> None:
        """Stop the queue, release the databases."""
        self.queue.close()
        self.store.close()
        self.runlog.close()


class NoQueue:
    """The queue of a process that only executes runs (an RQ worker, `cra-bot run`)."""

    def enqueue(self, run_id: int) -> None:
        """Refuse: this process does not queue runs."""
        raise SettingsError(f"run {run_id}: this process has no queue")

    def healthy(self) -> bool:
        """Nothing to be unhealthy."""
        return True

    def holds(self, run_id: int) -> bool:
        """Nothing is held here."""
        return False

    def close(self) -> None:
        """Nothing to close."""


def app_mode(settings: BotSettings) -> bool:
    """Whether the server is a GitHub App (an App id and no CRA_TOKEN): then each run works with
    the token of the installation its delivery names. With CRA_TOKEN, deliveries come from
    repository webhooks (or Actions), which name no installation."""
    return settings.token is None and settings.app_id is not None


def token_provider(settings: BotSettings, generations: Generations | None = None) -> TokenProvider:
    """Installation tokens of the App (dropped when `generations` says their installation
    changed), or the static token of Actions mode."""
    if settings.token is not None:
        return StaticToken(settings.token.get_secret_value())
    if settings.app_id is None:
        raise SettingsError("set CRA_APP_ID and CRA_PRIVATE_KEY (or CRA_TOKEN in Actions mode)")
    return AppTokens(
        settings.app_id,
        load_private_key(settings),
        settings.github_api_url,
        generations=generations,
    )


def build_services(
    settings: BotSettings,
    *,
    execute: Execute | None = None,
    environ: Mapping[str, str] | None = None,
) -> Services:
    """Real clients from settings; given `execute`, a queue whose thread workers call it.

    Without `execute` the process only executes runs itself (an RQ worker, `cra-bot run`) and
    its queue refuses runs.
    """
    env = dict(repository_environment(settings.test_env) if environ is None else environ)
    sandbox = build_bot_sandbox(settings, env)  # before anything opens: fail closed
    runlog = RunLog.open(settings.database_url)
    store = BotStore.open(settings.database_url)
    tokens = token_provider(settings, Installations(store.engine, clock=store.now))
    github = GitHubAPI(settings.github_api_url, settings.github_url, tokens)
    services = Services(
        settings=settings,
        store=store,
        runlog=runlog,
        github=github,
        mirrors=MirrorCache(settings.data_dir / "mirrors"),
        environ=env,
        sandbox=sandbox,
        env_cache=build_env_cache(settings),
    )
    if execute is not None:
        services.queue = build_queue(
            settings, lambda run_id: execute(run_id, services), store=store
        )
    return services
