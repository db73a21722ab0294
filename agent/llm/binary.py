"""Yes/no judgments: parse a small model's answer, re-ask once, judge many items one call each."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from pydantic import Field

from agent.errors import PromptTooLarge
from agent.llm.judgments import Answer
from agent.llm.logged import LoggedLLMClient
from agent.llm.thinking import strip_thinking
from agent.models import Record

T = TypeVar("T")

ANSWER_INSTRUCTION = "Answer yes or no."
REASK_INSTRUCTION = (
    "Your previous answer was neither yes nor no. Answer with exactly one word: yes or no."
)
_ANSWERS = {"yes": True, "no": False}
_DECORATION = re.compile(r"[*_`#>\"'“”‘’\[\]()]")
_LABEL = re.compile(
    r"^(?:the\s+)?(?:final\s+)?(?:answer|verdict|response)\s*(?:is\s*)?[:\-–—=]?\s*"
)
_WORD = re.compile(r"[a-z]+")


class BinaryJudgment(Record):
    """Verdicts per item key; `unparseable` lists keys whose answer fell back to the default."""

    verdicts: dict[str, bool] = Field(default_factory=dict)
    unparseable: list[str] = Field(default_factory=list)


def parse_yes_no(text: str) -> bool | None:
    """True for a leading yes, False for a leading no, None when absent or ambiguous."""
    normalized = _DECORATION.sub(" ", strip_thinking(text).lower()).strip()
    normalized = _LABEL.sub("", normalized)
    words = _WORD.findall(normalized)[:3]
    if not words or words[0] not in _ANSWERS:
        return None
    other = "no" if words[0] == "yes" else "yes"
    rest = words[1:]
    if rest[:1] == [other] or (rest[:1] in (["or"], ["and"]) and rest[1:2] == [other]):
        return None  # "yes or no", "yes/no", "no, yes": the model did not choose
    return _ANSWERS[words[0]]


def binary_prompt(task_context: str, formatted_item: str) -> str:
    """The user prompt of one judgment: context, item, and the yes/no instruction once."""
    parts = [p for p in (task_context.strip(), formatted_item.strip()) if p]
    if not parts or not parts[-1].endswith(ANSWER_INSTRUCTION):
        parts.append(ANSWER_INSTRUCTION)
    return "\n\n".join(parts)


def run_binary_judgment(
    items: Sequence[T],
    *,
    llm: LoggedLLMClient,
    system_prompt: str,
    task_context: str,
    format_item: Callable[[T], str],
    item_key: Callable[[T], str],
    stage: str,
    default: bool,
    version: Callable[[T], str] | None = None,
) -> BinaryJudgment:
    """One yes/no call per item, re-asked once when the answer is neither; still neither:
    `default`, listed as unparseable. With the client's judgment cache, a question asked
    before about the same content (`version`: e.g. the file's hash) is answered from it."""
    judgment = BinaryJudgment()
    cache = llm.judgments
    for item in items:
        key = item_key(item)
        prompt = binary_prompt(task_context, format_item(item))
        question = (llm.config.model, system_prompt, prompt, version(item) if version else "")
        found = cache.get(question) if cache is not None else None
        if found is None:
            found = ask_yes_no(llm, system_prompt, prompt, stage=stage)
            if cache is not None:
                cache.put(question, found)
        if found.verdict is None:
            judgment.unparseable.append(key)
        judgment.verdicts[key] = default if found.verdict is None else found.verdict
    return judgment


def ask_yes_no(llm: LoggedLLMClient, system: str, prompt: str, *, stage: str) -> Answer:
    """The verdict of one question; an answer that is neither yes nor no is asked once more
    (stage `<stage>_reask`, recorded and charged) unless the re-ask would not fit the window."""
    verdict = parse_yes_no(llm.complete(system, prompt, stage=stage).text)
    if verdict is not None:
        return Answer(verdict)
    again = prompt.removesuffix(ANSWER_INSTRUCTION).rstrip() + "\n\n" + REASK_INSTRUCTION
    try:
        return Answer(parse_yes_no(llm.complete(system, again, stage=f"{stage}_reask").text))
    except PromptTooLarge:
        return Answer(None)
