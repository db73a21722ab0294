"""Substantive mistakes a small model makes, as pure spoilers of the gold answer: an edit that
applies and is wrong, a fix edited in part, a plan naming the wrong file, a test that checks the
wrong thing. Each takes the gold answer and a `pick` (a misconception's draw, see
misconceptions.py) choosing the variant, and returns the spoiled answer, or None when the answer
offers no such mistake.

Edits are spoiled at the hunk, before the oracle writes its blocks: the hunk's start and old lines
stay (so each block's search text is the file's own, and applies) and its new lines change.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from difflib import SequenceMatcher

from agent.bench.oracle.sight import Hunk, closest
from agent.bench.patches import FilePatch

_NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.])")
_COMPARISON = re.compile(r"(?<![<>=!\-])(<=|>=|<|>)(?![<>=])")
_FLIPPED = {"<=": "<", "<": "<=", ">=": ">", ">": ">="}
_PY_GUARD = re.compile(r"^(\s*(?:if|elif|while)\s+)(.+?)(:\s*(?:#.*)?)$")
_C_GUARD = re.compile(r"^(\s*(?:\}\s*else\s+)?(?:if|while)\s*)\((.*)\)(\s*\{?\s*)$")
_DEF = re.compile(r"^(\s*)(?:async\s+)?def\s+\w+\(.*:\s*$")
_SWAPS = (
    (" == ", " != "),
    (" != ", " == "),
    (" and ", " or "),
    (" or ", " and "),
    ("True", "False"),
    ("False", "True"),
    (" is not ", " is "),
    (" + ", " - "),
    (" - ", " + "),
)
_ASSERT = re.compile(r"^(\s*assert\s+)(.+?)(\s*(?:#.*)?)$")
Runs = list[tuple[int, int, int, int]]  # a hunk's changes: old[i1:i2] became new[j1:j2]


def runs(hunk: Hunk) -> Runs:
    """The places a hunk changes, as (i1, i2, j1, j2): old[i1:i2] became new[j1:j2]."""
    ops = SequenceMatcher(None, hunk[1], hunk[2], autojunk=False).get_opcodes()
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in ops if tag != "equal"]


def _added(hunk: Hunk) -> list[int]:
    """The indices in the hunk's new lines of the lines the fix adds or rewrites."""
    return [j for _, _, j1, j2 in runs(hunk) for j in range(j1, j2) if hunk[2][j].strip()]


def _rewritten(hunk: Hunk, line_variants: Callable[[str], list[str]]) -> list[Hunk]:
    """The hunk with one added line rewritten, for each rewrite `line_variants` offers."""
    start, old, new = hunk
    return [
        (start, old, [*new[:j], variant, *new[j + 1 :]])
        for j in _added(hunk)
        for variant in line_variants(new[j])
    ]


def off_by_one(line: str) -> list[str]:
    """The line with one numeric constant one more or one less, or one comparison made strict
    or loose (`<` ↔ `<=`)."""
    found = []
    for match in _NUMBER.finditer(line):
        value = int(match.group())
        found += [
            line[: match.start()] + str(v) + line[match.end() :]
            for v in (value + 1, value - 1)
            if v >= 0
        ]
    for match in _COMPARISON.finditer(line):
        found.append(line[: match.start()] + _FLIPPED[match.group()] + line[match.end() :])
    return found


def negated_guard(line: str) -> list[str]:
    """The line's `if`/`elif`/`while` condition negated: the guard on the wrong branch."""
    if match := _PY_GUARD.match(line):
        head, cond, tail = match.groups()
        flipped = cond[4:] if cond.startswith("not ") else f"not ({cond})"
        return [f"{head}{flipped}{tail}"]
    if match := _C_GUARD.match(line):
        head, cond, tail = match.groups()
        return [f"{head}(!({cond})){tail}"]
    return []


def swapped_operator(line: str) -> list[str]:
    """The line with one operator or boolean swapped (`==` ↔ `!=`, `and` ↔ `or`, …): the crude
    mistake most suites catch, used only where no subtler one fits."""
    return [line.replace(a, b, 1) for a, b in _SWAPS if a in line]


def partial_hunk(hunk: Hunk) -> list[Hunk]:
    """The hunk with one of its several changes undone: part of the fix."""
    start, old, new = hunk
    changes = runs(hunk)
    if len(changes) < 2:
        return []
    return [(start, old, [*new[:j1], *old[i1:i2], *new[j2:]]) for i1, i2, j1, j2 in changes]


def sibling(before: str, hunk: Hunk) -> list[Hunk]:
    """The hunk's change made elsewhere in the file instead: where the lines it rewrites stand
    again (the same code in a sibling function), or, for lines added after a `def` line, after
    another `def` line as deep."""
    start, old, new = hunk
    lines, here = before.split("\n"), range(start - 1, start - 1 + max(len(old), 1))
    found: list[Hunk] = []
    for i1, i2, j1, j2 in runs(hunk):
        if i2 > i1:
            block = old[i1:i2]
            at = [
                n
                for n in range(len(lines) - len(block) + 1)
                if lines[n : n + len(block)] == block and n not in here
            ]
            found += [(n + 1, block, new[j1:j2]) for n in at]
        elif i1 > 0 and (anchor := _DEF.match(old[i1 - 1])):
            depth = anchor.group(1)
            defs = [
                n
                for n, line in enumerate(lines)
                if (m := _DEF.match(line)) and m.group(1) == depth and n not in here
            ]
            found += [(n + 1, [lines[n]], [lines[n], *new[j1:j2]]) for n in defs]
    return found


def wrong_edit(before: str, hunk: Hunk, pick: int) -> Hunk | None:
    """A wrong version of a gold hunk that still applies: the fix's new lines off by one, its
    guard negated, part of its changes, or the change in a sibling place — whichever the hunk
    offers, `pick` choosing the kind and then the variant; an operator swapped only when none
    fits. None when the hunk offers no mistake."""
    kinds = [
        found
        for found in (
            _rewritten(hunk, off_by_one),
            _rewritten(hunk, negated_guard),
            partial_hunk(hunk),
            sibling(before, hunk),
        )
        if found
    ]
    kinds = kinds or [found for found in [_rewritten(hunk, swapped_operator)] if found]
    kinds = [[h for h in kind if h[2] != hunk[2] and h[1] != h[2]] for kind in kinds]
    kinds = [kind for kind in kinds if kind]
    if not kinds:
        return None
    kind = kinds[pick % len(kinds)]
    return kind[(pick // len(kinds)) % len(kind)]


def places(files: Sequence[FilePatch]) -> list[tuple[str, int]]:
    """Every place a fix changes: (file, hunk index)."""
    return [(f.path, n) for f in files for n in range(len(f.hunks))]


def left_out(files: Sequence[FilePatch], pick: int) -> tuple[str, int] | None:
    """The place a partial fix leaves unedited, or None for a fix of one place."""
    found = places(files)
    return found[pick % len(found)] if len(found) > 1 else None


def wrong_plan(
    paths: Sequence[str], fix: Sequence[str], shown: Sequence[str], pick: int
) -> list[str] | None:
    """A plan's files gone wrong: the fix's first file swapped for the shown file closest to the
    fix (not one of the fix's), or, for a plan of several files, one left out. None when the
    plan offers neither (nothing planned, no other file shown and one file)."""
    others = [p for p in shown if p not in fix]
    near = closest(others, fix) if paths else None
    kinds = (["swap"] if near else []) + (["omit"] if len(paths) > 1 else [])
    if not kinds:
        return None
    which = (pick // len(kinds)) % len(paths)
    if kinds[pick % len(kinds)] == "omit":
        return [p for n, p in enumerate(paths) if n != which]
    first = next((n for n, p in enumerate(paths) if p in fix), 0)
    swapped = [near if n == first else p for n, p in enumerate(paths)]
    return list(dict.fromkeys(p for p in swapped if p))


def wrong_test(source: str, pick: int, among: Collection[int] | None = None) -> str | None:
    """A test that checks the wrong thing or cannot fail: one `assert`'s expected value off by
    one, the assertion negated, or made vacuous (`or True`) — of the lines `among` (default:
    all). None without an assert there."""
    lines = source.split("\n")
    asserts = [
        (n, m)
        for n, line in enumerate(lines)
        if (among is None or n in among) and (m := _ASSERT.match(line))
    ]
    if not asserts:
        return None
    n, match = asserts[(pick // 3) % len(asserts)]
    head, claim, tail = match.groups()
    numbers = list(_NUMBER.finditer(claim))  # the expected value stands last, usually
    variants = [
        f"{head}{claim[: m.start()]}{int(m.group()) + 1}{claim[m.end() :]}{tail}"
        for m in numbers[-1:]
    ]
    variants += [f"{head}not ({claim}){tail}", f"{head}{claim} or True{tail}"]
    lines[n] = variants[pick % len(variants)]
    return "\n".join(lines)


def spoiled_test(file: FilePatch, pick: int) -> FilePatch:
    """A test file's patch with an assert it adds spoiled (wrong_test), in its first hunk that
    adds one."""
    hunks = list(file.hunks)
    for n, hunk in enumerate(hunks):
        spoiled = wrong_test("\n".join(hunk[2]), pick, set(_added(hunk)))
        if spoiled is not None:
            hunks[n] = (hunk[0], hunk[1], spoiled.split("\n"))
            break
    return FilePatch(path=file.path, new_file=file.new_file, deleted=file.deleted, hunks=hunks)
