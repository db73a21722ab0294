"""The typical mistakes of small models, as functions that spoil a good answer.

Used by `cra bench run --model oracle:<mode>` (the oracle's answers, spoiled) and by
benchmarks/noisy.py. Each function takes the answer and a random source and returns it spoiled.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

Spoil = Callable[[str, random.Random], str]


def _sections(answer: str) -> tuple[str, str, str, str] | None:
    """The first edit block of an answer as (head, search, replacement part, tail), if any."""
    match = re.search(
        r"(?s)(.*?<search>\n)(.*?)(\n</search>\n<replacement>\n)(.*?)(\n</repl.*)", answer
    )
    if match is None:
        return None
    head, search, middle, replacement, tail = match.groups()
    return head, search, f"{middle}{replacement}", tail


def _each_line(answer: str, change: Callable[[list[str]], list[str]]) -> str:
    sections = _sections(answer)
    if sections is None:
        return answer
    head, search, middle, tail = sections
    rest, replacement = middle.split("<replacement>\n")
    fixed = "\n".join(change(replacement.split("\n")))
    return f"{head}{chr(10).join(change(search.split(chr(10))))}{rest}<replacement>\n{fixed}{tail}"


def dedent(lines: list[str]) -> list[str]:
    cut = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
    return [x[cut:] for x in lines]


def tabs(lines: list[str]) -> list[str]:
    return [re.sub(r"^((?:    )+)", lambda m: "\t" * (len(m.group(1)) // 4), x) for x in lines]


def missing_line(answer: str, rng: random.Random) -> str:
    sections = _sections(answer)
    if sections is None:
        return answer
    head, search, middle, tail = sections
    lines = search.split("\n")
    if len(lines) < 3:
        return answer
    del lines[rng.choice([0, 1, len(lines) - 1])]
    return f"{head}{chr(10).join(lines)}{middle}{tail}"


def elided(lines: list[str]) -> list[str]:
    if len(lines) < 4:
        return lines
    return [*lines[:1], lines[1][: len(lines[1]) - len(lines[1].lstrip())] + "# ...", *lines[3:]]


EDIT_NOISE: dict[str, Spoil] = {
    "dedent": lambda a, _: _each_line(a, dedent),
    "tabs": lambda a, _: _each_line(a, tabs),
    "trailing": lambda a, _: _each_line(a, lambda ls: [x + "  " if x.strip() else x for x in ls]),
    "missing": missing_line,
    "elide": lambda a, _: _each_line(a, elided),
    "path": lambda a, _: re.sub(r'file="[^"/]*/', 'file="', a, count=1),
    "think": lambda a, _: f"<think>The bug is an operator.</think>\n{a}",
    "fenced": lambda a, _: f"Here is the fix:\n```xml\n{a}\n```",
}
JSON_NOISE: dict[str, Spoil] = {
    "fenced": lambda a, _: f"```json\n{a}\n```",
    "prose": lambda a, _: f"Sure! Here is the plan:\n{a}\nLet me know if you need more.",
    "commas": lambda a, _: re.sub(r"(\]|\"|\})(\n\s*[\]}])", r"\1,\2", a),
    "think": lambda a, _: f"<think>Let me plan this.</think>\n{a}",
    "no_json": lambda a, _: "I would fix the function first and then run the tests.",
}
YES_NO_NOISE: dict[str, Spoil] = {
    "dot": lambda a, _: "Yes." if a.strip().lower() == "yes" else "No.",
    "because": lambda a, _: f"{a.strip().lower()}, because the task changes this file",
    "think": lambda a, _: f"<think>It defines the function.</think>{a}",
    "prose": lambda a, _: "This file is probably relevant to the task.",
}
# A bench mode: which kind of answer it spoils, with which mistakes.
MODES: dict[str, tuple[str, dict[str, Spoil]]] = {
    "edits": ("edit", EDIT_NOISE),
    "plans": ("json", JSON_NOISE),
    "judgments": ("yes_no", YES_NO_NOISE),
    **{f"edit-{name}": ("edit", {name: spoil}) for name, spoil in EDIT_NOISE.items()},
}
