"""`cra-bot doctor`: the server's set-up checked line by line, each check one small function.

Besides the agent's checks (git, directories, variables, models), a server needs its webhook
secret, an App id and key that GitHub accepts (a signed JWT, the installations listed), a
database at the newest migration and a queue that answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import requests
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from github import Auth
from sqlalchemy import create_engine, make_url, pool
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

from agent.console import shown_url
from agent.doctor.checks import check_directory, check_git, check_sandbox
from agent.doctor.report import Check, Finding, Report, fail, ok, run_checks, warn
from agent.runlog.migrate import migrations_location
from agent.sandbox.base import Sandbox
from bot.cli.startup import queue_problem, server_model_findings
from bot.environment import unknown_settings
from bot.errors import GitHubError, SettingsError
from bot.github.app_key import load_private_key
from bot.github.calls import Retrier, bare_client
from bot.github.tokens import AppTokens
from bot.sandboxes import build_bot_sandbox
from bot.settings import BotSettings

MIGRATE = "run `cra-bot migrate` (serve and worker also migrate when they start)"


def server_report(
    settings: BotSettings | None,
    environ: Mapping[str, str],
    env_file: Path | None,
    settings_error: str | None = None,
) -> Report:
    """Every check of a server; with settings that did not load, only what needs none."""
    checks: list[tuple[str, Check]] = [
        ("git", check_git),
        ("variables", lambda: check_unknown(environ, env_file)),
    ]
    if settings is None:
        checks.append(
            (
                "settings",
                lambda: [
                    fail(
                        "settings",
                        settings_error or "not loaded",
                        "fix the variable named, then run again",
                    )
                ],
            )
        )
        return run_checks("cra-bot", checks)
    checks += [
        ("data dir", lambda: check_directory("data dir", settings.data_dir, "CRA_DATA_DIR")),
        ("sandbox", lambda: check_bot_sandbox(settings, environ)),
        ("webhook secret", lambda: check_webhook_secret(settings)),
        ("GitHub App", lambda: check_github_app(settings)),
        ("database", lambda: check_database(settings.database_url)),
        ("queue", lambda: check_queue(settings)),
        ("models", lambda: server_model_findings(settings)),
    ]
    return run_checks("cra-bot", checks)


def check_unknown(environ: Mapping[str, str], env_file: Path | None) -> Iterable[Finding]:
    """CRA_ variables (in the environment or the .env file) that no setting reads."""
    unknown = unknown_settings(environ, env_file)
    for name, nearest in unknown:
        hint = f"; did you mean {nearest}?" if nearest else ""
        line = f"cra-bot reads no setting {name}{hint}"
        yield (
            fail("variables", line, f"rename it {nearest}")
            if nearest
            else warn(
                "variables", line, "remove it, or see the variables table in docs/configuration.md"
            )
        )
    if not unknown:
        yield ok("variables", "every CRA_ variable is a setting cra-bot reads")


def check_bot_sandbox(settings: BotSettings, environ: Mapping[str, str]) -> Iterable[Finding]:
    """The sandbox the workers would use, proved by the start-up self-check's probe."""

    def build() -> Sandbox:
        return build_bot_sandbox(settings, environ)

    try:
        yield from check_sandbox(build, settings.data_dir / "work", "CRA_SANDBOX")
    except SettingsError as exc:  # bwrap named and missing: fail closed, as serve would
        yield fail("sandbox", str(exc))


def check_webhook_secret(settings: BotSettings) -> Iterable[Finding]:
    """A webhook secret, or insecure_dev said out loud."""
    try:
        secret = settings.require_webhook_secret()
    except SettingsError as exc:
        yield fail("webhook secret", str(exc), "use the .env that `cra-bot register` wrote")
        return
    if secret is None:
        yield warn(
            "webhook secret",
            "none: CRA_INSECURE_DEV accepts unsigned deliveries",
            "set CRA_WEBHOOK_SECRET before the server faces the internet",
        )
    else:
        yield ok("webhook secret", "set (CRA_WEBHOOK_SECRET)")


def check_github_app(settings: BotSettings) -> Iterable[Finding]:
    """The App id and key: a JWT GitHub accepts, and the installations it lists."""
    if settings.token is not None:
        yield ok("GitHub App", "a ready token (CRA_TOKEN, Actions mode); no App to check")
        return
    if settings.app_id is None:
        yield fail(
            "GitHub App",
            "CRA_APP_ID is not set",
            "run `cra-bot register`, or copy the App id from its settings page",
        )
        return
    try:
        key = load_private_key(settings)
    except SettingsError as exc:
        yield fail("GitHub App", str(exc))
        return
    tokens = AppTokens(settings.app_id, key, settings.github_api_url)
    try:
        app = _as_app(tokens, "GET /app", "/app")
        installations = _as_app(tokens, "GET /app/installations", "/app/installations")
    except GitHubError as exc:
        yield fail(
            "GitHub App",
            f"GitHub refused the App's JWT: {exc}",
            "check that CRA_APP_ID is the App's id and the key is one of its keys "
            f"(API: {settings.github_api_url}, CRA_GITHUB_API_URL)",
        )
        return
    yield ok("GitHub App", f"{app.get('slug', '?')} (id {settings.app_id}) accepted the JWT")
    yield _installations(app, installations)


def _as_app(tokens: AppTokens, action: str, path: str) -> Any:
    """One GET authenticated by the App's JWT, not retried (the doctor reports, it waits not)."""

    def call() -> Any:
        with bare_client(tokens.api_url, Auth.AppAuthToken(tokens.app_jwt())) as client:
            return client.requester.requestJsonAndCheck("GET", path)[1]

    try:
        return Retrier(max_retries=0).run(action, call)
    except requests.RequestException as exc:
        raise GitHubError(f"{action}: {type(exc).__name__}") from None


def _installations(app: Any, installations: Any) -> Finding:
    accounts = [
        str((i.get("account") or {}).get("login", i.get("id")))
        for i in installations
        if isinstance(i, dict)
    ]
    if not accounts:
        slug = app.get("slug", "YOUR-APP") if isinstance(app, dict) else "YOUR-APP"
        return fail(
            "installations",
            "the App is installed on no account",
            f"install it: https://github.com/apps/{slug}/installations/new",
        )
    return ok("installations", f"{len(accounts)}: {', '.join(sorted(accounts))}")


def check_database(url: str) -> Iterable[Finding]:
    """The database answers and its schema is at the newest migration (nothing is changed)."""
    shown = shown_url(url)
    try:
        parsed = make_url(url)
    except ArgumentError:
        yield fail("database", f"{shown} is not a database URL", "fix CRA_DATABASE_URL")
        return
    path = parsed.database if parsed.get_backend_name() == "sqlite" else None
    if path and path != ":memory:" and not Path(path).expanduser().exists():
        yield warn("database", f"{shown} does not exist yet", MIGRATE)
        return
    try:
        current = _current_revisions(url)
    except NoSuchModuleError:
        yield fail(
            "database",
            f"no driver for {parsed.drivername}",
            "pip install 'clean-room-agent[postgres]'",
        )
        return
    except (SQLAlchemyError, ImportError, OSError) as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        yield fail("database", f"cannot connect to {shown}: {reason}", "fix CRA_DATABASE_URL")
        return
    yield _migration_finding(shown, current, set(_scripts().get_heads()))


def _current_revisions(url: str) -> set[str]:
    engine = create_engine(url, poolclass=pool.NullPool)
    try:
        with engine.connect() as conn:
            return set(MigrationContext.configure(conn).get_current_heads())
    finally:
        engine.dispose()


def _migration_finding(shown: str, current: set[str], heads: set[str]) -> Finding:
    if current == heads:
        return ok("database", f"{shown} at the newest migration ({', '.join(sorted(heads))})")
    known = {rev.revision for rev in _scripts().walk_revisions()}
    if current - known:
        return fail(
            "database",
            f"{shown} is at {', '.join(sorted(current))}, a migration this cra does not know",
            "upgrade cra to the version that migrated it",
        )
    at = ", ".join(sorted(current)) or "no migration (empty)"
    return fail(
        "database",
        f"{shown} is not migrated: at {at}, newest is {', '.join(sorted(heads))}",
        MIGRATE,
    )


def _scripts() -> ScriptDirectory:
    config = Config()
    config.set_main_option("script_location", migrations_location())
    return ScriptDirectory.from_config(config)


def check_queue(settings: BotSettings) -> Iterable[Finding]:
    """The thread queue, or Redis answering for RQ."""
    problem = queue_problem(settings)
    if problem is not None:
        yield fail("queue", problem)
    elif settings.queue == "rq":
        yield ok("queue", f"RQ on {shown_url(settings.redis_url or '')}")
    else:
        yield ok("queue", f"{settings.workers} worker thread(s) in the server process")
