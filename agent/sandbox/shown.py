"""What of a command's output is shown to people: its last lines, bounded, secrets masked.

A repository command runs with a scrubbed environment (agent.sandbox.commands), yet what it
prints may still hold a credential: one written into a URL (`https://user:token@host`; never
`ssh://git@host`, which names no secret), a token of a well-known shape, or the value of one of
the caller's secret variables read from a file. Each is masked before the text leaves the
sandbox's record for a message, a journal or a page.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from agent.sandbox.commands import is_secret_name

TAIL_LINES = 20
TAIL_CHARS = 2000
LINE_CHARS = 300
MASK = "[redacted]"
MIN_SECRET_CHARS = 8  # shorter values would mask ordinary words
_HTTP_USER = re.compile(r"(?i)(https?://)[^\s/@]+@")  # a token given as the user
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*):[^\s/@]+@")
_TOKENS = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|npm_[A-Za-z0-9]{30,}"
    r"|xox[abpr]-[A-Za-z0-9-]{10,}|sk-[A-Za-z0-9_-]{20,})"
)
_ASSIGNED = re.compile(
    r"(?i)\b(bearer\s+|(?:_?auth_?token|token|password|secret)\s*[:=]\s*)([^\s\"',;]{8,})"
)


def secret_values(environ: Mapping[str, str]) -> list[str]:
    """The values of `environ`'s secret-looking variables worth masking, longest first."""
    found = {
        value.strip()
        for name, value in environ.items()
        if is_secret_name(name) and len(value.strip()) >= MIN_SECRET_CHARS
    }
    return sorted(found, key=len, reverse=True)


def masked(text: str, secrets: Sequence[str]) -> str:
    """`text` with the given secret values, URL credentials and token-shaped words masked."""
    for secret in secrets:
        text = text.replace(secret, MASK)
    text = _HTTP_USER.sub(rf"\1{MASK}@", _URL_PASSWORD.sub(rf"\1:{MASK}@", text))
    text = _TOKENS.sub(MASK, text)
    return _ASSIGNED.sub(rf"\1{MASK}", text)


def output_tail(
    text: str,
    secrets: Sequence[str],
    *,
    lines: int = TAIL_LINES,
    chars: int = TAIL_CHARS,
) -> str:
    """The last non-blank lines of `text` (at most `lines`, `chars` in all, each cut to
    LINE_CHARS), masked; a carriage return starts a line again, as on a terminal."""
    text = masked(text, secrets)
    rows = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    kept: list[str] = []
    used = 0
    for row in reversed(rows):
        row = row.rstrip()
        if not row.strip():
            continue
        row = row if len(row) <= LINE_CHARS else row[: LINE_CHARS - 1] + "…"
        if len(kept) == lines or used + len(row) + 1 > chars:
            break
        kept.append(row)
        used += len(row) + 1
    return "\n".join(reversed(kept))
