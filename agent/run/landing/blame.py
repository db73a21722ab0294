"""Which steps of a group a failed gate points to: the files its tracebacks name, the subjects
of its failing tests, the symbols the steps changed. A failure that points nowhere points to
every step."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath

from agent.models import AttemptRecord, PlanStep
from agent.retrieval.indexing.scan import is_test_path, test_subject

_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/", re.M)
_DEFINED = re.compile(r"^[+-]\s*(?:async\s+)?(?:def|class|fn|func|function)\s+([A-Za-z_]\w*)", re.M)
_ASSIGNED = re.compile(r"^[+-]([A-Za-z_]\w*)\s*(?::[^=]*)?=", re.M)  # a module-level name
_HUNK_SCOPE = re.compile(r"^@@[^@]*@@.*?\b(?:def|class|fn|func|function)\s+([A-Za-z_]\w*)", re.M)
_MIN_SYMBOL = 4  # shorter names (`x`, `run`) match too much of any output


def implicated(
    steps: Sequence[PlanStep], attempt: AttemptRecord, diffs: Mapping[str, str]
) -> set[str]:
    """The ids of the steps the attempt's failure points to, by the surest evidence there is:
    the frames of its tracebacks, else the subjects of its failing tests, else the symbols the
    steps changed (all of them when it points to none); `diffs` holds each step's own change.
    A gate that found the tests weakened points to the steps that changed tests too."""
    text = failure_text(attempt)
    failing = _failing_tests(attempt)
    found: set[str] = set()
    for points_to in (_names_a_file, _fails_a_test_of, _names_a_symbol):
        found = {s.id for s in steps if points_to(s, diffs.get(s.id, ""), text, failing)}
        if found:
            break
    if attempt.gate is not None and attempt.gate.weakened:  # the tests themselves changed
        found |= {
            s.id for s in steps if any(is_test_path(f) for f in _files(s, diffs.get(s.id, "")))
        }
    return found or {s.id for s in steps}


def failure_text(attempt: AttemptRecord) -> str:
    """What the failure says: the gate's problems, the failing tests and the test output
    (of the original tests' run too, when there was one)."""
    parts = [*(attempt.gate.problems if attempt.gate else []), *_failing_tests(attempt)]
    for run in (attempt.validation, attempt.original):
        if run is not None:
            parts.append(run.test_output or "")
    return "\n".join(parts)


def _failing_tests(attempt: AttemptRecord) -> list[str]:
    runs = [r for r in (attempt.validation, attempt.original) if r is not None]
    return list(dict.fromkeys(t for r in runs for t in r.failing_tests))


def _sources(step: PlanStep, diff: str) -> list[str]:
    return [f for f in _files(step, diff) if not is_test_path(f)]


def _names_a_file(step: PlanStep, diff: str, text: str, failing: Sequence[str]) -> bool:
    """Whether the failure names one of the step's source files (a traceback's frame)."""
    del failing
    return any(_mentions(text, path) for path in _sources(step, diff))


def _fails_a_test_of(step: PlanStep, diff: str, text: str, failing: Sequence[str]) -> bool:
    """Whether a failing test is a test of one of the step's source files (by subject)."""
    del text
    subjects = {test_subject(f) for f in _sources(step, diff)}
    return any(
        test_subject(t.split("::", 1)[0]) in subjects
        for t in failing
        if is_test_path(t.split("::", 1)[0])
    )


def _names_a_symbol(step: PlanStep, diff: str, text: str, failing: Sequence[str]) -> bool:
    """Whether the failure names a symbol the step changed."""
    del failing
    return any(re.search(rf"\b{re.escape(name)}\b", text) for name in changed_symbols(step, diff))


def _files(step: PlanStep, diff: str) -> list[str]:
    return list(dict.fromkeys([*step.target_files, *_DIFF_FILE.findall(diff)]))


def _mentions(text: str, path: str) -> bool:
    """Whether `text` names `path` (whole, or as the end of a longer path: a traceback's
    absolute frames), not as part of a longer name."""
    return bool(
        re.search(rf"(?<![\w.-]){re.escape(path)}(?![\w-])", text)
        or re.search(rf"/{re.escape(path)}(?![\w-])", text)
    )


def changed_symbols(step: PlanStep, diff: str) -> list[str]:
    """The names the step targets and the ones its diff defines, assigns or edits inside."""
    names = [
        *step.target_symbols,
        *_DEFINED.findall(diff),
        *_ASSIGNED.findall(diff),
        *_HUNK_SCOPE.findall(diff),
    ]
    names = [n.rsplit(".", 1)[-1] for n in names]
    module = {PurePosixPath(f).stem for f in step.target_files}
    return [n for n in dict.fromkeys(names) if len(n) >= _MIN_SYMBOL and n not in module]
