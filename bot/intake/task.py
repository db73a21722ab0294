"""The task text of a run, built from untrusted issue text that stays data (pure)."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from typing import Protocol

HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)  # an unclosed one hides the rest
HIDDEN_CATEGORIES = {"Cc", "Cf", "Co", "Cs", "Cn"}  # controls, format (zero-width, bidi), private
HIDDEN_CHARS = {"\u034f", "\u115f", "\u1160", "\u3164", "\uffa0"}  # joiner, Hangul fillers
VARIATION_SELECTORS = ((0xFE00, 0xFE0F), (0xE0100, 0xE01EF), (0x180B, 0x180F))
_MAX_SECTION = 8000


def visible_text(text: str) -> str:
    """Text without HTML comments and invisible characters (zero-width, bidi, controls).

    Hidden text is how prompt injections hide from the people reading an issue: what the model
    sees must be what a person sees.
    """
    return HTML_COMMENT.sub("", shown_characters(text))


def shown_characters(text: str) -> str:
    """Text without invisible characters, its line ends made \n (HTML comments kept)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\u2028", "\n").replace("\u2029", "\n")
    return "".join(ch for ch in text if _visible(ch))


def _visible(ch: str) -> bool:
    """Whether a character shows (newline and tab count as showing)."""
    if ch in "\n\t":
        return True
    if ch in HIDDEN_CHARS or unicodedata.category(ch) in HIDDEN_CATEGORIES:
        return False
    code = ord(ch)
    return not any(low <= code <= high for low, high in VARIATION_SELECTORS)


def literal(text: str) -> str:
    """`text` as a JSON string that names it exactly and that visible_text leaves whole: its
    hidden characters, line breaks and every "<" (which could open an HTML comment) written
    as escapes."""
    return "".join(
        ch if _visible(ch) and ch not in "<\u2028\u2029" else _escape(ch)
        for ch in json.dumps(text, ensure_ascii=False)
    )


def _escape(ch: str) -> str:
    """A character as JSON's \\u escape (a surrogate pair beyond the BMP)."""
    return "\\u003c" if ch == "<" else json.dumps(ch)[1:-1]


def clean_text(text: str | None, *, limit: int = _MAX_SECTION) -> str:
    """Visible text, stripped and capped at `limit` characters (marked when cut)."""
    kept = visible_text(text or "").strip()
    return kept if len(kept) <= limit else kept[:limit] + "\n[… cut …]"


class IssueText(Protocol):
    """What the task quotes of an issue or pull request (bot.github.answers.IssueInfo is one)."""

    @property
    def number(self) -> int: ...

    @property
    def title(self) -> str: ...

    @property
    def body(self) -> str | None: ...

    @property
    def is_pull_request(self) -> bool: ...


def build_task(
    issue: IssueText, *, instructions: str = "", review_comments: Sequence[str] = ()
) -> str:
    """The task for the agent: the issue (or PR) title and body, the /cra instructions, and a
    PR's review comments — each cleaned and clearly marked as quoted text."""
    kind = "pull request" if issue.is_pull_request else "issue"
    parts = [f"Resolve {kind} #{issue.number}: {clean_text(issue.title, limit=300)}"]
    if body_text := clean_text(issue.body):
        parts.append(f"The {kind} says:\n{body_text}")
    if wanted := clean_text(instructions):
        parts.append(f"Extra instructions from the requester:\n{wanted}")
    comments = [c for c in (clean_text(r, limit=2000) for r in review_comments) if c]
    if comments:
        parts.append("Review comments:\n" + "\n".join(f"- {c}" for c in comments[-20:]))
    return "\n\n".join(parts)
