"""Routing a webhook Event to the Trigger it asks for (label, /cra command, dispatch), or None."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard

from agent.models import Record
from bot.errors import MalformedDelivery, NoInstallation
from bot.intake.command_line import find_command
from bot.intake.task import literal, visible_text
from bot.intake.webhooks import Event, dig
from bot.render.replies import refusal_text

Command = Literal["solve", "plan", "cancel", "help", "refuse"]
Source = Literal["label", "comment", "dispatch", "cli"]
MAX_INSTRUCTIONS = 4000
MAX_PATH = 300  # characters of a review comment's path named with its instructions
DIGITS = re.compile(r"[0-9]{1,9}")
WORD = re.compile(r"[A-Za-z0-9_-]{1,30}")
# GitHub's names: an owner of at most 39 characters, a repository of at most 100, of letters,
# digits, '-', '_' and '.'; a login may end in "[bot]".
REPOSITORY = re.compile(r"(?!\.{1,2}/)[A-Za-z0-9_.-]{1,39}/(?!\.{1,2}$)[A-Za-z0-9_.-]{1,100}")
LOGIN = re.compile(r"[A-Za-z0-9_.-]{1,39}(\[bot\])?")
# What GitHub says of a comment's author who is neither the owner, nor a member of the
# owning organisation, nor a collaborator: such a user has no write access, and their
# solve or plan is refused at once, so that it never holds the issue's one active run while
# it waits for the worker's permission check (a maintainer's request meanwhile got "busy").
OUTSIDERS = frozenset({"NONE", "FIRST_TIMER", "FIRST_TIME_CONTRIBUTOR", "CONTRIBUTOR", "MANNEQUIN"})
MAX_ID = 2**63 - 1  # the databases' BIGINT
MAX_NUMBER = 2**31 - 1  # issue and pull request numbers


class Trigger(Record):
    """What a delivery asks cra to do, and for whom."""

    command: Command
    repository: str
    issue_number: int
    is_pull_request: bool = False
    actor: str
    instructions: str = ""
    source: Source
    comment_id: int | None = None
    installation_id: int | None = None
    reply: str | None = None
    delivery_id: str


@dataclass(frozen=True)
class RouteOptions:
    """The server settings routing depends on."""

    label: str
    bot_login: str | None = None


Handler = Callable[[Event, RouteOptions], Trigger | None]


class Router:
    """Handlers keyed by (event, action); a handler registered without an action sees them all."""

    def __init__(self) -> None:
        self._handlers: dict[tuple[str, str | None], list[Handler]] = {}

    def register(self, event: str, action: str | None = None) -> Callable[[Handler], Handler]:
        """A decorator adding a handler for the event (and action)."""

        def add(handler: Handler) -> Handler:
            self._handlers.setdefault((event, action), []).append(handler)
            return handler

        return add

    def dispatch(self, event: Event, options: RouteOptions) -> Trigger | None:
        """The first Trigger a matching handler returns, or None."""
        keys = (
            [(event.name, event.action), (event.name, None)]
            if event.action
            else [(event.name, None)]
        )
        for key in keys:
            for handler in self._handlers.get(key, []):
                trigger = handler(event, options)
                if trigger is not None:
                    return trigger
        return None


router = Router()


def route(
    event: Event, *, label: str, bot_login: str | None = None, app: bool = False
) -> Trigger | None:
    """The Trigger a delivery asks for; None for bots, closed or locked issues and the rest.

    MalformedDelivery when a signed delivery asks for a run with values no GitHub delivery
    has (a repository that is not owner/name, ids out of range), and NoInstallation when it
    names no installation and the server is a GitHub `app` (a repository webhook's delivery,
    which an App can never act on): refused at the door, before a run exists, with the reason.
    """
    if event.repository is None or _from_bot(event, bot_login):
        return None
    trigger = router.dispatch(event, RouteOptions(label=label, bot_login=bot_login))
    if trigger is not None:
        installation = event.payload.get("installation")
        if trigger.installation_id is None and installation is not None:
            raise MalformedDelivery("installation.id is not an integer")
        if trigger.installation_id is None and app:
            raise NoInstallation
        check_trigger(trigger)
    return trigger


def check_trigger(trigger: Trigger) -> None:
    """MalformedDelivery naming the first field of a trigger that no real delivery carries."""
    if not REPOSITORY.fullmatch(trigger.repository):
        raise MalformedDelivery(
            f"repository.full_name is not owner/name: {trigger.repository[:120]!r}"
        )
    if not 0 < trigger.issue_number <= MAX_NUMBER:
        raise MalformedDelivery(f"issue number out of range: {trigger.issue_number}")
    for name, value in (
        ("installation.id", trigger.installation_id),
        ("comment.id", trigger.comment_id),
    ):
        if value is not None and not 0 < value <= MAX_ID:
            raise MalformedDelivery(f"{name} out of range: {value}")
    if not LOGIN.fullmatch(trigger.actor):
        raise MalformedDelivery(f"sender.login is not a GitHub login: {trigger.actor[:60]!r}")


# --- handlers --------------------------------------------------------------------------------


@router.register("issues", action="labeled")
def _on_labeled(event: Event, options: RouteOptions) -> Trigger | None:
    """The configured label added to an open issue → solve."""
    issue = _open_issue(event.payload)
    name = dig(event.payload, "label", "name")
    if issue is None or not isinstance(name, str):
        return None
    if name.casefold() != options.label.casefold():
        return None
    return _trigger(event, issue, command="solve", source="label")


@router.register("issue_comment", action="created")
def _on_comment(event: Event, options: RouteOptions) -> Trigger | None:
    """A `/cra …` line in a new comment on an open issue or pull request."""
    issue = _open_issue(event.payload)
    if issue is None:
        return None
    said = Said(comment_id=dig(event.payload, "comment", "id"))
    return _command(event, options, issue, said, is_pull_request="pull_request" in issue)


@router.register("pull_request_review_comment", action="created")
def _on_review_comment(event: Event, options: RouteOptions) -> Trigger | None:
    """A `/cra …` line in a new review comment (on a line of an open pull request's diff): as
    in the pull request's conversation, where cra answers; the instructions say which line
    the comment is on. (Its reaction goes on the pull request: a review comment's reactions
    are another API.)"""
    pull = _open_item(event.payload, "pull_request")
    if pull is None:
        return None
    said = Said(where=_review_location(event.payload))
    return _command(event, options, pull, said, is_pull_request=True)


def _review_location(payload: Mapping[str, Any]) -> str:
    """`(a review comment on "PATH", line N)`, "" without a path. The path is a literal that
    names the file exactly and that the task's cleaning leaves whole (it is GitHub's, not
    instructions: a '<!--' or a zero-width character in it is part of the name)."""
    path, line = dig(payload, "comment", "path"), dig(payload, "comment", "line")
    if not isinstance(path, str) or not path:
        return ""
    name = literal(path[:MAX_PATH]) + ("…" if len(path) > MAX_PATH else "")
    return f"(a review comment on {name}" + (f", line {line}" if _is_int(line) else "") + ")"


@router.register("pull_request_review", action="submitted")
def _on_review(event: Event, options: RouteOptions) -> Trigger | None:
    """A `/cra …` line in the body of a submitted review of an open pull request (its summary,
    whether it approves, comments or requests changes): as in the pull request's conversation.
    (A review has no reactions: cra's goes on the pull request.)"""
    pull = _open_item(event.payload, "pull_request")
    if pull is None:
        return None
    return _command(event, options, pull, Said(text="review"), is_pull_request=True)


@dataclass(frozen=True)
class Said:
    """Where a `/cra` line was said: the payload's `text` object (a comment, or a review), the
    comment's id (None: no comment to react to) and, for a review comment, its diff line."""

    text: str = "comment"
    comment_id: object = None
    where: str = ""


def _command(
    event: Event,
    options: RouteOptions,
    item: Mapping[str, Any],
    said: Said,
    *,
    is_pull_request: bool,
) -> Trigger | None:
    """The Trigger of the first `/cra` line of what was `said`, unless a bot wrote it;
    MalformedDelivery for a command whose comment id is not an integer."""
    text, comment_id, where = said.text, said.comment_id, said.where
    body = dig(event.payload, text, "body")
    if not isinstance(body, str) or dig(event.payload, text, "user", "type") == "Bot":
        return None
    found = find_command(body)
    if found is None:
        return None
    if comment_id is not None and not _is_int(comment_id):
        raise MalformedDelivery("comment.id is not an integer")
    word, rest = found
    command, instructions, reply = _interpret(word, rest, options.label)
    if command in ("solve", "plan") and dig(event.payload, text, "author_association") in OUTSIDERS:
        command, instructions = "refuse", ""
        reply = refusal_text("permission", user=event.sender_login or "")
    if where and command in ("solve", "plan"):  # the instructions are clean already
        instructions = f"{where} {instructions}".rstrip()
    return _trigger(
        event,
        item,
        command=command,
        source="comment",
        instructions=instructions,
        reply=reply,
        comment_id=comment_id,
        is_pull_request=is_pull_request,
    )


@router.register("workflow_dispatch")
def _on_dispatch(event: Event, options: RouteOptions) -> Trigger | None:
    """A workflow dispatch with an `issue_number` input (and optional `instructions`) → solve."""
    inputs = event.payload.get("inputs")
    if not isinstance(inputs, Mapping) or event.repository is None:
        return None
    number = _issue_number(inputs.get("issue_number"))
    if number is None:
        return None
    instructions = inputs.get("instructions")
    return Trigger(
        command="solve",
        repository=event.repository,
        issue_number=number,
        actor=event.sender_login or "",
        instructions=clean_instructions(instructions if isinstance(instructions, str) else ""),
        source="dispatch",
        installation_id=event.installation_id,
        delivery_id=event.delivery_id,
    )


# --- commands and untrusted text -------------------------------------------------------------


def clean_instructions(text: str) -> str:
    """Untrusted instructions as plain data: cleaned, stripped, at most MAX_INSTRUCTIONS chars."""
    return visible_text(text).strip()[:MAX_INSTRUCTIONS].strip()


def _interpret(word: str, rest: str, label: str) -> tuple[Command, str, str | None]:
    """(command, instructions, reply) for a command word; an unknown word gets the help."""
    if word in ("solve", "plan"):
        command: Command = "solve" if word == "solve" else "plan"
        return command, clean_instructions(rest), None
    if word == "cancel":
        return "cancel", "", None
    if word in ("", "help"):
        return "help", "", refusal_text("help", label=label)
    unknown = f"/cra {word}" if WORD.fullmatch(word) else "/cra …"
    return "help", "", refusal_text("unknown_command", command=unknown, label=label)


# --- payload helpers -------------------------------------------------------------------------


def _trigger(
    event: Event, issue: Mapping[str, Any], *, is_pull_request: bool | None = None, **fields: Any
) -> Trigger:
    """A Trigger on the payload's issue (or pull request) for the delivery's sender."""
    return Trigger(
        repository=event.repository or "",
        issue_number=issue["number"],
        is_pull_request=is_pull_request
        if is_pull_request is not None
        else ("pull_request" in issue),
        actor=event.sender_login or "",
        installation_id=event.installation_id,
        delivery_id=event.delivery_id,
        **fields,
    )


def _open_issue(payload: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The payload's issue when it is open and unlocked; else None. MalformedDelivery when it
    is not an object or its number not a positive integer (no GitHub delivery has those)."""
    return _open_item(payload, "issue")


def _open_item(payload: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    """The payload's issue or pull request (`key`), as _open_issue says."""
    item = payload.get(key)
    if not isinstance(item, Mapping):
        raise MalformedDelivery(f"{key} is not an object")
    number = item.get("number")
    if not _is_int(number):
        raise MalformedDelivery(f"{key}.number is not an integer")
    if not 0 < number <= MAX_NUMBER:
        raise MalformedDelivery(f"{key} number out of range: {number}")
    if item.get("state") != "open" or item.get("locked") is True:
        return None
    return item


def _is_int(value: object) -> TypeGuard[int]:
    """Whether a JSON value is an integer (true and false are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _from_bot(event: Event, bot_login: str | None) -> bool:
    """Whether the sender is a bot (the app itself included)."""
    if event.sender_type == "Bot":
        return True
    login = event.sender_login or ""
    return bool(bot_login) and login.casefold() == (bot_login or "").casefold()


def _issue_number(value: Any) -> int | None:
    """A positive issue number from a dispatch input ("12", "#12" or 12), else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if 0 < value < 2**31 else None
    if not isinstance(value, str):
        return None
    digits = value.strip().removeprefix("#")
    return int(digits) if DIGITS.fullmatch(digits) and int(digits) > 0 else None
