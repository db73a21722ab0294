"""Untrusted text as inert Markdown: escaped, fenced, cut, linked; no mentions or closing words.

Issue titles, plans and answers of models, test output and diffs go through these helpers, so
they cannot break the markup, ping people or close issues.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

LINE_CAP = 160  # characters of one line of untrusted text (a step, an error)
RATIONALE_CAP = 2_000
LIST_CAP = 20  # names shown in a list before "and N more"
FILES_CAP = 50

_ZWJ = "\u200d"
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_CLOSING = re.compile(
    r"\b(close[sd]?|fix(?:e[sd])?|resolve[sd]?)"
    r"(?=\s*:?\s*(?:[\w.-]+/[\w.-]+)?#\d|\s*:?\s*https?://\S+/(?:issues|pull)/\d)",
    re.IGNORECASE,
)
_MD_PUNCT = re.compile(r"([\\`*_~|\[\]])")
_LINE_MARK = re.compile(r"^(\s*)([#+=-])", re.MULTILINE)
_LINE_NUMBER = re.compile(r"^(\s*\d+)([.)])", re.MULTILINE)


# Characters str.splitlines() breaks a line at that git and diff do not (nor, but for a bare
# carriage return, Python's tokenizer): shown escaped, so that a line of a diff never looks like
# two, its tail as context. (CRLF, one line end, is kept as \n.)
_HIDDEN_BREAKS = str.maketrans(
    {
        "\r": "\\r",
        "\f": "\\f",
        "\v": "\\v",
        "\x1c": "\\x1c",
        "\x1d": "\\x1d",
        "\x1e": "\\x1e",
        "\x85": "\\x85",
        "\u2028": "\\u2028",
        "\u2029": "\\u2029",
    }
)


def text_lines(text: str) -> list[str]:
    """The lines of `text` as git counts them (split at \n only), every other line-breaking
    character shown escaped."""
    lines = text.replace("\r\n", "\n").translate(_HIDDEN_BREAKS).split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def neutralise(text: str) -> str:
    """Text that can neither @mention anyone nor close an issue (zero-width joiners)."""
    text = _MENTION.sub("@" + _ZWJ, text)
    return _CLOSING.sub(lambda m: m.group(1)[0] + _ZWJ + m.group(1)[1:], text)


def escape_markdown(text: str) -> str:
    """Untrusted text as inert Markdown: no markup, HTML, code, mentions or closing keywords."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = _MD_PUNCT.sub(r"\\\1", text)
    text = _LINE_MARK.sub(r"\1\\\2", text)
    text = _LINE_NUMBER.sub(r"\1\\\2", text)
    return neutralise(html.escape(text, quote=False))


def cut(text: str, cap: int) -> str:
    """`text` no longer than `cap` characters, an ellipsis marking a cut."""
    return text if len(text) <= cap else text[: cap - 1].rstrip() + "…"


def line(text: str, cap: int = LINE_CAP) -> str:
    """Untrusted text as one escaped line."""
    return escape_markdown(cut(" ".join(text.split()), cap))


def para(text: str, cap: int = RATIONALE_CAP) -> str:
    """Untrusted text as escaped paragraphs (never an indented code block)."""
    return escape_markdown(cut("\n".join(line.strip() for line in text.strip().splitlines()), cap))


def code(text: str, cap: int = LINE_CAP) -> str:
    """Untrusted text as an inline code span (delimiters longer than any backtick run in it)."""
    text = cut(" ".join(text.split()), cap) or "(empty)"
    runs = re.findall(r"`+", text)
    ticks = "`" * (max(map(len, runs), default=0) + 1)
    pad = " " if runs else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fence(content: str, info: str) -> str:
    """Content shown verbatim in a fenced block whose fence no line of it can close."""
    body = content.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").rstrip("\n")
    runs = re.findall(r"`{3,}", body)
    ticks = "`" * max(3, max(map(len, runs), default=0) + 1)
    return f"{ticks}{info}\n{body}\n{ticks}"


def details(summary: str, body: str) -> str:
    """A folded block; `summary` is plain text."""
    label = neutralise(html.escape(" ".join(summary.split()), quote=False))
    return f"<details><summary>{label}</summary>\n\n{body}\n\n</details>"


def link(text: str, url: str) -> str:
    """A Markdown link to an http(s) URL; anything else is shown as code."""
    if not url.startswith(("https://", "http://")):
        return code(url)
    safe = url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")
    safe = safe.replace("<", "%3C").replace(">", "%3E")
    return f"[{text}]({safe})"


def names(names: Sequence[str], cap: int = LIST_CAP) -> str:
    """Names as code spans, the first `cap` of them, then how many more."""
    if not names:
        return "none"
    shown = ", ".join(code(n) for n in names[:cap])
    return shown + (f" and {len(names) - cap:,} more" if len(names) > cap else "")


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")
