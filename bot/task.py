"""The task text of a run, built from untrusted issue text that stays data (pure)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

_HTML_COMMENT = re.compile(r"<!--.*?(-->|$)", re.S)
_MAX_SECTION = 8000


def clean_text(text: str | None, *, limit: int = _MAX_SECTION) -> str:
    """Issue or comment text without HTML comments and invisible characters, capped.

    Hidden text is how prompt injections hide from the people reading an issue: what the model
    sees must be what a person sees.
    """
    visible = _HTML_COMMENT.sub("", text or "")
    kept = "".join(ch for ch in visible if _is_visible(ch))
    kept = kept.replace("\r\n", "\n").strip()
    return kept if len(kept) <= limit else kept[:limit] + "\n[… cut …]"


def _is_visible(ch: str) -> bool:
    if ch in "\n\t":
        return True
    category = unicodedata.category(ch)
    # Cf: format characters (zero-width, bidi overrides, tag characters); Co/Cn: private/unassigned
    return category not in ("Cf", "Co", "Cn", "Cc")


def build_task(
    *,
    title: str,
    body: str | None,
    instructions: str = "",
    review_comments: Sequence[str] = (),
    number: int,
    is_pull_request: bool,
) -> str:
    """The task for the agent: the issue (or PR) title and body, the /cra instructions, and a
    PR's review comments — each cleaned and clearly marked as quoted text."""
    kind = "pull request" if is_pull_request else "issue"
    parts = [f"Resolve {kind} #{number}: {clean_text(title, limit=300)}"]
    if clean_text(body):
        parts.append(f"The {kind} says:\n{clean_text(body)}")
    if clean_text(instructions):
        parts.append(f"Extra instructions from the requester:\n{clean_text(instructions)}")
    comments = [clean_text(c, limit=2000) for c in review_comments if clean_text(c)]
    if comments:
        parts.append("Review comments:\n" + "\n".join(f"- {c}" for c in comments[-20:]))
    return "\n\n".join(parts)
