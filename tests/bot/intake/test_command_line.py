"""Which `/cra` line of a comment is a command: never one GitHub shows as code, inline code
spanning lines included (CommonMark's code spans: backtick strings of equal length)."""

from __future__ import annotations

import json

import pytest

from bot.intake.triggers import Trigger, route
from bot.intake.webhooks import parse_delivery
from tests.fixtures import webhook_bytes


def routed_comment(text: str) -> Trigger | None:
    """The trigger of the recorded issue_comment.created delivery saying `text`."""
    payload = json.loads(webhook_bytes("issue_comment", "created.payload.json"))
    payload["comment"]["body"] = text
    event = parse_delivery(
        {"X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": "d-1"},
        json.dumps(payload).encode(),
    )
    return route(event, label="bug")


@pytest.mark.parametrize(
    "text",
    [
        "`\n/cra plan",  # a backtick string no string of its length closes is text
        "`` x `\n/cra plan",
        "`\n/cra plan\n``",
        "`a\n\n/cra plan\n`x",  # a code span ends with its paragraph
        "\\`\n/cra plan\n`",  # an escaped backtick opens nothing
        "`a\\`\n/cra plan `",  # a backslash inside code is code: the span closed on line one
        "# `heading\n/cra plan\n`",  # a heading is a paragraph of one line
        "a `\n```\ncode\n```\n/cra plan `",  # a fence ends the paragraph before it
        "`x`\n/cra plan",  # a closed span on a line before
        "    `indented code\n/cra plan `",  # backticks in indented code open nothing
        "> `quoted\n\n/cra plan `",  # nor backticks in a quote
        "x ```\n/cra plan\n``` y",  # a fence's line closes no span: it opens the fence
    ],
    ids=[
        "unclosed",
        "unequal",
        "longer-closer",
        "paragraph-end",
        "escaped",
        "backslash-in-code",
        "heading",
        "fence",
        "closed-before",
        "indented-code",
        "quote",
        "fence-line",
    ],
)
def test_a_command_after_backticks_that_open_no_code_span_counts(text: str) -> None:
    trigger = routed_comment(text)
    assert trigger is not None and trigger.command == "plan"


def test_the_instructions_after_a_command_keep_their_inline_code() -> None:
    trigger = routed_comment("/cra solve keep `parse()`\nas `it\nis`")
    assert trigger is not None and trigger.instructions == "keep `parse()`\nas `it\nis`"
