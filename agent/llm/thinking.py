"""`<think>` blocks of reasoning models: split from the visible answer (pure)."""

from __future__ import annotations

import re

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)


def split_thinking(text: str) -> tuple[str, str]:
    """(the visible answer, the text of an unclosed `<think>` block or "")."""
    text = _THINK_BLOCK.sub("", text)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:  # the opening tag was part of the prompt template: everything before is thinking
        text = text[closes[-1].end() :]
    opened = _THINK_OPEN.search(text)
    if opened:
        return text[: opened.start()], text[opened.end() :]
    return text, ""


def strip_thinking(text: str) -> str:
    """The answer without `<think>` blocks, stripped; an unclosed `<think>` hides the rest."""
    return split_thinking(text)[0].strip()
