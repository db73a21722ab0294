"""The oracle on fixes a planner would plan by whole paths and declared test changes: a module
and its type stub changed together (`pkg/mod.py` is a prefix of `pkg/mod.pyi`), a fix that
removes a function together with the doctest examples in its docstring, which the tests run,
and — with the fix's tests hidden — a change of behaviour that an existing test pinned, which
the fix's commit changes with it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agent.bench.oracle.model import OracleModel
from agent.bench.oracle.plan import next_step_number, planned_steps, replanned_files
from agent.bench.oracle.sight import step_symbols
from agent.bench.patches import TaskTests, adding_changes, parse_patch, pinning_changes
from agent.bench.results import read_results
from agent.bench.tasks import BenchTask, read_tasks
from agent.config.files import ModelConfig
from agent.execute.grouping import groups_of
from agent.execute.plan import ensure_valid_adjustment, with_groups
from agent.execute.plan_material import PlanMaterial, plan_sections
from agent.execute.prompts import Caps
from agent.models import (
    ContextPackage,
    PartPlan,
    PlanAdjustment,
    PlanStep,
    StepResult,
    ValidationResult,
)
from tests.bench.history import commit, replace
from tests.bench.test_bench_cli import cra
from tests.fakes.repos import ISOLATED_GIT_ENV, TEST_COMMAND, init_repo

pytestmark = pytest.mark.usefixtures("isolated_git")

MOD = '''"""Shapes."""


def area(w, h):
    return w * h + 1


def perimeter(w, h):
    return 2 * (w + h) + 1


def old_area(w, h):
    """The area, the old way (deprecated).

    >>> old_area(2, 3)
    6
    """
    return w * h
'''
STUB = """def area(w: int, h: int) -> int: ...
def perimeter(w: int, h: int) -> int: ...
def old_area(w: int, h: int) -> int: ...
"""
AREA_TESTS = (
    "from pkg.mod import area\n\n\ndef test_area():\n"
    "    assert area(2, 3) == 6 and area(2, 3, scale=2) == 12\n\n\n"
    "def test_area_fractional():\n    assert area(2, 3, scale=0.5) == 3\n"
)
TESTS = "from pkg.mod import old_area\n\n\ndef test_old_area():\n    assert old_area(1, 1) == 1\n"


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A repository with the two fixes, and its tasks mined through the CLI."""
    os.environ.update(ISOLATED_GIT_ENV)
    tmp = tmp_path_factory.mktemp("oracle-paths")
    repo = init_repo(tmp / "repo")
    command = f"{TEST_COMMAND} --doctest-modules pkg tests"
    commit(
        repo,
        {
            "cra.toml": f"[testing]\ntest_command = {json.dumps(command)}\ntimeout = 120\n",
            "pkg/__init__.py": "",
            "pkg/mod.py": MOD,
            "pkg/mod.pyi": STUB,
            "tests/__init__.py": "",
            "tests/test_mod.py": TESTS,
        },
        "Initial",
    )
    commit(
        repo,
        {  # the module and its stub together
            "pkg/mod.py": replace(
                repo,
                "pkg/mod.py",
                "def area(w, h):\n    return w * h + 1",
                "def area(w, h, scale=1):\n    return w * h * scale",
            ),
            "pkg/mod.pyi": replace(
                repo,
                "pkg/mod.pyi",
                "def area(w: int, h: int) -> int: ...",
                "def area(w: int, h: int, scale: int = 1) -> int: ...",
            ),
            "tests/test_area.py": AREA_TESTS,
        },
        "Fix area, and let it scale",
    )
    old_area = MOD[MOD.index("\n\ndef old_area") :]
    commit(
        repo,
        {  # a doctested function removed with its examples, and a fix beside it
            "pkg/mod.py": replace(repo, "pkg/mod.py", old_area, "\n").replace(
                "2 * (w + h) + 1", "2 * (w + h)"
            ),
            "pkg/mod.pyi": replace(
                repo, "pkg/mod.pyi", "def old_area(w: int, h: int) -> int: ...\n", ""
            ),
            "tests/test_mod.py": "from pkg.mod import perimeter\n\n\ndef test_perimeter():\n"
            "    assert perimeter(1, 2) == 6\n",
        },
        "Drop old_area, and fix perimeter",
    )
    commit(
        repo,
        {  # a change of behaviour an existing test pinned: the test changes with it
            "pkg/mod.py": replace(
                repo, "pkg/mod.py", "return w * h * scale", "return w * h * int(scale)"
            ),
            "tests/test_area.py": AREA_TESTS.replace("scale=0.5) == 3", "scale=0.5) == 0"),
        },
        "area takes whole scales only",
    )
    tasks = tmp / "tasks.jsonl"
    done = cra(tmp, "bench", "mine", "--repo", str(repo), "--output", str(tasks), "--jobs", "1")
    assert done.returncode == 0, done.stderr
    assert "3 task(s) from 4 commit(s)" in done.stderr, done.stderr
    return repo, tasks, tmp


@pytest.mark.parametrize("tests", ["hidden", "given"])
def test_the_oracle_resolves_a_stub_a_removed_doctested_function_and_a_pinned_behaviour(
    tests: str,
    mined: tuple[Path, Path, Path],
    tmp_path: Path,
) -> None:
    repo, tasks, _ = mined
    results = tmp_path / "results.jsonl"

    done = cra(
        tmp_path,
        "bench",
        "run",
        str(tasks),
        "--repo",
        str(repo),
        "--results",
        str(results),
        "--jobs",
        "1",
        "--tests",
        tests,
    )

    assert done.returncode == 0, done.stderr
    found = {r.instance_id: r for r in read_results(results)}
    assert len(found) == 3 and all(r.resolved for r in found.values()), found
    assert {r.tests for r in found.values()} == {tests}


def test_a_step_on_the_stub_gets_the_stubs_edits(mined: tuple[Path, Path, Path]) -> None:
    _, tasks, _ = mined
    task = next(t for t in read_tasks(tasks) if _scales(t))
    oracle = _oracle(task)
    answer = oracle.complete(
        "",
        "<task>\nFix area\n</task>\n<step>\nApply the fix to "
        "pkg/mod.pyi\nFiles: pkg/mod.pyi\n</step>",
        stage="implement",
    )
    assert '<edit file="pkg/mod.pyi">' in answer.text and 'pkg/mod.py"' not in answer.text


def test_a_step_whose_gold_edits_remove_doctest_examples_declares_it(
    mined: tuple[Path, Path, Path],
) -> None:
    _, tasks, _ = mined
    task = next(t for t in read_tasks(tasks) if "-def old_area" in t.patch)
    oracle = _oracle(task)
    plan = json.loads(oracle.complete("", "<task>\nt\n</task>", stage="part_plan").text)
    declared = {s["target_files"][0]: s["changes_existing_tests"] for s in plan["steps"]}
    assert declared == {"pkg/mod.py": True, "pkg/mod.pyi": False}
    asked = oracle.complete("", "diff --git a/pkg/mod.py b/pkg/mod.py\n", stage="gate_test_change")
    other = oracle.complete(
        "", "diff --git a/pkg/other.py b/pkg/other.py\n", stage="gate_test_change"
    )
    assert (asked.text, other.text) == ("yes", "no")


def _oracle(task: BenchTask) -> OracleModel:
    before = {f.path: _before(task, f.path) for f in parse_patch(task.patch)}
    return OracleModel(ModelConfig(model="oracle"), task, before)


def _before(task: BenchTask, path: str) -> str:
    """The file at the task's base, rebuilt from the module text above (no checkout needed)."""
    return (
        {"pkg/mod.py": MOD, "pkg/mod.pyi": STUB}[path]
        if _scales(task)
        else {
            "pkg/mod.py": MOD.replace(
                "def area(w, h):\n    return w * h + 1",
                "def area(w, h, scale=1):\n    return w * h * scale",
            ),
            "pkg/mod.pyi": STUB.replace(
                "def area(w: int, h: int) -> int: ...",
                "def area(w: int, h: int, scale: int = 1) -> int: ...",
            ),
        }[path]
    )


def _scales(task: BenchTask) -> bool:
    """Whether the task is the fix of the module and its stub (the first)."""
    return "+def area(w, h, scale=1):" in task.patch


def test_with_the_tests_hidden_the_tests_the_fix_changes_land_last() -> None:
    patch = (
        "diff --git a/pkg/data.toml b/pkg/data.toml\n--- a/pkg/data.toml\n"
        "+++ b/pkg/data.toml\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
        "diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n"
        "@@ -1 +1 @@\n-X = 1\n+X = 2\n"
    )
    test_patch = (
        "diff --git a/tests/test_mod.py b/tests/test_mod.py\n--- a/tests/test_mod.py\n"
        "+++ b/tests/test_mod.py\n@@ -1 +1 @@\n-assert X == 1\n+assert X == 2\n"
    )
    task = BenchTask(
        instance_id="t",
        repo="r",
        base_commit="b",
        patch=patch,
        test_patch=test_patch,
        problem_statement="X must be 2",
        FAIL_TO_PASS=[],
    )
    before = {
        "pkg/data.toml": "a = 1\n",
        "pkg/mod.py": "X = 1\n",
        "tests/test_mod.py": "assert X == 1\n",
    }
    oracle = OracleModel(ModelConfig(model="oracle"), task, before, hidden=True)
    plan = json.loads(oracle.complete("", "<task>\nt\n</task>", stage="part_plan").text)
    assert [s["target_files"][0] for s in plan["steps"]] == [
        "pkg/mod.py",
        "pkg/data.toml",
        "tests/test_mod.py",
    ]
    assert [s["changes_existing_tests"] for s in plan["steps"]] == [False, False, True]


def test_with_the_tests_hidden_a_changelog_lands_after_the_tests_the_fix_changes() -> None:
    """Two code files, a changelog and two pinned test files: the group of at most
    MAX_GROUP_STEPS holds the code and the tests (a test the fix removes is gone when the gate
    judges the fix), the changelog lands alone after it (sqlparse's fix of issue 772)."""

    def diff(path: str, old: str, new: str) -> str:
        header = f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        return f"{header}@@ -1 +1 @@\n-{old}\n+{new}\n"

    task = BenchTask(
        instance_id="t",
        repo="r",
        base_commit="b",
        patch=diff("CHANGELOG", "Nothing yet.", "Fixed.")
        + diff("pkg/a.py", "X = 1", "X = 2")
        + diff("pkg/b.py", "Y = 1", "Y = 2"),
        test_patch=diff("tests/test_a.py", "assert X == 1", "assert X == 2")
        + diff("tests/test_b.py", "assert Y == 1", "assert Y == 2"),
        problem_statement="X and Y must be 2",
        FAIL_TO_PASS=[],
    )
    before = {
        "CHANGELOG": "Nothing yet.\n",
        "pkg/a.py": "X = 1\n",
        "pkg/b.py": "Y = 1\n",
        "tests/test_a.py": "assert X == 1\n",
        "tests/test_b.py": "assert Y == 1\n",
    }
    oracle = OracleModel(ModelConfig(model="oracle"), task, before, hidden=True)
    steps = json.loads(oracle.complete("", "<task>\nt\n</task>", stage="part_plan").text)["steps"]
    assert [s["target_files"][0] for s in steps] == [
        "pkg/a.py",
        "pkg/b.py",
        "tests/test_a.py",
        "tests/test_b.py",
        "CHANGELOG",
    ]
    assert [len(s["lands_with"]) for s in steps] == [3, 3, 3, 3, 0]


def test_the_oracle_lands_every_pinned_test_with_the_fix_beyond_the_group_limit() -> None:
    """A changed default that many test files pin: the fix and all their updates land as one
    change (the group limit counts changes, not test updates)."""

    def diff(path: str, old: str, new: str) -> str:
        header = f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        return f"{header}@@ -1 +1 @@\n-{old}\n+{new}\n"

    tests = [f"tests/test_{n}.py" for n in range(6)]
    task = BenchTask(
        instance_id="t",
        repo="r",
        base_commit="b",
        patch=diff("pkg/a.py", "X = 1", "X = 2") + diff("CHANGELOG", "Nothing yet.", "Fixed."),
        test_patch="".join(diff(t, "assert X == 1", "assert X == 2") for t in tests),
        problem_statement="X must be 2",
        FAIL_TO_PASS=[],
    )
    before = {"CHANGELOG": "Nothing yet.\n", "pkg/a.py": "X = 1\n"}
    before |= dict.fromkeys(tests, "assert X == 1\n")
    oracle = OracleModel(ModelConfig(model="oracle"), task, before, hidden=True)
    steps = json.loads(oracle.complete("", "<task>\nt\n</task>", stage="part_plan").text)["steps"]
    assert [s["target_files"][0] for s in steps] == ["pkg/a.py", *tests, "CHANGELOG"]
    assert [len(s["lands_with"]) for s in steps] == [6] * 7 + [0]
    assert [s["changes_existing_tests"] for s in steps] == [False] + [True] * 6 + [False]
    plan = with_groups(
        PartPlan.model_validate(
            {"part_id": "p1", "task_summary": "t", "rationale": "r", "steps": steps}
        )
    )
    assert [len(g) for g in groups_of(plan.steps)] == [7, 1]


def test_a_step_names_the_definitions_its_file_s_hunks_touch_that_its_prompt_shows() -> None:
    """The innermost definitions (a method, not its class), in the file's order; the
    context-honest oracle names only those whose name its plan prompt shows."""
    before = (
        "class Calc:\n"
        "    def add(self, a, b):\n        return a - b\n\n"
        "    def mul(self, a, b):\n        return a + b\n\n"
        "    def neg(self, a):\n        return a\n"
    )
    patch = (
        "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n"
        "@@ -3 +3 @@\n-        return a - b\n+        return a + b\n"
        "@@ -6 +6 @@\n-        return a + b\n+        return a * b\n"
    )
    [file] = parse_patch(patch)
    assert step_symbols(file, before, None, 4) == ["Calc.add", "Calc.mul"]
    assert step_symbols(file, before, None, 1) == ["Calc.add"]
    assert step_symbols(file, before, "the outline shows mul(self, a, b)", 4) == ["Calc.mul"]
    assert step_symbols(file, before, "nothing named", 4) == []


def adjustment_prompt(*, failed: bool, remaining: list[str], output: str, landed: str = "") -> str:
    """An adjustment prompt as plan_material.plan_sections writes it."""
    steps = [
        PlanStep(id=f"s{n}", description="d", target_files=[p]) for n, p in enumerate(remaining, 5)
    ]
    material = PlanMaterial(
        landed or None,
        prior_results=[StepResult(success=not failed, error_info="gate")],
        test_results=[ValidationResult(success=False, test_output=output, failing_tests=["x"])],
        remaining_steps=steps,
        completed_steps=[
            PlanStep(id="s1", description="d", target_files=["lib/a.js"]),
            PlanStep(id="s2", description="d", target_files=["tests/a.test.js"]),
        ],
    )
    return "\n\n".join(plan_sections(ContextPackage(task="t"), "t", material, Caps()))


def test_after_a_failed_step_the_fix_s_files_its_prompt_now_shows_are_planned_with_it() -> None:
    fix = ["lib/a.js", "tests/a.test.js", "tests/b.test.js", "tests/c.test.js", "CHANGELOG.md"]
    output = "FAIL tests/b.test.js\nFAIL tests/c.test.js"
    user = adjustment_prompt(failed=True, remaining=["CHANGELOG.md"], output=output)
    shown = {p for p in fix if p in user}.__contains__
    assert replanned_files(user, fix, shown) == fix

    landed = "diff --git a/lib/a.js b/lib/a.js\n"
    user = adjustment_prompt(failed=True, remaining=[], output=output, landed=landed)
    assert replanned_files(user, fix, {p for p in fix if p in user}.__contains__) == fix[1:4]


def test_steps_planned_anew_take_ids_no_completed_step_holds() -> None:
    """The planner's rule: a completed step's id is never reused — a re-listed one is
    dropped, and the new group would lose its failed steps' files."""
    fix = ["lib/a.js", "tests/a.test.js", "tests/b.test.js"]
    user = adjustment_prompt(failed=True, remaining=[], output="FAIL tests/b.test.js")
    steps = planned_steps(fix, set(fix[1:]), lambda _: [], first=next_step_number(user))
    assert [s["id"] for s in steps] == ["s3", "s4", "s5"]
    assert steps[0]["lands_with"] == ["s4", "s5"] and steps[2]["depends_on"] == ["s4"]
    revised = PlanAdjustment(revised_steps=[PlanStep(**s) for s in steps], rationale="r")
    completed = [PlanStep(id="s1", description="d"), PlanStep(id="s2", description="d")]
    assert ensure_valid_adjustment(revised, completed).revised_steps == revised.revised_steps


def test_the_plan_stands_after_a_passed_step_or_when_nothing_new_is_shown() -> None:
    fix = ["lib/a.js", "tests/a.test.js", "tests/b.test.js"]
    passed = adjustment_prompt(failed=False, remaining=[], output="FAIL tests/b.test.js")
    assert replanned_files(passed, fix, {p for p in fix if p in passed}.__contains__) is None
    nothing = adjustment_prompt(failed=True, remaining=[], output="FAIL tests/a.test.js")
    assert replanned_files(nothing, fix, {p for p in fix if p in nothing}.__contains__) is None


def test_lines_added_to_a_test_file_whose_tests_pass_before_and_after_pin_behaviour() -> None:
    """commander 58c28eb13da5: `.argument('[args...]')` inserted into existing tests so that
    they keep passing once excess arguments are an error is no new test; lines added to a file
    whose tests fail before the fix are, and so are cases added to a file that holds no test."""

    def adds(path: str, line: str) -> str:
        header = f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        return f"{header}@@ -1,2 +1,3 @@\n program\n+{line}\n   .parse();\n"

    patch = (
        adds("tests/unknown.test.js", "  .argument('[args...]')")
        + adds("tests/excess.test.js", "  .allowExcessArguments(false)")
        + adds("tests/fixtures/cases.js", "  ['1.2.3', '-l'],")
    )
    tests = TaskTests(
        failing=["tests/excess.test.js"],
        passing=["tests/unknown.test.js > allowUnknownOption > passes", "tests/excess.test.js > a"],
    )
    assert [f.path for f in pinning_changes(patch, tests)] == ["tests/unknown.test.js"]
    assert [f.path for f in adding_changes(patch, tests)] == [
        "tests/excess.test.js",
        "tests/fixtures/cases.js",
    ]
    assert pinning_changes(patch) == []  # the tests unknown: added lines are new tests


def test_a_test_file_the_test_patch_deletes_is_read_and_never_written() -> None:
    """tomli 9e56735f2273: the fix removes a feature and its test patch deletes
    `tests/test_flags.py`, whose tests the fix breaks. The patch names the deleted file, but
    the oracle writes none of it: cra's gate never lets a step delete or empty existing tests
    (an emptied file's tests "did not run"), so with the tests hidden no run can resolve it."""
    gone = "import tomli\n\n\ndef test_flag():\n    assert tomli.FLAG\n"
    patch = (
        "diff --git a/tests/test_flags.py b/tests/test_flags.py\ndeleted file mode 100644\n"
        "--- a/tests/test_flags.py\n+++ /dev/null\n@@ -1,5 +0,0 @@\n"
        + "".join(f"-{line}\n" for line in gone.splitlines())
    )
    [parsed] = parse_patch(patch)
    assert (parsed.path, parsed.deleted) == ("tests/test_flags.py", True)
    assert pinning_changes(patch) == [] and adding_changes(patch) == []


def test_a_carriage_return_inside_a_line_of_the_patch_is_the_file_s() -> None:
    """tomli 1759a4148086: the new case file holds a bare CR (the bug: it must not parse); cut
    there, the oracle wrote a case without it, which no fix could make fail to parse."""
    patch = (
        "diff --git a/tests/data/cr.toml b/tests/data/cr.toml\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/tests/data/cr.toml\n@@ -0,0 +1,2 @@\n"
        '+s="""a bare\rcr"\n+"""\n\\ No newline at end of file\n'
    )
    [file] = parse_patch(patch)
    assert file.hunks == [(0, [], ['s="""a bare\rcr"', '"""'])]
