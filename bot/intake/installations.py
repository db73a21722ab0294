"""What an installation event changes: the installation whose cached tokens go stale, and the
repositories whose cached access answers do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bot.errors import MalformedDelivery
from bot.intake.triggers import MAX_ID, REPOSITORY
from bot.intake.webhooks import Event, dig

Status = Literal["active", "suspended", "deleted"]
# The `installation` actions after which a token minted before is wrong: revoked (deleted,
# suspend), or carrying what the installation allowed before (unsuspend, new permissions).
STATUS_AFTER: dict[str, Status] = {
    "deleted": "deleted",
    "suspend": "suspended",
    "unsuspend": "active",
    "new_permissions_accepted": "active",
}


@dataclass(frozen=True)
class InstallationChange:
    """An installation's new status (None: its tokens stand), the account it is on (whose
    repositories' access answers go) and the repositories it no longer covers."""

    installation_id: int
    status: Status | None
    account: str | None = None
    repositories: tuple[str, ...] = ()


def installation_change(event: Event) -> InstallationChange | None:
    """What a delivery changes about an App installation: an `installation` event that removes,
    suspends or changes it, or repositories removed from it; None for anything else.
    MalformedDelivery for an installation id out of range (no GitHub delivery has one)."""
    number = event.installation_id
    if number is None or event.action is None:
        return None
    if event.name == "installation" and event.action in STATUS_AFTER:
        account = dig(event.payload, "installation", "account", "login")
        change = InstallationChange(
            number, STATUS_AFTER[event.action], account if isinstance(account, str) else None
        )
    elif event.name == "installation_repositories" and event.action == "removed":
        change = InstallationChange(number, None, repositories=_removed(event))
    else:
        return None
    if not 0 < number <= MAX_ID:
        raise MalformedDelivery(f"installation.id out of range: {number}")
    return change


def _removed(event: Event) -> tuple[str, ...]:
    """The owner/name of each repository an installation_repositories event removes."""
    removed = event.payload.get("repositories_removed")
    names = [dig(item, "full_name") for item in removed] if isinstance(removed, list) else []
    return tuple(name for name in names if isinstance(name, str) and REPOSITORY.fullmatch(name))
