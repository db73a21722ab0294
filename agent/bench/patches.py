"""A fix commit split the way SWE-bench splits it, and a patch turned back into edit blocks.

`split_commit` divides a commit's diff into `patch` (everything but the tests) and `test_patch`
(the files the honest gate counts as tests or test configuration). `oracle_edits` turns the
patch of one file into SEARCH/REPLACE blocks that are unique in the file before the fix — what a
perfect model would answer, used by the oracle.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from agent.gate.gate_files import gate_role
from agent.gate.verdict import file_of_test
from agent.git import repo as git
from agent.retrieval.indexing.snapshots import recorded_test_file

# Files whose change is code (counted against the 1–N source files of a task).
CODE_SUFFIXES = frozenset(
    {
        ".py",
        ".pyx",
        ".js",
        ".jsx",
        ".mjs",
        ".cjs",
        ".ts",
        ".tsx",
        ".go",
        ".rs",
        ".java",
        ".kt",
        ".rb",
        ".php",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".hpp",
        ".cs",
        ".swift",
        ".scala",
        ".sh",
    }
)
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def is_test_change(path: str) -> bool:
    """A test file, conftest or test-runner configuration: part of the test patch."""
    return gate_role(path) in ("test", "runner_config")


def is_code(path: str) -> bool:
    """A source file by its suffix (docs, data and config are not, nor a snapshot file: the
    recorded expectations of its test file's cases, whatever its suffix)."""
    return PurePosixPath(path).suffix.lower() in CODE_SUFFIXES and recorded_test_file(path) is None


PROSE_SUFFIXES = frozenset({".md", ".rst", ".adoc"})
PROSE_NAMES = frozenset({"changelog", "changes", "news", "history", "authors", "readme"})


def is_prose(path: str) -> bool:
    """Prose for people (a changelog, a README, a Markdown or reStructuredText page), which no
    test reads by its name alone; data and config files are not prose."""
    name = PurePosixPath(path)
    return name.suffix.lower() in PROSE_SUFFIXES or name.stem.lower() in PROSE_NAMES


@dataclass
class Split:
    """A commit's change: its parent, what it changed and how, the two patches."""

    parent: str
    status: dict[str, str] = field(default_factory=dict)  # path -> A/M/D/R…
    patch: str = ""
    test_patch: str = ""
    source_lines: int = 0  # lines added and removed in code files outside the tests

    @property
    def test_files(self) -> list[str]:
        return sorted(p for p in self.status if is_test_change(p))

    @property
    def patch_files(self) -> list[str]:
        """Every file of `patch`: the fix's code, docs, data and config, the tests aside."""
        return sorted(p for p in self.status if not is_test_change(p))

    @property
    def source_files(self) -> list[str]:
        return sorted(p for p in self.status if not is_test_change(p) and is_code(p))


def split_commit(repo: Path, commit: str) -> Split:
    """The commit against its first parent, split into patch and test patch."""
    parent = git.resolve_commit(repo, f"{commit}^")
    split = Split(parent=parent)
    for line in git.run_git(
        ["diff", "--no-renames", "--name-status", parent, commit], repo
    ).splitlines():
        status, _, path = line.partition("\t")
        if path:
            split.status[path] = status[:1]
    split.patch = _diff(repo, parent, commit, split.patch_files)
    split.test_patch = _diff(repo, parent, commit, split.test_files)
    for line in (
        git.run_git(
            ["diff", "--no-renames", "--numstat", parent, commit, "--", *split.source_files], repo
        ).splitlines()
        if split.source_files
        else []
    ):
        added, removed, _ = line.split("\t", 2)
        split.source_lines += int(added) if added.isdigit() else 0
        split.source_lines += int(removed) if removed.isdigit() else 0
    return split


def _diff(repo: Path, parent: str, commit: str, paths: list[str]) -> str:
    if not paths:
        return ""
    return git.run_git(
        ["diff", "--no-renames", "--binary", "--full-index", parent, commit, "--", *paths], repo
    )


@dataclass
class FilePatch:
    """One file's part of a unified diff."""

    path: str
    new_file: bool = False
    deleted: bool = False
    hunks: list[tuple[int, list[str], list[str]]] = field(default_factory=list)  # start, old, new


def parse_patch(patch: str) -> list[FilePatch]:
    """The files of a unified diff (git's format) with their hunks."""
    files: list[FilePatch] = []
    current: FilePatch | None = None
    hunk: tuple[int, list[str], list[str]] | None = None
    created, old_path = False, ""
    # lines end at "\n" alone: a carriage return inside a line is the file's (a test case of a
    # bare CR, a CRLF file's line ends), which splitlines() would cut the line at
    lines = patch.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for line in lines:
        if line.startswith("diff --git "):
            current, hunk, created = None, None, False
        elif hunk is None and line.startswith("--- "):
            created = line[4:] == "/dev/null"
            old_path = line[4:].removeprefix("a/")
        elif hunk is None and line.startswith("+++ "):
            path = line[4:]
            if path == "/dev/null":  # deleted: named by the --- line
                current = FilePatch(path=old_path, deleted=True)
            else:
                current = FilePatch(path=path.removeprefix("b/"), new_file=created)
            files.append(current)
        elif (match := HUNK.match(line)) and current is not None:
            hunk = (int(match.group(1)), [], [])
            current.hunks.append(hunk)
        elif hunk is not None and line[:1] in (" ", "-", "+"):
            kind, text = line[0], line[1:]
            if kind in " -":
                hunk[1].append(text)
            if kind in " +":
                hunk[2].append(text)
        elif hunk is not None and line == "":
            hunk[1].append("")
            hunk[2].append("")
    return files


def oracle_edits(before: str, file: FilePatch) -> str:
    """Edit blocks that turn `before` into the file after the patch: one per hunk, its search
    widened with the file's own lines until it is unique."""
    if file.new_file:
        body = "\n".join(file.hunks[0][2]) if file.hunks else ""
        return _block(file.path, "", body)
    lines = before.split("\n")
    blocks = []
    for start, old, new in file.hunks:
        first = max(start - 1, 0)
        lead, trail = 0, 0
        while True:
            search = lines[first - lead : first + len(old) + trail]
            text = "\n".join(search)
            if before.count(text) == 1 and "".join(search).strip():
                break
            if first - lead <= 0 and first + len(old) + trail >= len(lines):
                return _block(file.path, before.rstrip("\n"), after_patch(before, file))
            lead, trail = lead + (first - lead > 0), trail + 1
        replacement = [
            *lines[first - lead : first],
            *new,
            *lines[first + len(old) : first + len(old) + trail],
        ]
        blocks.append(_block(file.path, text, "\n".join(replacement)))
    return "\n".join(blocks)


def after_patch(before: str, file: FilePatch) -> str:
    """The whole file after the patch (also the oracle's fallback when no hunk can be made
    unique), without its final newlines."""
    lines = before.split("\n")
    for start, old, new in reversed(file.hunks):
        first = max(start - 1, 0)
        lines[first : first + len(old)] = new
    return "\n".join(lines).rstrip("\n")


def _block(path: str, search: str, replacement: str) -> str:
    return (
        f'<edit file="{path}">\n<search>\n{search}\n</search>\n'
        f"<replacement>\n{replacement}\n</replacement>\n</edit>"
    )


@dataclass(frozen=True)
class TaskTests:
    """A task's tests as mined: those that fail before the fix (FAIL_TO_PASS) and those that
    pass before and after it (PASS_TO_PASS)."""

    failing: Sequence[str] = ()
    passing: Sequence[str] = ()

    def pins_by_adding(self, path: str) -> bool:
        """Whether lines added to the test file `path` pin behaviour rather than add a test:
        tests of it pass before and after the fix and none of them fails before it — a line
        inserted into an existing test so that it keeps passing under the fix (commander's
        `.argument('[args...]')` once excess arguments became an error). A file that holds
        no test (a fixture, a data module) adds cases to the tests that read it."""
        return not any(file_of_test(t, [path]) for t in self.failing) and any(
            file_of_test(t, [path]) for t in self.passing
        )


def pinning_changes(test_patch: str, tests: TaskTests = TaskTests()) -> list[FilePatch]:
    """The existing test code files of a test patch that pin the behaviour a fix changes, each
    with all its hunks (the lines it adds beside a change — an import the changed tests use —
    come with it, never apart): those whose lines it changes or removes, and those it only adds
    lines to that pin by adding (TaskTests.pins_by_adding). Not a test file it deletes: cra's
    gate never lets a step delete or empty existing tests, so no run could land that."""
    return [
        FilePatch(path=file.path, hunks=file.hunks)
        for file in parse_patch(test_patch)
        if _pins(file, tests)
    ]


def _pins(file: FilePatch, tests: TaskTests) -> bool:
    """Whether a file of a test patch is existing test code that pins behaviour (see
    pinning_changes)."""
    if file.new_file or file.deleted or not is_code(file.path):
        return False
    if any(_changes_lines(h[1], h[2]) for h in file.hunks):
        return True
    return tests.pins_by_adding(file.path)


def adding_changes(test_patch: str, tests: TaskTests = TaskTests()) -> list[FilePatch]:
    """What a test written before the fix holds of a test patch: new test files, test code
    files it only adds lines to (new tests) unless they pin by adding, and the test data files
    whole (the cases and expectations of a data-driven suite are the new test) — not the files
    that pin behaviour (pinning_changes: they come with the fix, whole)."""
    found = []
    for file in parse_patch(test_patch):
        if file.deleted or _pins(file, tests):
            continue
        whole = file.new_file or not is_code(file.path)
        hunks = [h for h in file.hunks if whole or not _changes_lines(h[1], h[2])]
        if hunks:
            found.append(FilePatch(path=file.path, new_file=file.new_file, hunks=hunks))
    return found


def _changes_lines(old: list[str], new: list[str]) -> bool:
    """Whether a hunk changes or removes a line, rather than only adding lines."""
    opcodes = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    return any(tag in ("replace", "delete") for tag, *_ in opcodes)
