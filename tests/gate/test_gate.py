"""agent.gate.verdict: the gate files, and the verdict on a test run against the accepted state."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.gate.gate_files import (
    command_files,
    gate_changes,
    gate_role,
    may_be_gate_file,
    with_recorded_tests,
)
from agent.gate.testing_sections import testing_sections as sections_of
from agent.gate.testreport.outcomes import read_report
from agent.gate.verdict import file_of_test, judge, rejection_text
from agent.models import TestCounts, TestOutcome, TestReport, ValidationResult
from agent.retrieval.indexing.snapshots import recorded_test_file

# --- the gate files --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "role"),
    [
        ("cra.toml", "cra_config"),
        (".github/cra.toml", "cra_config"),
        ("conftest.py", "runner_config"),
        ("src/pkg/tests/conftest.py", "runner_config"),
        ("pytest.ini", "runner_config"),
        ("tox.ini", "runner_config"),
        ("jest.config.ts", "runner_config"),
        ("web/vitest.config.mjs", "runner_config"),
        (".mocharc.yml", "runner_config"),
        ("pytest.toml", "runner_config"),  # pytest 9 reads it before any other
        (".pytest.toml", "runner_config"),
        ("web/vite.config.ts", "runner_config"),  # vitest reads its `test` section
        ("tests/test_ops.py", "test"),
        ("calc/tests.py", "test"),  # Django's layout
        ("tests.py", "test"),
        ("pkg/ops_tests.py", "test"),
        ("pkg/testmath.py", "test"),  # unittest discovers test*.py
        ("testdata/mul.txt", "test"),  # what a test compares against
        ("pkg/testdata/input.json", "test"),
        ("src/snapshots/calc__mul.snap", "test"),
        ("web/__snapshots__/app.test.js.snap", "test"),
        ("fixtures/users.json", "test"),
        ("docs/testimonials.md", None),
        ("pkg/ops_test.go", "test"),
        ("src/sum.test.js", "test"),
        ("lib/calc-test.js", "test"),  # node --test's defaults
        ("test-more.mjs", "test"),
        ("docs/load-test.md", None),
        (".npmrc", "runner_config"),  # script-shell=/bin/true: `npm test` exits 0
        ("web/.yarnrc.yml", "runner_config"),
        (".cargo/config.toml", "runner_config"),  # a runner, an alias, rustflags
        ("crates/calc/.cargo/config", "runner_config"),
        ("config.toml", None),
        ("src/lib.rs", None),  # its tests inside it count: see gate_changes
        ("calc/ops.py", None),
        ("pyproject.toml", None),
        ("docs/cra.toml", None),
    ],
)
def test_gate_roles_by_name(path: str, role: str | None) -> None:
    assert gate_role(path) == role


@pytest.mark.parametrize(
    ("path", "test_file"),
    [
        ("tap-snapshots/test/bin/semver.js.test.cjs", "test/bin/semver.js"),
        ("tap-snapshots/test/index.js.test.js", "test/index.js"),
        ("src/__tests__/__snapshots__/parse.test.ts.snap", "src/__tests__/parse.test.ts"),
        ("__snapshots__/cli.spec.js.snap", "cli.spec.js"),
        ("tests/__snapshots__/test_render.ambr", "tests/test_render.py"),
        ("tap-snapshots/.test.cjs", None),
        ("test/fixtures/data.json", None),
        ("test/index.js", None),
        ("tests/__snapshots__/notes.txt", None),
    ],
)
def test_a_snapshot_names_the_test_file_whose_output_it_records(
    path: str, test_file: str | None
) -> None:
    assert recorded_test_file(path) == test_file


def test_a_changed_snapshot_places_its_test_files_tests() -> None:
    paths = with_recorded_tests(["tap-snapshots/test/bin/semver.js.test.cjs", "test/a.js"])
    assert paths == ["tap-snapshots/test/bin/semver.js.test.cjs", "test/a.js", "test/bin/semver.js"]
    assert file_of_test("test/bin/semver.js > inc > major", paths) == "test/bin/semver.js"


def test_the_test_command_names_its_own_files() -> None:
    assert command_files("sh ./scripts/run_tests.sh -x") >= {"scripts/run_tests.sh"}
    assert command_files("make test") >= {"Makefile"}
    assert command_files("npm test --silent") >= {"package.json"}
    assert command_files("python -m pytest -q") == set()
    assert command_files(None) == set()


PYPROJECT = (
    '[project]\nname = "calc"\ndependencies = []\n\n[tool.pytest.ini_options]\naddopts = "-q"\n'
)


def test_a_sectioned_file_is_a_gate_file_only_when_its_test_sections_change() -> None:
    new_dependency = PYPROJECT.replace("[]", '["attrs"]')
    deselect = PYPROJECT.replace('"-q"', "\"-q -k 'not mul'\"")
    assert gate_changes({"pyproject.toml": (PYPROJECT, new_dependency)}, None) == []
    [change] = gate_changes({"pyproject.toml": (PYPROJECT, deselect)}, None)
    assert (change.path, change.role, change.status) == (
        "pyproject.toml",
        "runner_config",
        "modified",
    )


def test_setup_cfg_and_package_json_sections() -> None:
    cfg = "[metadata]\nname = calc\n[tool:pytest]\naddopts = -q\n"
    assert gate_changes({"setup.cfg": (cfg, cfg.replace("calc", "calc2"))}, None) == []
    assert gate_changes({"setup.cfg": (cfg, cfg.replace("-q", "-q -x"))}, None)
    pkg = '{"name": "a", "scripts": {"test": "jest"}, "dependencies": {}}'
    assert gate_changes({"package.json": (pkg, pkg.replace("{}", '{"b": "1"}'))}, None) == []
    assert gate_changes({"package.json": (pkg, pkg.replace("jest", "true"))}, None)
    assert gate_changes({"package.json": (pkg, pkg.replace("{}", '{"b": "1"}'))}, "npm test")


def test_the_task_runners_sections_of_pyproject() -> None:
    """`pdm run test` and `poe test` run what pyproject.toml's sections say."""
    pdm = '[project]\nname = "calc"\n\n[tool.pdm.scripts]\ntest = "pytest -q"\n'
    poe = '[project]\nname = "calc"\n\n[tool.poe.tasks]\ntest = "pytest -q"\n'
    for text in (pdm, poe):
        assert gate_changes({"pyproject.toml": (text, text.replace("pytest -q", "true"))}, None)
        assert gate_changes({"pyproject.toml": (text, text.replace('"calc"', '"c2"'))}, None) == []


def test_created_and_deleted_gate_files() -> None:
    changes = gate_changes(
        {
            "conftest.py": (None, "x = 1\n"),
            "tests/test_a.py": ("def test_a(): pass\n", None),
            "calc/ops.py": ("a\n", "b\n"),
        },
        None,
    )
    assert [(c.path, c.status) for c in changes] == [
        ("conftest.py", "created"),
        ("tests/test_a.py", "deleted"),
    ]


def test_tests_are_placed_in_their_files() -> None:
    files = ["tests/test_ops.py", "tests/test_more.py"]
    assert file_of_test("tests/test_ops.py::test_mul[1]", files) == "tests/test_ops.py"
    assert file_of_test("tests.test_more.MoreTest.test_x", files) == "tests/test_more.py"
    assert file_of_test("tests/test_other.py::test_x", files) is None


# --- the verdict -----------------------------------------------------------------------------

ADD, SUB, MUL = (
    "tests/test_ops.py::test_add",
    "tests/test_ops.py::test_sub",
    "tests/test_ops.py::test_mul",
)


def run(
    outcomes: dict[str, TestOutcome] | None = None,
    *,
    exit_code: int | None = None,
    source: str = "junit",
    timed_out: bool = False,
) -> ValidationResult:
    """A test run with per-test outcomes as a JUnit report would give them."""
    outcomes = outcomes or {}
    failing = [t for t, o in outcomes.items() if o in ("failed", "error")]
    passing = [t for t, o in outcomes.items() if o == "passed"]
    if exit_code is None and not timed_out:
        exit_code = 1 if failing else 0
    counts = (
        None
        if source == "none"
        else TestCounts(
            passed=len(passing),
            failed=len(failing),
            skipped=sum(o == "skipped" for o in outcomes.values()),
            xfailed=sum(o == "xfailed" for o in outcomes.values()),
        )
    )
    report = TestReport(
        source=source,
        counts=counts,  # type: ignore[arg-type]
        outcomes=outcomes if source in ("junit", "names") else {},
    )
    return ValidationResult(
        success=exit_code == 0 and not timed_out,
        exit_code=exit_code,
        failing_tests=failing,
        passing_tests=passing,
        report=report,
        timed_out=timed_out,
    )


RED = run({ADD: "passed", SUB: "passed", MUL: "failed"})
GREEN = run({ADD: "passed", SUB: "passed", MUL: "passed"})


def test_a_real_fix_passes() -> None:
    assert judge(RED, GREEN, targets=[MUL]).passed


def test_a_target_must_pass_in_the_step_s_own_run_even_when_its_change_was_allowed() -> None:
    """A declared change of a test the step must make pass does not excuse it failing: only
    the original run (its old version over the new code) may see it fail."""
    still = run({ADD: "passed", SUB: "passed", MUL: "failed"})
    declared = lambda t: t == MUL  # noqa: E731
    verdict = judge(RED, still, targets=[MUL], allowed=declared)
    assert not verdict.passed and MUL in verdict.problems[0]
    assert judge(RED, still, targets=[MUL], allowed=declared, original=True).passed


def test_a_test_that_passed_before_and_fails_does_not_pass_though_the_command_exited_0() -> None:
    hidden = run({ADD: "failed", SUB: "passed", MUL: "passed"}, exit_code=0)  # `pytest; true`
    verdict = judge(RED, hidden, targets=[MUL])
    assert not verdict.passed
    assert verdict.problems == [
        "1 test(s) passed before and now fail (though the test command exited 0): " + ADD
    ]
    assert judge(RED, hidden, targets=[MUL], allowed=lambda t: t == ADD).passed  # declared
    assert judge(
        run({ADD: "failed", MUL: "failed"}, exit_code=0),  # failed at the baseline
        run({ADD: "failed", MUL: "passed"}, exit_code=0),
        targets=[MUL],
    ).passed


def test_a_deleted_test_does_not_pass_even_when_everything_left_passes() -> None:
    verdict = judge(RED, run({ADD: "passed", SUB: "passed"}))
    assert not verdict.passed and verdict.weakened
    assert any("no longer ran" in p and MUL in p for p in verdict.problems)


def test_a_failure_s_own_result_goes_with_the_failure_but_a_deleted_failing_test_does_not() -> None:
    """tap names an error thrown inside a subtest as a result of its own; fixed, the subtest
    passes and that result is gone. A failing test gone with no test holding it still counts."""
    case = "test/classes/range.js > range parsing > 1.2.3a null"
    thrown = case + " > Invalid comparator: 1.2.3a"
    other = "test/classes/range.js > range parsing > 1.2.3 null"
    before = run({other: "passed", case: "failed", thrown: "failed"}, source="names")
    after = run({other: "passed", case: "passed"}, source="names")
    assert judge(before, after, targets=[case]).passed
    passed_before = run({other: "passed", case: "failed", thrown: "passed"}, source="names")
    verdict = judge(passed_before, after, targets=[case])  # a passing result gone still counts
    assert any("1 test(s) no longer ran" in p and thrown in p for p in verdict.problems)
    deleted = run({other: "passed"}, source="names")
    verdict = judge(before, deleted)
    assert any("2 test(s) no longer ran" in p for p in verdict.problems)


def test_a_replaced_test_file_does_not_pass() -> None:
    verdict = judge(RED, run({"tests/test_ops.py::test_ok": "passed"}), targets=[MUL])
    assert not verdict.passed
    assert any("3 test(s) no longer ran" in p for p in verdict.problems)
    assert any("did not run" in p for p in verdict.problems)


@pytest.mark.parametrize("outcome", ["skipped", "xfailed"])
def test_a_test_that_ran_and_is_now_skipped_or_xfail_does_not_pass(outcome: TestOutcome) -> None:
    verdict = judge(RED, run({ADD: "passed", SUB: "passed", MUL: outcome}))
    assert not verdict.passed
    assert any("skipped or marked xfail" in p for p in verdict.problems)


def test_a_test_skipped_at_baseline_may_stay_skipped() -> None:
    before = run({ADD: "passed", SUB: "skipped", MUL: "failed"})
    assert judge(before, run({ADD: "passed", SUB: "skipped", MUL: "passed"})).passed


def test_a_run_that_collected_nothing_never_passes() -> None:
    verdict = judge(RED, run({}, exit_code=0))
    assert not verdict.passed and "no test was collected or run" in verdict.problems


def test_a_run_that_ended_before_the_runner_reported_never_passes() -> None:
    verdict = judge(RED, run(exit_code=0, source="none"))
    assert not verdict.passed
    assert any("before the test runner reported" in p for p in verdict.problems)


def test_without_any_report_the_exit_code_decides() -> None:
    unknown_red = run(exit_code=1, source="none")
    assert judge(unknown_red, run(exit_code=0, source="none")).passed


def test_counts_guard_runners_that_do_not_name_their_tests() -> None:
    before = run({ADD: "passed", SUB: "passed", MUL: "failed"}, source="summary")
    fewer = run({ADD: "passed", SUB: "passed"}, source="summary")
    skipped = run({ADD: "passed", SUB: "passed", MUL: "skipped"}, source="summary")
    assert not judge(before, fewer).passed
    assert not judge(before, skipped).passed
    assert judge(
        before, run({ADD: "passed", SUB: "passed", MUL: "passed"}, source="summary")
    ).passed


def test_new_tests_are_welcome() -> None:
    more = run({ADD: "passed", SUB: "passed", MUL: "passed", "tests/test_new.py::t": "passed"})
    assert judge(RED, more, targets=[MUL]).passed


def test_a_target_that_no_longer_exists_does_not_pass() -> None:
    verdict = judge(
        RED, run({ADD: "passed", SUB: "passed", "tests/test_x.py::t": "passed"}), targets=[MUL]
    )
    assert not verdict.passed


def test_a_regression_fails_and_a_fixed_test_broken_again_fails() -> None:
    assert not judge(GREEN, run({ADD: "failed", SUB: "passed", MUL: "passed"})).passed
    # the accepted state after a step fixed MUL; the baseline still had it failing
    assert not judge(GREEN, RED, baseline=RED).passed


def test_with_a_red_baseline_old_failures_may_remain() -> None:
    red = run({ADD: "failed", SUB: "passed", MUL: "failed"})
    assert judge(red, run({ADD: "failed", SUB: "passed", MUL: "passed"}), targets=[MUL]).passed
    assert not judge(red, red, targets=[MUL]).passed


def test_an_unexplained_failure_and_a_timeout_never_pass() -> None:
    assert not judge(RED, run(exit_code=2, source="none")).passed
    verdict = judge(RED, run(timed_out=True, source="none"))
    assert not verdict.passed and any("timed out" in p for p in verdict.problems)


def test_declared_changes_are_allowed_and_listed() -> None:
    changed = run({ADD: "passed", SUB: "passed", "tests/test_ops.py::test_mul_new": "passed"})

    def in_test_ops(test_id: str) -> bool:
        return test_id.startswith("tests/test_ops.py")

    verdict = judge(RED, changed, allowed=in_test_ops)
    assert verdict.passed and verdict.changed_tests == [MUL]


def test_the_rejection_tells_the_model_what_to_do() -> None:
    text = rejection_text(["1 test(s) no longer ran: t"], original=True, weakened=True)
    assert "original test files" in text and "Fix the source code" in text
    assert "Fix the source code" not in rejection_text(["1 test(s) fail that did not fail"])


def test_a_file_that_could_not_be_collected_runs_once_its_tests_do() -> None:
    """A fix that makes an uncollectable test module import: its tests now run and pass."""
    before = run({ADD: "passed", "tests/test_flags.py": "error"})
    after = run({ADD: "passed", "tests/test_flags.py::test_relative": "passed"})

    assert judge(before, after, targets=["tests/test_flags.py"]).passed
    assert not judge(before, run({ADD: "passed"}), targets=["tests/test_flags.py"]).passed


@pytest.mark.parametrize(
    "path",
    [
        "calc/ops.py",
        "src/app/main.go",
        "README.md",
        "docs/conf.py",
        "lib/index.js",
        "tests/test_ops.py",
        "conftest.py",
        "sub/conftest.py",
        "pytest.ini",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
        "package.json",
        "jest.config.js",
        "run_tests.sh",
        "cra.toml",
        ".github/cra.toml",
        "spec/widget.spec.ts",
        "pkg/ops_test.go",
    ],
)
def test_only_files_that_may_be_gate_files_can_change_the_gate(path: str) -> None:
    command = "sh run_tests.sh && pytest -q"
    change = {path: ("[tool.pytest.ini_options]\naddopts = '-q'\n", "x = 1\n")}
    if not may_be_gate_file(path, command):
        assert gate_changes(change, command) == []
    # Python source (doctests, code that reaches into the test runner) and text files
    # (doctests) may be
    assert may_be_gate_file(path, command) is (path not in ("src/app/main.go", "lib/index.js"))


def test_a_sectioned_file_nested_past_the_stack_counts_as_changed_whole() -> None:
    deep = '{"scripts": {"test": "x"}, "a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert sections_of("package.json", deep) == deep


# --- Rust: tests inside source files, Cargo.toml ---------------------------------------------

LIB_RS = """pub fn mul(a: i64, b: i64) -> i64 {
    a + b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn muls() {
        assert_eq!(mul(2, 3), 6);
    }
}
"""
FIXED_RS = LIB_RS.replace("    a + b", "    a * b")


def test_a_fix_beside_a_rust_files_tests_is_no_gate_change() -> None:
    assert gate_changes({"src/lib.rs": (LIB_RS, FIXED_RS)}, "cargo test") == []


def test_a_change_to_a_rust_files_tests_is_a_test_change_of_that_file_only() -> None:
    weakened = FIXED_RS.replace("mul(2, 3), 6", "mul(2, 3), 5")
    [change] = gate_changes({"src/lib.rs": (LIB_RS, weakened)}, "cargo test")
    assert (change.path, change.role, change.status, change.tests_only) == (
        "src/lib.rs",
        "test",
        "modified",
        True,
    )
    assert may_be_gate_file("src/lib.rs", "cargo test")
    # a new source file brings its own tests: welcome, and nothing to run the old way
    assert gate_changes({"src/new.rs": (None, LIB_RS)}, "cargo test") == []


@pytest.mark.parametrize(
    "added",
    [
        "[lib]\ntest = false\n",
        '[[test]]\nname = "it"\nharness = false\n',
        "[features]\ndefault = []\n",
        "[profile.test]\nopt-level = 1\n",
    ],
)
def test_cargo_toml_counts_where_it_says_what_cargo_test_runs(added: str) -> None:
    before = '[package]\nname = "calc"\nversion = "0.1.0"\n\n[dependencies]\n'
    [change] = gate_changes({"Cargo.toml": (before, before + added)}, "cargo test")
    assert change.role == "runner_config"
    bumped = before.replace('"0.1.0"', '"0.1.1"') + 'serde = "1"\n'
    assert gate_changes({"Cargo.toml": (before, bumped)}, "cargo test") == []


def test_a_file_target_is_looked_for_only_among_ids_that_name_their_files() -> None:
    cargo_red = run({"tests::muls": "failed", "it_adds": "passed"}, source="names")
    cargo_green = run({"tests::muls": "passed", "it_adds": "passed"}, source="names")
    assert judge(cargo_red, cargo_green, targets=["tests/it.rs", "tests::muls"]).passed
    unittest_red = run({"tests.test_ops.OpsTest.test_mul": "failed"}, source="names")
    unittest_green = run({"tests.test_ops.OpsTest.test_mul": "passed"}, source="names")
    assert judge(unittest_red, unittest_green, targets=["tests/test_ops.py"]).passed
    # pytest's ids name their files: a target file none of whose tests ran did not run
    verdict = judge(RED, GREEN, targets=["tests/test_other.py"])
    assert not verdict.passed and "did not run" in verdict.problems[0]
    all_red = run({ADD: "failed", SUB: "failed", MUL: "failed"})
    verdict = judge(all_red, all_red, baseline=all_red, targets=["tests/test_other.py"])
    assert not verdict.passed and "did not run" in verdict.problems[0]


def test_a_run_that_stopped_before_every_test_ran_never_passes() -> None:
    stopped = "cargo test stopped at the first failing test target (--lib)"
    red = run({"tests::muls": "failed", "tests::adds": "passed"}, source="names")
    still_red = run({"tests::muls": "failed", "tests::adds": "passed"}, source="names")
    assert judge(red, still_red).passed  # an old failure may remain …
    partial = still_red.model_copy(
        update={"report": still_red.report.model_copy(update={"incomplete": stopped})}
    )
    verdict = judge(red, partial)  # … but not when the targets after it never ran
    assert not verdict.passed and verdict.problems == [f"not every test ran: {stopped}"]


def test_a_target_in_a_file_jest_names_alone_as_passing_passes() -> None:
    """jest's default reporter names a failing file's failing tests before the fix, and the
    file alone once it passes (`PASS tests/math.test.js`): its tests passed."""
    recorded = Path(__file__).parent / "runner_outputs" / "js"

    def jest(name: str) -> ValidationResult:
        report = read_report((recorded / name).read_text(), None)
        return ValidationResult(
            success=name.startswith("jest30_fixed"),
            exit_code=0 if name.startswith("jest30_fixed") else 1,
            failing_tests=[t for t, o in report.outcomes.items() if o == "failed"],
            passing_tests=[t for t, o in report.outcomes.items() if o == "passed"],
            report=report,
        )

    before, after = jest("jest30_default.txt"), jest("jest30_fixed_default.txt")
    targets = ["tests/math.test.js > math > multiplies"]
    assert targets[0] in before.failing_tests
    verdict = judge(before, after, targets=targets)
    assert verdict.passed, verdict.problems
