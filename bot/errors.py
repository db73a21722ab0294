"""The BotError tree: failures of the GitHub App, carrying their data."""

from __future__ import annotations


class BotError(Exception):
    """Base of every error the bot raises on purpose."""


class SettingsError(BotError):
    """The bot's settings are missing or wrong."""


class MalformedDelivery(BotError):
    """A webhook delivery that cannot be parsed (→ 400), or holds what no GitHub delivery does
    (→ 422); `outcome` is how the webhook counts it."""

    outcome = "malformed"


class NoInstallation(MalformedDelivery):
    """A delivery to a GitHub App asking for a run without naming an installation: the App
    works with the installation's token, so it can never be done (→ 422, nothing stored)."""

    outcome = "no_installation"

    def __init__(self) -> None:
        super().__init__(
            "this delivery asks for a run but names no App installation, and a GitHub App acts "
            "only for its installations (is a repository or organization webhook sending to "
            "the App's URL? Such webhooks need CRA_TOKEN instead of the App)"
        )


class GitHubError(BotError):
    """A GitHub API call failed; carries the status and any Retry-After."""

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class NotFound(GitHubError):
    """GitHub answered 404."""


class PermissionDenied(GitHubError):
    """GitHub answered 401/403 (not a rate limit)."""
