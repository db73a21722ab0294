"""Test outcomes and counts from TAP and from node's spec reporter (`node --test`).

Node 20 writes TAP when its output is captured, and the spec reporter on request; node-tap
(`tap`) writes TAP when its output is captured, each file a parent test named by its path; tape
prints a `# name` comment before each test's assertions; a C or shell harness may print plain
TAP. Test ids are the test's name, after the names of the suites and parent tests around it
(`test/calc.js > ints > add`), so that two `add` tests in different suites stay apart; a name
that still repeats gets an ordinal (`add #2`) in the order the output lists it. Ids hold nothing
that changes from run to run: node-tap's `# time=…` is not part of a name, and tape's assertions
are named after their test's comment (`add > should be equal`), never by their number alone.
Pure functions: lines in, data out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from agent.gate.testreport.frames import frame_path, without_position
from agent.models import TestCounts, TestOutcome

# between a suite's or parent test's name and its test's (agent.gate.verdict.names)
SEPARATOR = " > "

# TAP: `ok 1 - add`, `not ok 2 - mul # TODO later`, a subtest indented by 4 spaces per level.
_TAP_TEST = re.compile(
    r"^(?P<indent>(?:    )*)(?P<not>not )?ok\b(?: +\d+)?(?: +-)?(?: +(?P<desc>.*?))?\s*$"
)
_TAP_PLAN = re.compile(r"^1\.\.(?P<n>\d+)\b")
_TAP_BAIL = re.compile(r"^Bail out!")
_DIRECTIVE = re.compile(r"(?:^|\s)#\s*(?P<word>skip|todo)\S*(?:\s.*)?$", re.IGNORECASE)
# node-tap's duration after a test's name (`ok 1 - add # time=4.55ms`): it changes every run.
_TIME = re.compile(r"\s+#\s*time=\S*$", re.IGNORECASE)
# A comment line (tape names each test so: `# add`, then its assertions); not node's or
# node-tap's `# Subtest: name`, which opens a subtest indented below it.
_COMMENT = re.compile(r"^#\s+(?P<text>\S.*)$")
_SUBTEST = "# Subtest:"
# Node marks a describe() block's line as a suite in its YAML block; node counts no suite.
_SUITE = "type: 'suite'"
# Node's summary, in TAP (`# tests 5`) and in the spec reporter (`ℹ tests 5`).
_NODE_SUMMARY = re.compile(
    r"^(?:#|ℹ) (?P<key>tests|pass|fail|cancelled|skipped|todo) +(?P<n>\d+)$"  # tape: `# pass  4`
)
_TESTS_RAN = re.compile(r"^(?:#|ℹ) tests \d+$")
# The spec reporter: `▶ suite`, then `  ✔ add (0.6ms)`, `  ✖ mul (1ms)`, `  ﹣ div (0.1ms) # SKIP`,
# 2 spaces per level; the closing line of a suite or parent test repeats its name.
_SPEC_GROUP = re.compile(r"^(?P<indent>(?:  )*)▶ (?P<name>.+)$")
_SPEC_TEST = re.compile(
    r"^(?P<indent>(?:  )*)(?P<mark>[✔✖﹣]) (?P<name>.+?) \([\d.]+ms\)(?P<directive> # .*)?$"
)
_SPEC_END = "✖ failing tests:"  # the failures again, without their suites, each at its file
_SPEC_AT = re.compile(r"^test at (?P<where>\S+)$")
# Where a failure's YAML block places its test: node's `location: '/abs/test/x.js:4:1'` (the
# test's definition), tape's `at: Test.<anonymous> (/abs/test/x.js:3:22)` (the assertion).
_LOCATION = re.compile(r"^\s+location: '(?P<where>[^']+)'$")
_AT = re.compile(r"^\s+at: (?P<frame>.+)$")


@dataclass(frozen=True)
class _Line:
    """One test line: its nesting depth, name and outcome."""

    depth: int
    name: str
    outcome: TestOutcome
    suite: bool = False
    where: str | None = None  # the file its YAML block names


def is_tap(lines: Sequence[str]) -> bool:
    """True when the output is a TAP stream: a plan line (`1..N`) or node's `# tests N`, at the
    top level — an `ok` or `not ok` line in some other runner's captured output is not TAP."""
    return any(_TAP_PLAN.match(line) or _TESTS_RAN.match(line) for line in lines)


def is_node_spec(lines: Sequence[str]) -> bool:
    """True when the output ends with the summary of node's spec reporter (`ℹ tests N`)."""
    return any(_TESTS_RAN.match(line) and line.startswith("ℹ") for line in lines)


def node_counts(lines: Sequence[str]) -> TestCounts | None:
    """Counts of node's last summary, TAP or spec. A todo test runs, but its verdict does not
    count: it is counted skipped; a cancelled test (its file or parent failed) failed."""
    found: dict[str, int] = {}
    for line in lines:
        match = _NODE_SUMMARY.match(line)
        if match:
            found[match["key"]] = int(match["n"])
    if "tests" not in found:
        return None
    return TestCounts(
        passed=found.get("pass", 0),
        failed=found.get("fail", 0) + found.get("cancelled", 0),
        skipped=found.get("skipped", 0) + found.get("todo", 0),
    )


def _tap_outcome(ok: bool, description: str) -> tuple[str, TestOutcome]:
    """A TAP test's name and outcome: `# SKIP` is skipped; a `# TODO` test is skipped too —
    it runs, but TAP does not count its verdict (a failing TODO test is no failure)."""
    description = _TIME.sub("", description)
    directive = _DIRECTIVE.search(description)  # `\#` (an escaped #) has no space before it
    if directive:
        return _unescape(description[: directive.start()].rstrip()), "skipped"
    return _unescape(description), "passed" if ok else "failed"


def _unescape(name: str) -> str:
    return name.replace("\\#", "#").replace("\\\\", "\\")


def _tap_lines(lines: Sequence[str]) -> list[_Line]:
    """Every TAP test line, marked a suite when node's YAML block under it says so; the text of
    a YAML block (an error message may quote TAP) is not read for tests. In a stream without
    subtests, a top-level test is named after the comment before it, when there is one (tape)."""
    found: list[_Line] = []
    block: str | None = None  # the indentation of the YAML block being read
    titled = not any(line.startswith(_SUBTEST) for line in lines)
    title: str | None = None  # the last top-level comment, in a stream without subtests
    for line in lines:
        if block is not None:
            if line == block + _SUITE:
                found[-1] = replace(found[-1], suite=True)
            elif found[-1].where is None and (where := _yaml_where(line)):
                found[-1] = replace(found[-1], where=where)
            block = None if line == block + "..." else block
        elif match := _TAP_TEST.match(line):
            name, outcome = _tap_outcome(not match["not"], match["desc"] or "")
            depth = len(match["indent"]) // 4
            if title is not None and depth == 0:
                name = SEPARATOR.join([title, name])
            found.append(_Line(depth, name, outcome))
        elif found and line == " " * (4 * found[-1].depth + 2) + "---":
            block = line[:-3]
        elif titled and (comment := _COMMENT.match(line)):
            title = comment["text"]
    return found


def _yaml_where(line: str) -> str | None:
    """The file a line of a failure's YAML block places its test in, or None."""
    if location := _LOCATION.match(line):
        return without_position(location["where"])
    at = _AT.match(line)
    return frame_path(at["frame"]) if at else None


def _full_names(tests: Sequence[_Line]) -> list[str]:
    """Each line's name after its parents'. A subtest comes before the line of its parent
    (TAP 14, node), so the parents of a line are the last lines of lower depth after it: read
    from the end."""
    parents: list[str] = []
    names: list[str] = []
    for test in reversed(tests):
        del parents[test.depth :]
        names.append(SEPARATOR.join([*parents, test.name]))
        parents.append(test.name)
    return names[::-1]


def _ids(tests: Sequence[_Line]) -> dict[str, TestOutcome]:
    """Outcomes by test id (not node's suites)."""
    names = _full_names(tests)
    return numbered([(n, t.outcome) for n, t in zip(names, tests, strict=True) if not t.suite])


def numbered(named: Sequence[tuple[str, TestOutcome]]) -> dict[str, TestOutcome]:
    """Outcomes by id, a repeated id numbered from its second time on (`add #2`)."""
    ids = number([test_id for test_id, _ in named])
    return {test_id: outcome for test_id, (_, outcome) in zip(ids, named, strict=True)}


def number(names: Sequence[str]) -> list[str]:
    """The ids of the names, a repeated name numbered from its second time on (`add #2`)."""
    ids: list[str] = []
    seen: dict[str, int] = {}
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        ids.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return ids


def tap_outcomes(lines: Sequence[str]) -> dict[str, TestOutcome]:
    """Every test a TAP stream names (not node's suites), with its outcome."""
    return _ids(_tap_lines(lines))


def tap_files(lines: Sequence[str]) -> dict[str, str]:
    """The file of each test (and of node's suites) whose YAML block names it, by id."""
    tests = _tap_lines(lines)
    names = _full_names(tests)
    ids = iter(number([n for n, t in zip(names, tests, strict=True) if not t.suite]))
    found: dict[str, str] = {}
    for name, test in zip(names, tests, strict=True):
        test_id = name if test.suite else next(ids)
        if test.where:
            found[test_id] = test.where
    return found


def tap_incomplete(lines: Sequence[str]) -> str | None:
    """Why a TAP stream stopped before its end (`Bail out!`, fewer tests than its plan), or
    None."""
    if any(_TAP_BAIL.match(line) for line in lines):
        return "the TAP stream bailed out: the tests after it did not run"
    plans = [int(m["n"]) for line in lines if (m := _TAP_PLAN.match(line))]
    ran = sum(1 for test in _tap_lines(lines) if test.depth == 0)
    if plans and ran < plans[-1]:
        return f"the TAP plan announced {plans[-1]} tests, {ran} reported a result"
    return None


def spec_outcomes(lines: Sequence[str]) -> dict[str, TestOutcome]:
    """Every test node's spec reporter names, with its outcome. The spec reporter does not
    tell a suite from a parent test: neither is named (node's summary counts a parent test)."""
    groups: list[str] = []
    named: list[tuple[str, TestOutcome]] = []
    for line in lines:
        if line == _SPEC_END:
            break
        if group := _SPEC_GROUP.match(line):
            del groups[len(group["indent"]) // 2 :]
            groups.append(group["name"])
        elif test := _SPEC_TEST.match(line):
            depth = len(test["indent"]) // 2
            del groups[depth + 1 :]
            if len(groups) > depth and groups[depth] == test["name"]:  # a group's closing line
                del groups[depth:]
                continue
            del groups[depth:]
            named.append((SEPARATOR.join([*groups, test["name"]]), _spec_outcome(test)))
    return numbered(named)


def _spec_outcome(test: re.Match[str]) -> TestOutcome:
    """`﹣` is skipped; `✔` or `✖` with a directive (`# TODO`, `# <todo reason>`) is a todo test,
    whose verdict does not count: skipped."""
    if test["mark"] == "﹣" or test["directive"]:
        return "skipped"
    return "passed" if test["mark"] == "✔" else "failed"


def spec_files(lines: Sequence[str]) -> dict[str, str]:
    """The file of each failed test node's spec reporter lists again after `✖ failing tests:`
    (`test at test/x.test.js:4:1`, then `✖ mul (1ms)`), by id: the list names a test without its
    suites, in the order of the tree, so each is the tree's next failed test of that name."""
    if _SPEC_END not in lines:
        return {}
    end = list(lines).index(_SPEC_END)
    failed = [t for t, o in spec_outcomes(lines).items() if o == "failed"]
    found: dict[str, str] = {}
    where: str | None = None
    for line in lines[end + 1 :]:
        if at := _SPEC_AT.match(line):
            where = without_position(at["where"])
        elif where and (test := _SPEC_TEST.match(line)) and not test["indent"]:
            test_id = next((t for t in failed if _last_name(t) == test["name"]), None)
            if test_id is not None:
                failed.remove(test_id)
                found[test_id] = where
            where = None
    return found


def _last_name(test_id: str) -> str:
    return re.sub(r" #\d+$", "", test_id).rsplit(SEPARATOR, 1)[-1]
