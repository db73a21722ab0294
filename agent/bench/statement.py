"""The problem statement of a mined task: the linked issue when the commit names one and the
API can read it, else the commit message with the failing tests and their output. Never the
fix: any line of the statement that the patch adds is dropped."""

from __future__ import annotations

import re
from collections.abc import Sequence

import httpx

ISSUE_REF = re.compile(r"(?<![\w/&])#(\d{1,7})\b")
OUTPUT_CHARS = 3000


def linked_issue(message: str) -> int | None:
    """The first `#123` a commit message names (a PR merge's own number counts too)."""
    match = ISSUE_REF.search(message)
    return int(match.group(1)) if match else None


def fetch_issue(api_url: str, repo: str, number: int, token: str | None,
                *, timeout: float = 10.0) -> tuple[str, str] | None:
    """(title, body) of issue `number` through the GitHub REST API, or None when it cannot be
    read (no such issue, no access, no network)."""
    headers = {"Accept": "application/vnd.github+json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        response = httpx.get(f"{api_url.rstrip('/')}/repos/{repo}/issues/{number}",
                             headers=headers, timeout=timeout)
        if response.status_code != 200:
            return None
        data = response.json()
    except (httpx.HTTPError, ValueError):
        return None
    title, body = data.get("title"), data.get("body")
    if not isinstance(title, str):
        return None
    return title, body if isinstance(body, str) else ""


def compose(message: str, failing: Sequence[str], output: str, patch: str,
            issue: tuple[str, str] | None = None) -> str:
    """The statement: the issue's title and body, or the commit message, the tests that fail
    and the end of their output; scrubbed of the patch's added lines."""
    if issue is not None:
        title, body = issue
        text = f"{title}\n\n{body}".strip()
    else:
        listing = "\n".join(f"- {test}" for test in failing)
        tail = output[-OUTPUT_CHARS:].strip()
        text = (f"{message.strip()}\n\nThese tests fail and should pass:\n{listing}\n\n"
                f"Their output:\n```\n{tail}\n```")
    return scrub(text, patch)


def added_lines(patch: str) -> set[str]:
    """The lines a patch adds, stripped; short ones (a bracket, `return x`) are common words."""
    return {line[1:].strip() for line in patch.splitlines()
            if line.startswith("+") and not line.startswith("+++")
            and len(line[1:].strip()) >= 12}


def scrub(text: str, patch: str) -> str:
    """`text` without any line that the patch adds (the answer must not be in the question)."""
    added = added_lines(patch)
    kept = [line for line in text.split("\n") if line.strip() not in added]
    return "\n".join(kept)
