"""Line handling shared by the edit matchers: endings, splitting, and the hints of a refusal."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from agent.errors import PatchRejected

MAX_LISTED = 10
_MIN_SIMILARITY = 0.5
_COMMENT_OPEN = ("#", "//", "/*", "<!--", "--", ";")
_COMMENT_CLOSE = ("*/", "-->")
_ELISION_TEXT = re.compile(r"(?:\.\.\.|…)(?:\s[\w\s.…,()'-]*)?")
_ELISION_COMMENT = re.compile(r"(?:\.\.\.|…)[\w\s.…,()'-]*")


def line_ending(text: str) -> str:
    """The text's dominant line ending: "\\r\\n" or "\\n"."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf * 2 >= text.count("\n") else "\n"


def split_lines(text: str) -> list[str]:
    """Lines split at "\\n" only, each keeping its line ending."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def block_lines(text: str, *, keep_last: bool = False) -> list[str]:
    """The lines of a search or replacement, without line endings. A final newline ends the
    last line, or (`keep_last`) opens a blank one: the edit format already dropped the newline
    before its closing tag, so one that remains is a blank line the model wrote."""
    text = text.replace("\r\n", "\n")
    if not text:
        return []
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    return lines[:-1] if text.endswith("\n") and not keep_last else lines


def with_eol(text: str, eol: str) -> str:
    """`text` with every line ending made `eol`."""
    text = text.replace("\r\n", "\n")
    return text if eol == "\n" else text.replace("\n", eol)


def is_elision(line: str) -> bool:
    """True for a line that only says "lines left out here" (`...`, `# ... existing code`,
    `// ...existing code...`).

    `...rest,` (a spread) is code: outside a comment the dots must stand alone or be followed
    by a space; inside one, words may follow them directly.
    """
    text = line.strip()
    opener = next((m for m in _COMMENT_OPEN if text.startswith(m)), "")
    text = text[len(opener) :].strip()
    closer = next((m for m in _COMMENT_CLOSE if text.endswith(m)), "")
    text = text[: len(text) - len(closer)].strip()
    shape = _ELISION_COMMENT if opener else _ELISION_TEXT
    return shape.fullmatch(text) is not None and len(text) <= 60


def ambiguous(count: int, numbers: Sequence[int], lines: Sequence[str], how: str) -> PatchRejected:
    """The rejection of a search that matches `count` times, listing where (1-based lines)."""
    listed = "\n".join(f"line {n}: {lines[n - 1].rstrip()}" for n in numbers[:MAX_LISTED])
    return PatchRejected(
        f"ambiguous: the search text matches {count} times{how}; "
        "include more surrounding lines so that it matches exactly once",
        hint=f"the search text matches at:\n{listed}",
    )


def closest_region(text: str, search: str) -> str:
    """The file region most similar to `search`, with line numbers, for a retry prompt."""
    lines = [line.rstrip("\r\n") for line in split_lines(text)]
    if not lines:
        return "the file is empty"
    needle = [line.strip() for line in block_lines(search) if line.strip()] or [search.strip()]
    size = min(len(needle), len(lines))
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2("\n".join(needle))
    scored = []
    for start in range(len(lines) - size + 1):
        matcher.set_seq1("\n".join(line.strip() for line in lines[start : start + size]))
        scored.append((matcher.quick_ratio(), -start))
    best, start = 0.0, 0
    for _, negative in sorted(scored, reverse=True)[:8]:
        matcher.set_seq1("\n".join(line.strip() for line in lines[-negative : -negative + size]))
        if matcher.ratio() > best:
            best, start = matcher.ratio(), -negative
    if best < _MIN_SIMILARITY:
        return "nothing in the file resembles the search text; check the file and the lines"
    shown = "\n".join(f"{n:>5} | {lines[n - 1]}" for n in range(start + 1, start + size + 1))
    percent = int(best * 100)  # floored: a near miss never reads "100% similar"
    return f"did you mean lines {start + 1}-{start + size} ({percent}% similar)?\n{shown}"


def not_found(text: str, search: str, why: str = "") -> PatchRejected:
    """The rejection of a search with no match, showing the closest region."""
    return PatchRejected(f"search text not found{why}", hint=closest_region(text, search))
