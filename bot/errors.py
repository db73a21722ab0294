"""The BotError tree: failures of the GitHub App, carrying their data."""

from __future__ import annotations


class BotError(Exception):
    """Base of every error the bot raises on purpose."""


class SettingsError(BotError):
    """The bot's settings are missing or wrong."""


class MalformedDelivery(BotError):
    """A webhook delivery that cannot be parsed (→ 400)."""


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
