"""Whether a test written before any fix reproduces the issue, pure: on the base commit it must
fail, and fail the way an issue describes a bug (an assertion, or the error the issue reports),
not because it cannot run (a syntax error, an import of something that is not there, a fixture
it invented) — and it must leave every test that passed before passing, except the tests that
read the data files it adds (a data-driven suite: a new case file fails the test that runs every
case file, or a new case of a test parametrized by its case files: both are its tests). And,
once fix attempts have run, whether the reproduction is all that fails them (fails_only_on):
the evidence on which it may be judged wrong and written again."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from agent.gate.testreport.failures import failure_lines
from agent.gate.testreport.files import tied_files
from agent.gate.verdict import LISTING_SOURCES, file_of_test, judge, names
from agent.models import ValidationResult
from agent.retrieval.indexing.parsing import CODE_LANGUAGES, language_of

# failures that say the test could not run, not that the code misbehaves
CANNOT_RUN = (
    "SyntaxError",
    "IndentationError",
    "ImportError",
    "ModuleNotFoundError",
    "NameError",
    "FixtureLookupError",
    "ReferenceError",  # JavaScript's NameError
)
_EXCEPTION = re.compile(r"\b([A-Z]\w*(?:Error|Exception|Exit))\b")
_NO_FIXTURE = re.compile(r"fixture '([^']+)' not found")
# pytest: "E   ImportError: cannot import name 'x' from 'pkg'", "has no attribute 'x'"; node:
# "SyntaxError: The requested module './a.js' does not provide an export named 'x'",
# "ReferenceError: x is not defined"
_MISSING_NAME = re.compile(
    r"cannot import name '(\w+)'|has no attribute '(\w+)'"
    r"|does not provide an export named '(\w+)'|ReferenceError: (\w+) is not defined"
)
_MISSING_NAME_ERRORS = ("ImportError", "SyntaxError", "ReferenceError")
# node and the runners on it: a test file that requires a file or package that is not there
_NO_MODULE = re.compile(r"Cannot find (?:module|package) '([^']+)'")
_SECTION = re.compile(r"^_{3,} (?P<name>.+?) _{3,}$", re.M)
EXCERPT_CHARS = 2_000


@dataclass(frozen=True)
class ReproductionCheck:
    """The verdict on a reproduction's run on the base commit: its tests that fail there as
    the issue describes, and why it does not reproduce the issue (None: it does)."""

    tests: list[str] = field(default_factory=list)
    problem: str | None = None
    excerpt: str = ""  # the failure, as the run printed it

    @property
    def reproduces(self) -> bool:
        return self.problem is None and bool(self.tests)


def check_reproduction(
    baseline: ValidationResult, run: ValidationResult, files: Sequence[str], issue: str
) -> ReproductionCheck:
    """The reproduction (the test files `files`, added on the base commit) judged by its run
    `run` on that commit against the `baseline` run there without it."""
    broken = [t for t in baseline.passed_tests if t in set(run.failing_tests)]
    tied = tied_files(run.report, baseline.report)  # a failure's location places its test
    data = [f for f in files if _data_file(f, run, tied)]
    if broken and not data:
        return ReproductionCheck(
            problem="it makes tests that passed before fail: " + ", ".join(broken[:5])
        )
    if run.timed_out:
        return ReproductionCheck(problem="the test run timed out with it")
    outcomes = {t: o for t, o in run.report.outcomes.items() if file_of_test(t, files, tied)}
    cases = _new(baseline, run, run.failing_tests) if data else []
    failing = [
        t for t in run.failing_tests if file_of_test(t, files, tied) or t in broken or t in cases
    ]
    failing = list(dict.fromkeys([*failing, *(t for t, o in outcomes.items() if o == "failed")]))
    errors = [t for t, o in outcomes.items() if o == "error"]
    output = run.test_output or ""
    if errors and not failing:
        return ReproductionCheck(
            problem="it errors before its test runs (collection or set-up): "
            + _why(output, errors, issue, "error"),
            excerpt=failure_excerpt(output, errors),
        )
    if not failing:
        ran = [t for t in run.passed_tests if file_of_test(t, files, tied)]
        ran = ran or _new(baseline, run, run.passed_tests)
        if ran:
            return ReproductionCheck(
                problem="it passes on the code before the fix, so it does not show the issue"
            )
        if not run.success and not baseline.failing_tests and run.failing_tests == []:
            return ReproductionCheck(
                problem="the test command failed with it, naming no test: "
                + _why(output, [], issue, "failed"),
                excerpt=failure_excerpt(output, []),
            )
        new = [t for t in run.failing_tests if t not in set(baseline.failing_tests)]
        kind = _kind(output, issue) if new else None
        if kind is not None:  # a runner that names a test it could not load by its own name
            return ReproductionCheck(
                problem=f"it fails because it cannot run ({kind}), not the way the issue "
                "describes: " + ", ".join(new[:5]),
                excerpt=failure_excerpt(output, []),
            )
        return ReproductionCheck(problem="the test run shows no test of " + ", ".join(files))
    kinds = [_kind(_sections(output, t), issue) for t in failing]
    if all(k is not None for k in kinds):
        return ReproductionCheck(
            problem=f"it fails because it cannot run ({kinds[0]}), not the way the issue "
            "describes: an assertion about the behaviour, or the error the issue reports",
            excerpt=failure_excerpt(output, failing),
        )
    reproducing = [t for t, k in zip(failing, kinds, strict=True) if k is None]
    return ReproductionCheck(tests=reproducing, excerpt=failure_excerpt(output, reproducing))


def _data_file(path: str, run: ValidationResult, tied: Mapping[str, str]) -> bool:
    """Whether a reproduction's file is data the tests read, not a test: not code (a case
    file), or code that holds no test of the run (a data-driven suite's `test/fixtures/*.js`
    cases, a helper module)."""
    if language_of(path) not in CODE_LANGUAGES:
        return True
    ids = [*run.report.outcomes, *run.failing_tests, *run.passing_tests]
    return bool(ids) and not any(file_of_test(t, [path], tied) for t in ids)


def fails_only_on(
    goal: Sequence[str],
    run: ValidationResult,
    *,
    reference: ValidationResult,
    baseline: ValidationResult,
) -> list[str]:
    """The reproduction's tests (`goal`) that still fail in a fix attempt's `run` when they are
    all the gate holds against it — nothing that passed in `reference` fails, every test still
    runs — else [] (the fix breaks something else too, or the reproduction passes): a failure
    that may be the test's fault rather than the fix's."""
    if run.timed_out:
        return []
    still = [t for t in goal if any(names(t, f) for f in run.failing_tests)]
    if not still or not judge(reference, run, baseline=baseline).passed:
        return []
    return still


def _new(baseline: ValidationResult, run: ValidationResult, tests: Iterable[str]) -> list[str]:
    """The `tests` of the run that the baseline, which lists every test, did not have: the
    reproduction's (only its files were added), though their ids name no file — a new test, or
    a data-driven suite's case for a data file it added (pytest's `test_invalid[carriage-return]`,
    parametrized by the case files it finds). [] when either run does not list every test."""
    if {baseline.report.source, run.report.source} - LISTING_SOURCES:
        return []
    before = {*baseline.report.outcomes, *baseline.passed_tests, *baseline.failing_tests}
    return [t for t in tests if t not in before]


def _why(output: str, tests: Sequence[str], issue: str, default: str) -> str:
    kinds = [k for t in tests if (k := _kind(_sections(output, t), issue))]
    if kinds:
        return kinds[0]
    found = _EXCEPTION.findall(output)
    return found[-1] if found else default


def _kind(text: str, issue: str) -> str | None:
    """What in a failure's text says the test could not run (None: nothing does). An error the
    issue itself names, or a missing name it asks for, is the behaviour it describes."""
    if (fixture := _NO_FIXTURE.search(text)) is not None:
        return f"fixture '{fixture.group(1)}' not found"
    if (module := _NO_MODULE.search(text)) is not None and not _named(module.group(1), issue):
        return f"cannot find module '{module.group(1)}'"
    for found in _EXCEPTION.finditer(text):
        name = found.group(1)
        if name not in CANNOT_RUN or _named(name, issue):
            continue
        missing = [next(g for g in m.groups() if g) for m in _MISSING_NAME.finditer(text)]
        if name in _MISSING_NAME_ERRORS and any(_named(m, issue) for m in missing):
            continue
        return name
    return None


def _named(name: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None


def _sections(output: str, test: str) -> str:
    """The parts of a test run's output about `test`: pytest's failure sections headed by its
    name, else the whole output (a runner cra cannot split)."""
    starts = list(_SECTION.finditer(output))
    if not starts:
        return output
    name = test.split("::")[-1]
    short = name.split("[")[0]
    kept = []
    for n, match in enumerate(starts):
        header = match.group("name").split(".")[-1]
        if header in (name, short) or header.split("[")[0] == short:
            end = starts[n + 1].start() if n + 1 < len(starts) else len(output)
            kept.append(output[match.start() : end])
    return "\n".join(kept) or output


def failure_excerpt(output: str, tests: Sequence[str]) -> str:
    """What a person reads of the failure: the tests' own sections, at most EXCERPT_CHARS."""
    if not _SECTION.search(output):  # not pytest's: each runner's failure lines, the tests' first
        return failure_lines(output, EXCERPT_CHARS, first=tests)
    text = "\n".join(dict.fromkeys(_sections(output, t) for t in tests)) if tests else output
    text = text.strip("\n")
    return text if len(text) <= EXCERPT_CHARS else "…\n" + text[-EXCERPT_CHARS:]
