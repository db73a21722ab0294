"""The problem statement of a mined task: the linked issue when the commit names one and the
API can read it, else the commit message with the failing tests and their output. Never the
fix: any line of the statement that the patch adds is dropped.

With the fix's tests hidden (`cra bench run --tests hidden`) the run gets `hidden_statement`,
made from the task's fields alone: what a user would report — the issue, or the commit message
and the error with its traceback — without the failing tests' list, any line the fix or its
tests add, or any line naming a test only the test patch adds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath

import httpx

from agent.bench.patches import CODE_SUFFIXES
from agent.bench.tasks import BenchTask
from agent.gate.gate_files import gate_role
from agent.gate.testreport.failures import failure_lines

ISSUE_REF = re.compile(r"(?<![\w/&])#(\d{1,7})\b")
OUTPUT_CHARS = 3000
LISTED = "\n\nThese tests fail and should pass:\n"  # how `compose` lays a statement out
OUTPUT = "\n\nTheir output:\n```\n"
# a definition's name in a diff line: Python, Rust, Go, JavaScript
_PATH = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w.-]+\.\w+)(?=::|:\d|[\s,)\]]|$)")
DEFINED = re.compile(r"^[+ -]\s*(?:async\s+)?(?:def|class|fn|func|function)\s+(\w+)")


def linked_issue(message: str) -> int | None:
    """The first `#123` a commit message names (a PR merge's own number counts too)."""
    match = ISSUE_REF.search(message)
    return int(match.group(1)) if match else None


def fetch_issue(
    api_url: str, repo: str, number: int, token: str | None, *, timeout: float = 10.0
) -> tuple[str, str] | None:
    """(title, body) of issue `number` through the GitHub REST API, or None when it cannot be
    read (no such issue, no access, no network)."""
    headers = {"Accept": "application/vnd.github+json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        response = httpx.get(
            f"{api_url.rstrip('/')}/repos/{repo}/issues/{number}", headers=headers, timeout=timeout
        )
        if response.status_code != 200:
            return None
        data = response.json()
    except (httpx.HTTPError, ValueError):
        return None
    title, body = data.get("title"), data.get("body")
    if not isinstance(title, str):
        return None
    return title, body if isinstance(body, str) else ""


def compose(
    message: str,
    failing: Sequence[str],
    output: str,
    patch: str,
    issue: tuple[str, str] | None = None,
) -> str:
    """The statement: the issue's title and body, or the commit message, the tests that fail
    and their failures' own lines: pytest's tail (its failure sections and short summary end
    it), any other runner's failures chosen from the whole output, the failing tests' first;
    scrubbed of the patch's added lines."""
    if issue is not None:
        title, body = issue
        text = f"{title}\n\n{body}".strip()
    else:
        listing = "\n".join(f"- {test}" for test in failing)
        shown = _failures_shown(output, failing).strip()
        text = f"{message.strip()}{LISTED}{listing}{OUTPUT}{shown}\n```"
    return scrub(text, patch)


def _failures_shown(output: str, failing: Sequence[str]) -> str:
    """What a statement shows of a failing run's output: pytest's end, where its failure
    sections and short summary are, or the failures' own lines of any other runner's output,
    the failing tests' first (a long TAP log ends with another file's passing lines, and a
    failure beside the task's can come before it: agent.gate.testreport.failures)."""
    if _PYTEST_END.search(output):
        return output[-OUTPUT_CHARS:]
    return failure_lines(output, OUTPUT_CHARS, first=failing)


_PYTEST_END = re.compile(r"^(?:_{3,} .+ _{3,}|={3,} .+ ={3,})$", re.M)


def added_lines(patch: str) -> set[str]:
    """The lines a patch adds, stripped; short ones (a bracket, `return x`) are common words."""
    return {
        line[1:].strip()
        for line in patch.splitlines()
        if line.startswith("+") and not line.startswith("+++") and len(line[1:].strip()) >= 12
    }


def scrub(text: str, patch: str) -> str:
    """`text` without any line that the patch adds (the answer must not be in the question)."""
    added = added_lines(patch)
    kept = [line for line in text.split("\n") if line.strip() not in added]
    return "\n".join(kept)


def hidden_statement(task: BenchTask) -> str:
    """The statement a run with the fix's tests hidden gets: the issue, or the commit message
    and the failure's output as a user would report it; no line the fix or its tests add, none
    naming a test only the test patch adds, and no output line about another test file nor
    another test's failure section (a failure beside the fix's, before and after it: not what a
    user reports, and a test the run would take for the task's)."""
    message, output = _parts(task.problem_statement)
    text = message.strip()
    if output is not None and output.strip():
        own = {test.split("::")[0] for test in task.FAIL_TO_PASS}
        names = {_id_parts(test)[-1] for test in task.FAIL_TO_PASS}
        lines = _own_sections(output.strip("\n").split("\n"), own, names)
        shown = [line for line in lines if not _other_tests(line, own)]
        text += "\n\nWhat goes wrong:\n```\n" + "\n".join(shown) + "\n```"
    added = added_lines(task.patch) | added_lines(task.test_patch)
    marks = new_test_marks(task.test_patch, [*task.FAIL_TO_PASS, *task.PASS_TO_PASS])
    kept = [
        line
        for line in text.split("\n")
        if _quoted(line) not in added and not _names_any(line, marks)
    ]
    return "\n".join(kept)


def _parts(statement: str) -> tuple[str, str | None]:
    """A statement `compose` made split into its message and its tests' output (None for an
    issue's text, or a statement from elsewhere)."""
    message, listed, rest = statement.partition(LISTED)
    if not listed:
        return statement, None
    _, shown, output = rest.partition(OUTPUT)
    if not shown:
        return message, None
    return message, output.rstrip().removesuffix("```")


# a failure's section in pytest's report: `____ test_name[param] ____`, `____ Class.test ____`,
# `____ ERROR collecting tests/test_x.py ____`; it runs to the next header or `=== … ===` line
_SECTION = re.compile(r"^_{3,} (.+?) _{3,}$")
_RULE = re.compile(r"^={3,}")


def _own_sections(lines: Sequence[str], own: set[str], names: set[str]) -> list[str]:
    """The output without the failure sections of other tests (a test that fails beside the
    fix's, before and after it: its traceback names no file the line filter would catch)."""
    kept: list[str] = []
    keep = _leading_kept(lines, own, names)
    for line in lines:
        if (header := _SECTION.match(line.strip())) is not None:
            keep = _is_own(header.group(1), own, names)
        elif _RULE.match(line):
            keep = True
        if keep:
            kept.append(line)
    return kept


# a line of a traceback as pytest prints it: `E   …`, `>   …`, `tests/test_x.py:12: Error`
_TRACEBACK = re.compile(r"^(?:E |>  |\S+:\d+: \w)")


def _leading_kept(lines: Sequence[str], own: set[str], names: set[str]) -> bool:
    """Whether the lines before the output's first section header or `===` line stay: a
    traceback there is the end of a section whose header the output's cut left out, kept
    only when it names one of the fix's tests."""
    marks = [i for i, line in enumerate(lines) if _SECTION.match(line.strip()) or _RULE.match(line)]
    if not marks:
        return True
    leading = lines[: marks[0]]
    if not any(_TRACEBACK.match(line) for line in leading):
        return True
    return _is_own("\n".join(leading), own, names)


def _is_own(header: str, own: set[str], names: set[str]) -> bool:
    """Whether a section's header names one of the fix's failing tests or their files."""
    if any(path in header for path in own):
        return True
    return bool(set(re.findall(r"\w+", header.split("[", 1)[0])) & names)


def _other_tests(line: str, own: set[str]) -> bool:
    """Whether an output line names a test file other than those of the fix's failing tests."""
    return any(
        PurePosixPath(path).suffix.lower() in CODE_SUFFIXES
        and gate_role(path) == "test"
        and path not in own
        for path in _PATH.findall(line)
    )


def _quoted(line: str) -> str:
    """A line as a traceback quotes source: stripped, without pytest's `>` marker."""
    stripped = line.strip()
    return stripped[1:].strip() if stripped.startswith(">") else stripped


def new_test_marks(test_patch: str, test_ids: Iterable[str]) -> list[re.Pattern[str]]:
    """What names a test only the test patch adds: a file it creates, a test function or class
    it defines anew (one a test id names, or named test*), a test id in either."""
    files, added, kept = _new_files_and_names(test_patch)
    components = {part for test in test_ids for part in _id_parts(test)}
    names = {n for n in added - kept if n in components or n.lower().startswith("test")}
    ids = [t for t in test_ids if t.split("::")[0] in files or names & set(_id_parts(t))]
    return [
        *(re.compile(re.escape(text)) for text in [*files, *ids]),
        *(re.compile(rf"(?<!\w){re.escape(name)}(?!\w)") for name in names),
    ]


def _new_files_and_names(test_patch: str) -> tuple[set[str], set[str], set[str]]:
    """The files a patch creates, the names its '+' lines define, and those its other lines
    define (a test that was there before keeps its name)."""
    files: set[str] = set()
    added: set[str] = set()
    kept: set[str] = set()
    created = False
    for line in test_patch.splitlines():
        if line.startswith("--- "):
            created = line == "--- /dev/null"
        elif line.startswith("+++ "):
            if created and line.startswith("+++ b/"):
                files.add(line[len("+++ b/") :])
        elif (match := DEFINED.match(line)) is not None:
            (added if line.startswith("+") else kept).add(match.group(1))
    return files, added, kept


def _id_parts(test_id: str) -> list[str]:
    """The names in a test id (`tests/test_x.py::TestY::test_z[1]` → TestY, test_z)."""
    return [re.sub(r"\[.*$", "", part) for part in test_id.split("::")[1:]] or [test_id]


def _names_any(line: str, marks: Sequence[re.Pattern[str]]) -> bool:
    return any(mark.search(line) for mark in marks)
