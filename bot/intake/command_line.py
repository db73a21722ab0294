"""The `/cra` line a reader sees in a comment's Markdown: never in code, a quote or a comment."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from string import punctuation

from bot.intake.task import shown_characters

# What separates a command line's words: a space as it renders — a tab, a no-break space (what
# Option+Space types on a Mac), the typographic and ideographic spaces; not U+1680, which shows
# as a dash. Indentation stays ASCII spaces: four of them make code.
BLANK = "[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]"
COMMAND_LINE = re.compile(rf"^ {{0,3}}/cra(?:{BLANK}+(?P<rest>.*))?$", re.IGNORECASE)
# A fenced code block opens with 3+ backticks or tildes (after a list item's marker too) and
# closes with a run of the same character at least as long; a <pre> block with </pre>.
FENCE_OPEN = re.compile(
    r"^(?P<indent>[ \t]*(?:(?:[-+*]|[0-9]{1,9}[.)])[ \t]+)*)"
    r"(?P<fence>`{3,}|~{3,})(?P<info>.*)$"
)
FENCE_CLOSE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*$")
PRE_OPEN = re.compile(r"^ {0,3}<pre(?:[\s>]|$)", re.IGNORECASE)
QUOTE = re.compile(r"^ {0,3}>")
COMMENT_OPEN = re.compile(r"^ {0,3}<!--")  # an HTML block: it ends the paragraph before it
HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")  # a paragraph of one line
LIST_ITEM = re.compile(r"^ {0,3}(?:[-+*]|[0-9]{1,9}[.)])(?:[ \t]|$)")
CODE_INDENT = 4  # columns that make a line code when no paragraph runs on into it
BACKTICKS = re.compile(r"`+")
ESCAPABLE = frozenset(punctuation)  # what a backslash escapes: ASCII punctuation

Line = tuple[int, str]  # a line's index in the comment, and its text without HTML comments


def find_command(body: str) -> tuple[str, str] | None:
    """The first `/cra` line a reader sees as a line of its own: (command word, the text after
    it), or None. Never one GitHub shows as code (a fenced block — its fence closed only by a
    run of its own character at least as long —, an indented block, a <pre> block, or inline
    code of any length, across line ends too), hidden (an HTML comment outside code), or quoted
    (a `>` line, and the lines that run on from it)."""
    lines = shown_characters(body).split("\n")
    for index, line in shown_lines(lines):
        match = COMMAND_LINE.match(line)
        if match is None:
            continue
        parts = (match["rest"] or "").split(maxsplit=1)
        word = parts[0].lower() if parts else ""
        rest = "\n".join([parts[1] if len(parts) > 1 else "", *lines[index + 1 :]])
        return word, rest.strip()
    return None


def shown_lines(lines: Sequence[str]) -> Iterator[Line]:
    """The lines of the comment's paragraphs whose first character is text, not code: outside
    code blocks, quotes and HTML comments, and not starting inside a code span."""
    blocks = _Blocks()
    for index, raw in enumerate(lines):
        for paragraph in blocks.feed(index, raw):
            yield from _outside_code_spans(paragraph)
    yield from _outside_code_spans(blocks.paragraph)


@dataclass
class _Blocks:
    """CommonMark's block structure as far as commands need it, fed a line at a time; it hands
    back each paragraph when it ends (inline code never crosses a paragraph's end)."""

    fence: tuple[str, int, int] | None = None  # its character, length and indentation
    in_pre: bool = False
    in_comment: bool = False
    quoted: bool = False
    in_list: bool = False  # an indented paragraph after a blank line is the item's, not code
    paragraph: list[Line] = field(default_factory=list)

    def feed(self, index: int, raw: str) -> list[list[Line]]:
        """Take the next line; the paragraphs it ended (none, one, or two with a heading)."""
        if self.fence is not None:
            self.fence = None if _closes(raw, self.fence) else self.fence
            return []
        if self.in_pre:
            self.in_pre = "</pre>" not in raw.lower()
            return []
        opens_comment = not self.in_comment and COMMENT_OPEN.match(raw) is not None
        line, self.in_comment = _uncommented(raw, self.in_comment)
        if not raw.strip() or opens_comment:
            self.quoted = False
            ended = self._end()
            return ended if not line.strip() else [*ended, *self._text(index, line)]
        if not line.strip():  # inside an HTML comment: the paragraph runs on
            self.paragraph += [(index, "")] if self.paragraph else []
            return []
        return self._text(index, line)

    def _text(self, index: int, line: str) -> list[list[Line]]:
        """Take a line with something shown on it."""
        if QUOTE.match(line) or self.quoted:  # a quote, or a line that runs on from one
            self.quoted = True
            return self._end()
        if self._opens_block(line):
            return self._end()
        indent = _indent(line)
        if not self.paragraph and indent == 0:
            self.in_list = False
        if not self.paragraph and indent >= CODE_INDENT and not self.in_list:
            return []  # an indented code block
        if HEADING.match(line):
            return [*self._end(), [(index, line)]]
        if LIST_ITEM.match(line):
            ended, self.in_list = self._end(), True
            self.paragraph = [(index, line)]
            return ended
        self.paragraph.append((index, line))
        return []

    def _opens_block(self, line: str) -> bool:
        """Whether the line opens a fenced code block or a <pre> block (and note it)."""
        if opened := FENCE_OPEN.match(line):
            mark = opened["fence"]
            if not (mark[0] == "`" and "`" in opened["info"]):  # else inline code
                self.fence = (mark[0], len(mark), len(opened["indent"].expandtabs(4)))
                return True
        if PRE_OPEN.match(line):
            self.in_pre = "</pre>" not in line.lower()
            return True
        return False

    def _end(self) -> list[list[Line]]:
        """The paragraph that ends here, if one was open."""
        ended, self.paragraph = self.paragraph, []
        return [ended] if ended else []


def _outside_code_spans(paragraph: Sequence[Line]) -> Iterator[Line]:
    """The paragraph's lines whose first character other than a space is not code."""
    spans = code_spans("\n".join(line for _, line in paragraph))
    starts = [start for start, _ in spans]
    offset = 0
    for index, line in paragraph:
        first = offset + len(line) - len(line.lstrip())
        inside = bisect_right(starts, first) - 1
        if inside < 0 or spans[inside][1] <= first:
            yield index, line
        offset += len(line) + 1


def code_spans(text: str) -> list[tuple[int, int]]:
    """Where the code spans of a paragraph's text are, as [start, end) ranges, by CommonMark's
    rule: a backtick string opens one that the next backtick string of the same length closes,
    across line ends; without such a closer its backticks are text. A backslash escapes a
    backtick outside code, never inside."""
    runs = [(match.start(), match.end()) for match in BACKTICKS.finditer(text)]
    by_length: dict[int, list[int]] = {}  # a run's length → where the runs of that length start
    for start, end in runs:
        by_length.setdefault(end - start, []).append(start)
    spans: list[tuple[int, int]] = []
    for start, end in runs:
        done = spans[-1][1] if spans else 0
        if start < done:  # inside the last span, or its closer
            continue
        opener = start + 1 if _escaped(text, start, done) else start
        closers = by_length.get(end - opener, [])
        found = bisect_right(closers, end - 1)  # the first run of that length after this one
        if opener < end and found < len(closers):
            spans.append((opener, closers[found] + end - opener))
    return spans


def _escaped(text: str, at: int, since: int) -> bool:
    """Whether the character at `at` follows an odd run of backslashes (after `since`)."""
    before = at
    while before > since and text[before - 1] == "\\":
        before -= 1
    return (at - before) % 2 == 1


def _indent(line: str) -> int:
    """The columns of a line's leading blanks (a tab to the next multiple of 4)."""
    return len(line[: len(line) - len(line.lstrip(" \t"))].expandtabs(4))


def _closes(line: str, fence: tuple[str, int, int]) -> bool:
    """Whether `line` closes the open fence (its character, at least its length, indented at
    most 3 columns past it)."""
    char, length, indent = fence
    closing = FENCE_CLOSE.match(line)
    return (
        closing is not None
        and closing["fence"][0] == char
        and len(closing["fence"]) >= length
        and len(closing["indent"].expandtabs(4)) <= indent + 3
    )


def _uncommented(line: str, in_comment: bool) -> tuple[str, bool]:
    """The line without the HTML comments in it, and whether a comment is still open after
    it (an unclosed one hides the rest of the text, as on GitHub)."""
    shown: list[str] = []
    at = 0
    while True:
        if in_comment:
            end = line.find("-->", at)
            if end < 0:
                return "".join(shown), True
            at, in_comment = end + 3, False
        else:
            start = line.find("<!--", at)
            if start < 0:
                return "".join(shown) + line[at:], False
            shown.append(line[at:start])
            at, in_comment = start + 4, True
