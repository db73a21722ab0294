"""agent.gate.testreport: test names, outcomes and counts from each runner's output and reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.gate.testreport.outcomes import named_tests, parse_junit, parse_outcomes, read_report
from agent.gate.testreport.summaries import parse_counts
from agent.models import TestCounts

# --- parsing test names ----------------------------------------------------------------------

PYTEST_Q = """\
.FFFE                                                                    [100%]
==================================== ERRORS ====================================
______________________ ERROR at setup of test_uses_broken ______________________

    @pytest.fixture
    def broken():
>       raise RuntimeError("boom")
E       RuntimeError: boom

tests/test_ops.py:16: RuntimeError
=================================== FAILURES ===================================
___________________________________ test_mul ___________________________________

    def test_mul():
>       assert mul(2, 3) == 6
E       assert 7 == 6
E        +  where 7 = mul(2, 3)

tests/test_ops.py:8: AssertionError
------------------------------ Captured log call -------------------------------
ERROR    calc.ops:ops.py:12 multiplying 2 by 3
=========================== short test summary info ============================
FAILED tests/test_ops.py::test_mul - assert 7 == 6
FAILED tests/test_ops.py::test_mul_param[1-1] - assert 2 == (1 * 1)
FAILED tests/test_ops.py::test_mul_param[0-5] - assert 1 == (0 * 5)
ERROR tests/test_ops.py::test_uses_broken - RuntimeError: boom
3 failed, 1 passed, 1 error in 0.99s
"""
PYTEST_FAILED = [
    "tests/test_ops.py::test_mul",
    "tests/test_ops.py::test_mul_param[1-1]",
    "tests/test_ops.py::test_mul_param[0-5]",
    "tests/test_ops.py::test_uses_broken",
]

PYTEST_V = """\
============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-9.2.0, pluggy-1.7.0 -- /work/main/.venv/bin/python
rootdir: /tmp/runners/py
collecting ... collected 5 items

tests/test_ops.py::test_add PASSED                                       [ 20%]
tests/test_ops.py::test_mul FAILED                                       [ 40%]
tests/test_ops.py::test_mul_param[1-1] FAILED                            [ 60%]
tests/test_ops.py::test_mul_param[0-5] FAILED                            [ 80%]
tests/test_ops.py::test_uses_broken ERROR                                [100%]

=========================== short test summary info ============================
FAILED tests/test_ops.py::test_mul - assert 7 == 6
FAILED tests/test_ops.py::test_mul_param[1-1] - assert 2 == (1 * 1)
FAILED tests/test_ops.py::test_mul_param[0-5] - assert 1 == (0 * 5)
ERROR tests/test_ops.py::test_uses_broken - RuntimeError: boom
===================== 3 failed, 1 passed, 1 error in 1.15s =====================
"""

PYTEST_RA = """\
==================================== PASSES ====================================
=========================== short test summary info ============================
PASSED tests/test_ops.py::test_add
ERROR tests/test_ops.py::test_uses_broken - RuntimeError: boom
FAILED tests/test_ops.py::test_mul - assert 7 == 6
FAILED tests/test_ops.py::test_mul_param[1-1] - assert 2 == (1 * 1)
FAILED tests/test_ops.py::test_mul_param[0-5] - assert 1 == (0 * 5)
3 failed, 1 passed, 1 error in 1.36s
"""

PYTEST_COLOURED = (
    "\x1b[31mFAILED\x1b[0m tests/test_ops.py::\x1b[1mtest_mul\x1b[0m - assert 7 == 6\n"
    "\x1b[31m========================= \x1b[31m\x1b[1m1 failed\x1b[0m\x1b[31m in 0.10s"
    "\x1b[0m\x1b[31m =========================\x1b[0m\n"
)

UNITTEST_V = """\
test_add (tests.test_unit.OpsTest.test_add) ... ok
test_error (tests.test_unit.OpsTest.test_error) ... ERROR
test_mul (tests.test_unit.OpsTest.test_mul) ... FAIL

======================================================================
ERROR: test_error (tests.test_unit.OpsTest.test_error)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/tmp/runners/py/tests/test_unit.py", line 10, in test_error
    raise ValueError("bad")
ValueError: bad

======================================================================
FAIL: test_mul (tests.test_unit.OpsTest.test_mul)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/tmp/runners/py/tests/test_unit.py", line 8, in test_mul
    self.assertEqual(mul(2, 3), 6)
AssertionError: 7 != 6

----------------------------------------------------------------------
Ran 3 tests in 0.001s

FAILED (failures=1, errors=1)
"""

UNITTEST_PY310 = """\
======================================================================
FAIL: test_mul (tests.test_unit.OpsTest)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/src/tests/test_unit.py", line 8, in test_mul
    self.assertEqual(mul(2, 3), 6)
AssertionError: 7 != 6

----------------------------------------------------------------------
Ran 3 tests in 0.001s

FAILED (failures=1)
"""

GO_TEST_V = """\
=== RUN   TestAdd
--- PASS: TestAdd (0.00s)
=== RUN   TestMul
    calc_test.go:12: Mul(2, 3) = 7, want 6
--- FAIL: TestMul (0.00s)
=== RUN   TestMulTable
=== RUN   TestMulTable/by_one
=== RUN   TestMulTable/by_zero
    calc_test.go:27: Mul(4, 0) = 1, want 0
--- FAIL: TestMulTable (0.00s)
    --- PASS: TestMulTable/by_one (0.00s)
    --- FAIL: TestMulTable/by_zero (0.00s)
FAIL
FAIL\texample.com/calc\t0.003s
FAIL
"""

GO_TEST = """\
--- FAIL: TestMul (0.00s)
    calc_test.go:12: Mul(2, 3) = 7, want 6
FAIL
FAIL\texample.com/calc\t0.002s
FAIL
"""

CARGO_TEST = """\
   Compiling calc v0.1.0 (/tmp/runners/calc)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 2.06s
     Running unittests src/lib.rs (target/debug/deps/calc-c6626fb655a8d231)

running 3 tests
test tests::adds ... ok
test tests::slow ... ignored
test tests::multiplies ... FAILED

failures:

---- tests::multiplies stdout ----

thread 'tests::multiplies' (10428) panicked at src/lib.rs:10:23:
assertion `left == right` failed
  left: 7
 right: 6
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace


failures:
    tests::multiplies

test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.30s

   Doc-tests calc

running 1 test
test src/lib.rs - add (line 3) ... ok

error: test failed, to rerun pass `--lib`
"""

JEST_VERBOSE = """\
 FAIL  src/mul.test.js
  math
    ✓ adds (2 ms)
    ✕ multiplies (4 ms)

  ● math › multiplies

    expect(received).toBe(expected) // Object.is equality

    Expected: 6
    Received: 7

      4 | describe('math', () => {
      5 |   test('adds', () => expect(add(2, 3)).toBe(5));
    > 6 |   test('multiplies', () => expect(mul(2, 3)).toBe(6));
        |                                              ^
      7 | });

      at Object.toBe (src/mul.test.js:6:46)

 PASS  src/sum.test.js
  ✓ sums (1 ms)

Test Suites: 1 failed, 1 passed, 2 total
Tests:       1 failed, 2 passed, 3 total
Snapshots:   0 total
Time:        0.512 s
Ran all test suites.
"""

JEST_SUITE_ERROR = """\
 FAIL  src/broken.test.js
  ● Test suite failed to run

    Cannot find module './missing' from 'src/broken.test.js'

Test Suites: 1 failed, 1 total
Tests:       0 total
"""

VITEST = """\

 RUN  v1.6.0 /home/user/calc

 ✓ src/sum.test.ts  (1 test) 2ms
 ❯ src/mul.test.ts  (2 tests | 1 failed) 6ms
   × math > multiplies 4ms
     → expected 7 to be 6 // Object.is equality

⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯

 FAIL  src/mul.test.ts > math > multiplies
AssertionError: expected 7 to be 6 // Object.is equality
 ❯ src/mul.test.ts:6:44
      4| describe('math', () => {
      5|   test('adds', () => expect(add(2, 3)).toBe(5))
      6|   test('multiplies', () => expect(mul(2, 3)).toBe(6))
       |                                            ^
      7| })

⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯[1/1]⎯

 Test Files  1 failed | 1 passed (2)
      Tests  1 failed | 2 passed (3)
   Start at  10:00:00
   Duration  412ms (transform 31ms, setup 0ms, collect 28ms, tests 8ms)
"""


@pytest.mark.parametrize(
    ("output", "failing", "passing"),
    [
        pytest.param(PYTEST_Q, PYTEST_FAILED, [], id="pytest -q"),
        pytest.param(PYTEST_V, PYTEST_FAILED, ["tests/test_ops.py::test_add"], id="pytest -v"),
        pytest.param(
            PYTEST_RA,
            [PYTEST_FAILED[3], *PYTEST_FAILED[:3]],
            ["tests/test_ops.py::test_add"],
            id="pytest -rA",
        ),
        pytest.param(PYTEST_COLOURED, ["tests/test_ops.py::test_mul"], [], id="pytest colours"),
        pytest.param(
            UNITTEST_V,
            ["tests.test_unit.OpsTest.test_error", "tests.test_unit.OpsTest.test_mul"],
            ["tests.test_unit.OpsTest.test_add"],
            id="unittest -v",
        ),
        pytest.param(UNITTEST_PY310, ["tests.test_unit.OpsTest.test_mul"], [], id="unittest 3.10"),
        pytest.param(
            GO_TEST_V,
            ["TestMul", "TestMulTable", "TestMulTable/by_zero"],
            ["TestAdd", "TestMulTable/by_one"],
            id="go test -v",
        ),
        pytest.param(GO_TEST, ["TestMul"], [], id="go test"),
        pytest.param(
            CARGO_TEST, ["tests::multiplies"], ["tests::adds", "src/lib.rs - add"], id="cargo test"
        ),
        pytest.param(
            JEST_VERBOSE,
            ["src/mul.test.js > math > multiplies"],
            ["src/mul.test.js > math > adds", "src/sum.test.js > sums"],
            id="jest --verbose",
        ),
        pytest.param(JEST_SUITE_ERROR, ["src/broken.test.js"], [], id="jest suite error"),
        pytest.param(
            VITEST,
            ["src/mul.test.ts > math > multiplies"],
            ["src/sum.test.ts"],
            id="vitest",
        ),
    ],
)
def test_test_names_are_parsed_from_each_runner(
    output: str, failing: list[str], passing: list[str]
) -> None:
    assert named_tests(output) == (failing, passing)


def test_parsed_names_are_deduplicated_in_order() -> None:
    assert named_tests(PYTEST_V + PYTEST_Q)[0] == PYTEST_FAILED


# --- outcomes and counts ---------------------------------------------------------------------

PYTEST_SKIPS = """\
tests/test_ops.py::test_add PASSED                                       [ 25%]
tests/test_ops.py::test_sub SKIPPED (no reason)                          [ 50%]
tests/test_ops.py::test_mul XFAIL (known bug)                            [ 75%]
tests/test_ops.py::test_div FAILED                                       [100%]
=================== 1 failed, 1 passed, 1 skipped, 1 xfailed in 0.05s ===================
"""


def test_outcomes_name_skipped_and_xfailed_tests() -> None:
    assert parse_outcomes(PYTEST_SKIPS) == {
        "tests/test_ops.py::test_add": "passed",
        "tests/test_ops.py::test_sub": "skipped",
        "tests/test_ops.py::test_mul": "xfailed",
        "tests/test_ops.py::test_div": "failed",
    }


@pytest.mark.parametrize(
    ("output", "runner", "counts"),
    [
        pytest.param(
            PYTEST_SKIPS,
            "pytest",
            TestCounts(passed=1, failed=1, skipped=1, xfailed=1),
            id="pytest -v",
        ),
        pytest.param(
            "..F.s\n1 failed, 3 passed, 1 skipped, 2 deselected, 1 warning in 0.12s\n",
            "pytest",
            TestCounts(passed=3, failed=1, skipped=1),
            id="pytest -q",
        ),
        pytest.param("\nno tests ran in 0.01s\n", "pytest", TestCounts(), id="pytest nothing"),
        pytest.param(
            "===== 2 errors in 0.30s =====\n",
            "pytest",
            TestCounts(errors=2),
            id="pytest collection errors",
        ),
        pytest.param(
            "....\n---\nRan 6 tests in 0.001s\n\nFAILED (failures=1, errors=1, "
            "skipped=1, expected failures=1)\n",
            "unittest",
            TestCounts(passed=2, failed=1, errors=1, skipped=1, xfailed=1),
            id="unittest",
        ),
        pytest.param(
            "Ran 3 tests in 0.000s\n\nOK (skipped=1)\n",
            "unittest",
            TestCounts(passed=2, skipped=1),
            id="unittest ok",
        ),
        pytest.param(
            "test result: ok. 4 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out\n"
            "test result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered "
            "out\n",
            "cargo",
            TestCounts(passed=5, failed=2, skipped=1),
            id="cargo",
        ),
        pytest.param(
            "Tests:       1 failed, 2 skipped, 5 passed, 8 total\n",
            "js",
            TestCounts(passed=5, failed=1, skipped=2),
            id="jest",
        ),
        pytest.param(
            "      Tests  1 failed | 5 passed | 1 skipped (7)\n",
            "js",
            TestCounts(passed=5, failed=1, skipped=1),
            id="vitest",
        ),
        pytest.param(
            "  5 passing (12ms)\n  2 pending\n  1 failing\n",
            "js",
            TestCounts(passed=5, failed=1, skipped=2),
            id="mocha",
        ),
        pytest.param(
            "ok  \texample.com/calc\t0.002s\nFAIL\texample.com/calc/mul\t0.003s\n",
            "go",
            TestCounts(passed=1, failed=1),
            id="go test",
        ),
    ],
)
def test_counts_come_from_each_runners_summary(
    output: str, runner: str, counts: TestCounts
) -> None:
    assert parse_counts(output) == (runner, counts)


def test_output_without_a_known_summary_has_no_counts() -> None:
    assert parse_counts("all good\n") is None
    report = read_report("all good\n", None)
    assert report.source == "none" and not report.reported


JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="0" failures="1" skipped="2" tests="5">
<testcase classname="tests.test_ops" name="test_add" file="tests/test_ops.py" line="3"/>
<testcase classname="tests.test_ops.TestMul" name="test_mul[2-3]" file="tests/test_ops.py">
  <failure message="assert 7 == 6">boom</failure></testcase>
<testcase classname="tests.test_ops" name="test_sub" file="tests/test_ops.py">
  <skipped type="pytest.skip" message="not today"/></testcase>
<testcase classname="tests.test_ops" name="test_div" file="tests/test_ops.py">
  <skipped type="pytest.xfail" message="known"/></testcase>
<testcase classname="tests.test_ops" name="test_add" file="tests/test_ops.py">
  <error message="teardown failed"/></testcase>
</testsuite></testsuites>
"""


def test_junit_reports_give_pytest_node_ids_and_the_worst_outcome() -> None:
    assert parse_junit(JUNIT) == {
        "tests/test_ops.py::test_add": "error",
        "tests/test_ops.py::TestMul::test_mul[2-3]": "failed",
        "tests/test_ops.py::test_sub": "skipped",
        "tests/test_ops.py::test_div": "xfailed",
    }


def test_a_junit_report_is_the_best_source() -> None:
    report = read_report(PYTEST_SKIPS, JUNIT)
    assert report.source == "junit" and report.runner == "pytest"
    assert report.counts == TestCounts(failed=1, errors=1, skipped=1, xfailed=1)


def test_a_broken_junit_report_falls_back_to_the_output() -> None:
    assert parse_junit("<testsuites><testcase") is None
    assert parse_junit("<html></html>") is None
    report = read_report(PYTEST_SKIPS, "<testsuites><testcase")
    assert report.source == "summary" and report.counts is not None


def test_go_test_verbose_names_every_test() -> None:
    report = read_report(GO_TEST_V, None)
    assert report.source == "names"
    assert report.outcomes["TestAdd"] == "passed" and report.outcomes["TestMul"] == "failed"


def test_a_module_that_could_not_be_collected_is_its_file() -> None:
    report = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="" name="tests.test_flags" file="tests/test_flags.py" time="0.000">
  <error message="collection failure">ImportError: cannot import name 'flags'</error>
</testcase></testsuite></testsuites>"""
    assert parse_junit(report) == {"tests/test_flags.py": "error"}


# --- TAP and node's test runner (real output: tests/gate/runner_outputs/README.md) ----------------

OUTPUTS = Path(__file__).parent / "runner_outputs"


def output(name: str) -> str:
    return (OUTPUTS / name).read_text(encoding="utf-8")


def test_node_tap_names_every_test_and_counts_its_summary() -> None:
    report = read_report(output("node_tap.txt"), None)
    assert report.source == "names" and report.runner == "tap"
    assert report.counts == TestCounts(passed=3, failed=3)
    assert named_tests(output("node_tap.txt")) == (
        ["extra mul", "mul", "legacy broken"],
        ["extra add", "add", "sub"],
    )


def test_node_spec_failures_are_read_once_with_the_summarys_counts() -> None:
    spec = output("node_spec.txt")  # its "failing tests:" section lists the failures again
    report = read_report(spec, None)
    assert report.runner == "node" and report.counts == TestCounts(passed=3, failed=3)
    assert named_tests(spec)[0] == ["extra mul", "mul", "legacy broken"]
    assert report.outcomes == read_report(output("node_tap.txt"), None).outcomes


def test_node_spec_failures_are_named_without_the_summary() -> None:
    head = output("node_spec.txt").split("ℹ tests")[0]  # the output cut before its summary
    assert named_tests(head)[0] == ["extra mul", "mul", "legacy broken"]


NESTED = {
    "ints > add": "passed",
    "ints > mul": "failed",
    "ints > deep > add": "passed",
    "floats > add": "passed",
    "floats > div": "skipped",
    "floats > todo broken": "skipped",
    "floats > todo fine": "skipped",
    "parent > child ok": "passed",
    "parent > child bad": "failed",
    "parent": "failed",
    "top skip": "skipped",
    "add": "passed",
}


def test_nested_node_tests_are_named_after_their_suites() -> None:
    assert parse_outcomes(output("node_nested_tap.txt")) == NESTED


def test_node_counts_a_parent_test_but_no_suite() -> None:
    report = read_report(output("node_nested_tap.txt"), None)  # "# tests 12", "# suites 3"
    assert report.counts == TestCounts(passed=5, failed=3, skipped=4)
    assert report.counts.collected == len(report.outcomes) == 12
    assert report.source == "names"


def test_a_todo_test_that_fails_is_no_failure() -> None:
    outcomes = parse_outcomes(output("node_nested_tap.txt"))
    assert outcomes["floats > todo broken"] == "skipped"
    assert "floats > todo broken" not in named_tests(output("node_nested_tap.txt"))[0]


def test_the_spec_reporter_names_the_tests_but_no_group() -> None:
    report = read_report(output("node_nested_spec.txt"), None)
    assert report.outcomes == {t: o for t, o in NESTED.items() if t != "parent"}
    assert report.source == "summary"  # node's count includes the parent test it cannot name
    assert report.counts == TestCounts(passed=5, failed=3, skipped=4)


def test_plain_tap_with_a_plan_names_and_counts_its_tests() -> None:
    report = read_report(output("make_tap.txt"), None)
    assert report.outcomes == {
        "add": "passed",
        "mul": "failed",
        "div": "skipped",
        "legacy": "skipped",
    }
    assert report.source == "names" and report.counts == TestCounts(passed=1, failed=1, skipped=2)
    assert report.incomplete is None


def test_a_tap_bail_out_leaves_the_report_incomplete() -> None:
    report = read_report(output("make_tap_bail_out.txt"), None)
    assert report.outcomes == {"add": "passed"}
    assert report.incomplete is not None and "bailed out" in report.incomplete


def test_tap_lines_without_a_plan_are_not_trusted() -> None:
    report = read_report(output("make_tap_no_plan.txt"), None)
    assert report.source == "none" and report.outcomes == {}


def test_tap_lines_in_pytests_captured_output_are_not_tap() -> None:
    captured = output("pytest_tap_in_captured_output.txt")
    report = read_report(captured, None)
    assert report.runner == "pytest" and report.counts == TestCounts(passed=1, failed=1)
    assert named_tests(captured)[0] == ["tests/test_tapish.py::test_harness_output"]


# --- cargo: doc-test names, and runs that stopped early ---------------------------------------


def test_a_doc_test_keeps_its_name_when_lines_are_added_above_it() -> None:
    before = named_tests(output("cargo_doctest_before_edit.txt"))[0]  # (line 17)
    after = named_tests(output("cargo_doctest_after_edit.txt"))[0]  # (line 19)
    assert before == ["tests::muls", "src/lib.rs - sub"] and after == ["src/lib.rs - sub"]


def test_doc_tests_of_one_item_are_numbered_by_their_line() -> None:
    outcomes = parse_outcomes(output("cargo_no_fail_fast.txt"))
    assert {t: o for t, o in outcomes.items() if t.startswith("src/")} == {
        "src/lib.rs - add": "passed",
        "src/lib.rs - add #2": "failed",
        "src/lib.rs - div": "passed",
        "src/lib.rs - div #2 - compile fail": "passed",
        "src/lib.rs - div #3": "skipped",
    }


@pytest.mark.parametrize(
    ("name", "stopped_at"),
    [
        pytest.param("cargo_fail_fast.txt", "--lib", id="stopped after the unit tests"),
        pytest.param(
            "cargo_workspace_fail_fast.txt",
            "-p a --doc",
            id="stopped before another package's doc-tests",
        ),
    ],
)
def test_cargo_test_stopping_at_a_failing_target_is_incomplete(name: str, stopped_at: str) -> None:
    report = read_report(output(name), None)
    assert report.incomplete is not None and f"({stopped_at})" in report.incomplete


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("cargo_no_fail_fast.txt", id="--no-fail-fast"),
        pytest.param("cargo_fail_fast_doctests.txt", id="the failing doc-tests were last"),
        pytest.param("cargo_doctest_after_edit.txt", id="one target failed, all ran"),
    ],
)
def test_cargo_test_that_ran_every_target_is_complete(name: str) -> None:
    report = read_report(output(name), None)
    assert report.runner == "cargo" and report.incomplete is None


@pytest.mark.parametrize(
    ("tail", "why"),
    [
        ("!!!!!!!!!!!!!!!!!!!! stopping after 1 failures !!!!!!!!!!!!!!!!!!!!", "after 1 failing"),
        (
            "!!!!!!!!! xdist.dsession.Interrupted: stopping after 2 failures !!!!!!!!!",
            "after 2 failing",
        ),
        (
            "!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!",
            "while collecting the tests, and ran none",
        ),
    ],
)
def test_pytest_stopping_early_is_incomplete_whatever_reports_its_tests(
    tail: str, why: str
) -> None:
    output = f"FAILED tests/test_a.py::test_a - assert 0\n{tail}\n1 failed in 0.1s\n"
    junit = (
        '<testsuites><testsuite><testcase classname="tests.test_a" name="test_a" '
        'file="tests/test_a.py"><failure/></testcase></testsuite></testsuites>'
    )
    for report in (read_report(output, None), read_report(output, junit)):
        assert report.incomplete is not None and why in report.incomplete


def test_pytest_that_ran_everything_is_complete() -> None:
    assert (
        read_report("FAILED tests/test_a.py::test_a\n1 failed, 3 passed in 0.1s\n", None).incomplete
        is None
    )


# jest killed by a test that ended the process: no summary, one stack (commander 58c28eb13da5)
PROCESS_EXIT = """error: too many arguments. Expected 0 arguments but got 2.
  ●  process.exit called with "1"

    > 512 |     process.exit(exitCode);
          |             ^

      at Command.exit [as _exit] (lib/command.js:512:13)
      at Command._parseCommand [as parse] (lib/command.js:1064:10)
      at Object.<anonymous> (/srv/tree/tests/command.positionalOptions.test.js:443:13)
"""


def test_a_run_that_stopped_before_its_runner_reported_names_the_test_file_it_stopped_in() -> None:
    report = read_report(PROCESS_EXIT, None, roots=["/srv/tree"])
    assert not report.reported
    assert report.stopped_in == "tests/command.positionalOptions.test.js"
    assert read_report(PROCESS_EXIT, None).stopped_in is None  # outside the worktree
    code_only = PROCESS_EXIT.replace("/srv/tree/tests/command.positionalOptions.test.js", "x.js")
    assert read_report(code_only, None, roots=["/srv/tree"]).stopped_in is None


def test_a_reported_jest_run_names_the_test_file_a_test_ended_its_process_in() -> None:
    """jest reports after a test called process.exit, without the files it had not run: the
    stack under its `● process.exit called with` names the file; another failure's does not."""
    output = (
        "PASS tests/args.test.js\n"
        "FAIL tests/other.test.js\n"
        "  ● other › adds\n\n    expect(received).toBe(expected)\n\n"
        "      at Object.<anonymous> (/srv/tree/tests/other.test.js:3:9)\n\n"
        + PROCESS_EXIT
        + "\nTest Suites: 1 failed, 1 passed, 2 total\n"
        "Tests:       1 failed, 4 passed, 5 total\n"
    )
    report = read_report(output, None, roots=["/srv/tree"])
    assert report.reported and report.stopped_in == "tests/command.positionalOptions.test.js"
    without = output.replace(PROCESS_EXIT, "")
    assert read_report(without, None, roots=["/srv/tree"]).stopped_in is None
