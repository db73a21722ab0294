"""Sans-I/O webhook handling: the signature check and the parsing of one delivery into an Event."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import orjson

from bot.errors import MalformedDelivery

SIGNATURE_PREFIX = "sha256="
MAX_DELIVERY_ID = 200
# What an event name or an action can be: GitHub's are words like "issue_comment", "labeled".
WORD = re.compile(r"[A-Za-z0-9_.-]{1,100}")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # no database text column holds NUL


@dataclass(frozen=True, slots=True)
class Event:
    """One webhook delivery: its event name, action, id and payload, with the common keys.

    A plain dataclass: every field comes typed from event_from_payload, and a pydantic model's
    construction cost more per delivery than routing it.
    """

    name: str
    action: str | None
    delivery_id: str
    payload: dict[str, Any]
    installation_id: int | None = None
    repository: str | None = None
    sender_login: str | None = None
    sender_type: str | None = None


def sign(body: bytes, secret: str) -> str:
    """The X-Hub-Signature-256 value GitHub sends for `body`."""
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return SIGNATURE_PREFIX + digest


def verify_signature(body: bytes, header: str | None, secret: str) -> bool:
    """Whether `header` is the HMAC-SHA256 of the raw body under `secret` (constant time)."""
    if not secret or not header or not header.isascii():
        return False
    return hmac.compare_digest(sign(body, secret), header.strip().lower())


def parse_delivery(headers: Mapping[str, str], body: bytes) -> Event:
    """An Event from the delivery's headers (any case) and raw body; MalformedDelivery if not."""
    lowered = {key.lower(): value for key, value in headers.items()}
    return delivery_event(
        lowered.get("x-github-event"),
        lowered.get("x-github-delivery"),
        lowered.get("content-type", ""),
        body,
    )


def delivery_event(
    event: str | None, delivery: str | None, content_type: str, body: bytes
) -> Event:
    """An Event from the values of X-GitHub-Event, X-GitHub-Delivery and Content-Type and the
    raw body; MalformedDelivery if not."""
    name = _required_header(event, "x-github-event")
    delivery_id = _required_header(delivery, "x-github-delivery")
    if not WORD.fullmatch(name):
        raise MalformedDelivery(f"X-GitHub-Event is not an event name: {name[:60]!r}")
    if len(delivery_id) > MAX_DELIVERY_ID:
        raise MalformedDelivery("X-GitHub-Delivery is too long")
    if CONTROL.search(delivery_id):
        raise MalformedDelivery("X-GitHub-Delivery holds control characters")
    return event_from_payload(name, delivery_id, _payload(body, content_type))


def event_from_payload(name: str, delivery_id: str, payload: dict[str, Any]) -> Event:
    """An Event from an event name, an id and its payload (a delivery, or an Actions event file).

    Built without validation: every field comes typed from here (the payload from json), and
    validating a payload of a few hundred keys per delivery bought nothing. The action, kept
    with the delivery, is checked: MalformedDelivery when it is a string but no action's word.
    """
    action = payload.get("action")
    if isinstance(action, str) and not WORD.fullmatch(action):
        raise MalformedDelivery(f"action is not a GitHub action: {action[:60]!r}")
    return Event(
        name=name,
        action=action if isinstance(action, str) else None,
        delivery_id=delivery_id,
        payload=payload,
        installation_id=_int(dig(payload, "installation", "id")),
        repository=_str(dig(payload, "repository", "full_name")),
        sender_login=_str(dig(payload, "sender", "login")),
        sender_type=_str(dig(payload, "sender", "type")),
    )


def _required_header(value: str | None, name: str) -> str:
    """A header's stripped value; MalformedDelivery when it is missing or empty."""
    stripped = (value or "").strip()
    if not stripped:
        raise MalformedDelivery(f"missing header {name}")
    return stripped


def _payload(body: bytes, content_type: str) -> dict[str, Any]:
    """The JSON object of the body (or of its `payload` form field); MalformedDelivery if not."""
    try:
        if content_type.split(";")[0].strip().lower() == "application/x-www-form-urlencoded":
            payload = json.loads(parse_qs(body.decode("utf-8")).get("payload", [""])[0])
        else:
            payload = _loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise MalformedDelivery(f"body is not JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise MalformedDelivery("body is not a JSON object")
    return payload


# every digit as "0", every other byte as " ": a number of 19 digits or more reads as this run
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_LONG_NUMBER = b"0" * 19  # orjson reads integers in [-2**63, 2**64); -2**63 has 19 digits


def _loads(body: bytes) -> Any:
    """The JSON value of a UTF-8 body, equal to the standard parser's: orjson's (a third of its
    time, the largest part of reading a delivery) unless the body holds a run of 19 digits
    (orjson reads an integer below -2**63 or from 2**64 as a float) or orjson refuses it
    (NaN, Infinity, lone surrogates, which json reads); then json decides, as before."""
    if _LONG_NUMBER not in body.translate(_DIGITS_AS_ZERO):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
    return json.loads(body.decode("utf-8"))


def dig(payload: Mapping[str, Any], *keys: str) -> Any:
    """The value at a path of object keys, or None where the path breaks."""
    value: Any = payload
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _int(value: Any) -> int | None:
    """An integer (never a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    """A string, else None."""
    return value if isinstance(value, str) else None
