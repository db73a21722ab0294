"""agent.validation: commands in their own process group, test-name parsing, the gate."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.config import TestingConfig
from agent.errors import ValidationError
from agent.models import ValidationResult
from agent.sandbox import NoSandbox, Sandbox
from agent.validation import (
    cap_output,
    compare_to_baseline,
    parse_failing_tests,
    parse_passing_tests,
    passes_gate,
    run_command,
    run_validation,
    scrubbed_env,
)
from tests.fakes.repos import (
    FAILING_TEST,
    ISOLATED_GIT_ENV,
    MUL_BUG,
    MUL_FIX,
    TEST_COMMAND,
    make_python_project,
)

ENVIRON = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/home/cra",
    "LANG": "C.UTF-8",
    "GITHUB_TOKEN": "ghs_fake_installation_token",
    "GH_TOKEN": "gho_fake",
    "OPENAI_API_KEY": "sk-fake",
    "CRA_WEBHOOK_SECRET": "whsec-fake",
    "NPM_TOKEN": "npm_fake",
    "DJANGO_SECRET": "django-fake",
    "SSH_PRIVATE_KEY_PATH": "/keys/id",
    "MY_SETTING": "visible",
    "UNLISTED": "hidden",
}
SECRET_VALUES = ("ghs_fake", "gho_fake", "sk-fake", "whsec-fake", "npm_fake", "django-fake",
                 "/keys/id")


@pytest.fixture(params=["none", "bwrap"])
def sandbox(request: pytest.FixtureRequest) -> Sandbox:
    """Each process-handling behaviour holds unsandboxed and in the real bwrap sandbox."""
    if request.param == "none":
        return NoSandbox()
    make: Callable[[], Sandbox] = request.getfixturevalue("bwrap")
    return make()


def run(
    command: str, tmp_path: Path, sandbox: Sandbox, **kwargs: float
) -> tuple[str, bool, int | None]:
    """Run `command` in tmp_path with a 30 s timeout; (output, timed_out, exit code)."""
    options: dict[str, float] = {"timeout": 30.0, "kill_grace": 0.5, **kwargs}
    result = run_command(command, tmp_path, sandbox=sandbox, env={"PATH": ENVIRON["PATH"]},
                         max_output_chars=10_000, **options)
    return result.output, result.timed_out, result.exit_code


# --- the environment -------------------------------------------------------------------------


def test_scrubbed_env_keeps_the_base_variables_and_the_allow_list() -> None:
    env = scrubbed_env(ENVIRON, ["MY_*"])
    assert env == {"PATH": ENVIRON["PATH"], "HOME": "/home/cra", "LANG": "C.UTF-8",
                   "MY_SETTING": "visible"}


def test_scrubbed_env_drops_secret_names_even_when_allow_listed() -> None:
    env = scrubbed_env(ENVIRON, list(ENVIRON))
    assert set(env) == {"PATH", "HOME", "LANG", "MY_SETTING", "UNLISTED"}


def test_test_commands_never_see_tokens(tmp_path: Path, sandbox: Sandbox) -> None:
    testing = TestingConfig(test_command="env", env=["GITHUB_TOKEN", "OPENAI_API_KEY", "MY_*"])
    result = run_validation(tmp_path, testing, environ=ENVIRON, sandbox=sandbox)
    assert result.success
    assert result.test_output is not None and "MY_SETTING=visible" in result.test_output
    assert not [value for value in SECRET_VALUES if value in result.test_output]
    assert "UNLISTED" not in result.test_output


# --- running one command ---------------------------------------------------------------------


def test_stdout_and_stderr_are_merged_and_stdin_is_closed(tmp_path: Path, sandbox: Sandbox) -> None:
    output, timed_out, code = run("echo out; echo err >&2; cat; exit 3", tmp_path, sandbox)
    assert output == "out\nerr\n"
    assert (timed_out, code) == (False, 3)


def test_commands_run_through_the_shell_in_the_given_directory(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "marker").write_text("here\n")
    output, _, code = run("cd src && cat marker", tmp_path, sandbox)
    assert (output, code) == ("here\n", 0)


@pytest.mark.timeout(30)
def test_a_hanging_command_and_its_grandchild_are_killed_at_the_timeout(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    output, timed_out, code = run("echo started; sleep 300 & sleep 300", tmp_path, sandbox,
                                   timeout=1)
    assert timed_out and code is None
    assert output.startswith("started\n")
    assert "killed after 1 s" in output


@pytest.mark.timeout(30)
def test_a_command_ignoring_sigterm_is_killed(tmp_path: Path, sandbox: Sandbox) -> None:
    _, timed_out, _ = run("trap '' TERM; sleep 300", tmp_path, sandbox, timeout=0.5,
                         kill_grace=0.2)
    assert timed_out


@pytest.mark.timeout(30)
def test_background_children_holding_the_output_do_not_hang_a_finished_command(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    output, timed_out, code = run("sleep 300 & echo done", tmp_path, sandbox, kill_grace=0.2)
    assert (timed_out, code) == (False, 0)
    assert output.startswith("done\n")
    # Unsandboxed they are found and stopped; in bwrap they died with the PID namespace.
    assert ("left running" in output) == (sandbox.name == "none")


def test_long_output_keeps_head_and_tail_around_an_omission_marker(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    script = 'i=0; while [ $i -lt 500 ]; do echo "line $i"; i=$((i+1)); done'
    full = "".join(f"line {i}\n" for i in range(500))
    result = run_command(script, tmp_path, sandbox=sandbox, timeout=30,
                         env={"PATH": ENVIRON["PATH"]}, max_output_chars=300)
    assert result.truncated
    assert result.output.startswith("line 0\nline 1\n")
    assert result.output.endswith("line 498\nline 499\n")
    assert f"… {len(full) - 300} characters omitted …" in result.output


def test_output_is_decoded_as_utf8_with_replacement(tmp_path: Path, sandbox: Sandbox) -> None:
    output, _, _ = run(r"printf 'caf\303\251 \377\n'", tmp_path, sandbox)
    assert output == "café \ufffd\n"


def test_cap_output_leaves_short_text_alone_and_splits_long_text_evenly() -> None:
    assert cap_output("short", 10) == ("short", False)
    assert cap_output("abcdefghijklmnop", 6) == ("abc\n… 10 characters omitted …\nnop", True)
    assert cap_output("abcdef", 4, dropped=100) == ("ab\n… 102 characters omitted …\nef", True)


def test_a_missing_directory_is_a_validation_error(tmp_path: Path, sandbox: Sandbox) -> None:
    with pytest.raises(ValidationError, match="could not start"):
        run_command("true", tmp_path / "missing", sandbox=sandbox, timeout=5, env={},
                    max_output_chars=1000)


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
    "tests/test_ops.py::test_mul", "tests/test_ops.py::test_mul_param[1-1]",
    "tests/test_ops.py::test_mul_param[0-5]", "tests/test_ops.py::test_uses_broken",
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


@pytest.mark.parametrize(("output", "failing", "passing"), [
    pytest.param(PYTEST_Q, PYTEST_FAILED, [], id="pytest -q"),
    pytest.param(PYTEST_V, PYTEST_FAILED, ["tests/test_ops.py::test_add"], id="pytest -v"),
    pytest.param(PYTEST_RA, [PYTEST_FAILED[3], *PYTEST_FAILED[:3]],
                 ["tests/test_ops.py::test_add"], id="pytest -rA"),
    pytest.param(PYTEST_COLOURED, ["tests/test_ops.py::test_mul"], [], id="pytest colours"),
    pytest.param(UNITTEST_V, ["tests.test_unit.OpsTest.test_error",
                              "tests.test_unit.OpsTest.test_mul"],
                 ["tests.test_unit.OpsTest.test_add"], id="unittest -v"),
    pytest.param(UNITTEST_PY310, ["tests.test_unit.OpsTest.test_mul"], [], id="unittest 3.10"),
    pytest.param(GO_TEST_V, ["TestMul", "TestMulTable", "TestMulTable/by_zero"],
                 ["TestAdd", "TestMulTable/by_one"], id="go test -v"),
    pytest.param(GO_TEST, ["TestMul"], [], id="go test"),
    pytest.param(CARGO_TEST, ["tests::multiplies"],
                 ["tests::adds", "src/lib.rs - add (line 3)"], id="cargo test"),
    pytest.param(JEST_VERBOSE, ["src/mul.test.js", "multiplies", "math › multiplies"],
                 ["adds", "src/sum.test.js", "sums"], id="jest --verbose"),
    pytest.param(JEST_SUITE_ERROR, ["src/broken.test.js"], [], id="jest suite error"),
    pytest.param(VITEST, ["math > multiplies", "src/mul.test.ts > math > multiplies"],
                 ["src/sum.test.ts"], id="vitest"),
])
def test_test_names_are_parsed_from_each_runner(
    output: str, failing: list[str], passing: list[str]
) -> None:
    assert parse_failing_tests(output) == failing
    assert parse_passing_tests(output) == passing


def test_parsed_names_are_deduplicated_in_order() -> None:
    assert parse_failing_tests(PYTEST_V + PYTEST_Q) == PYTEST_FAILED


# --- baseline and gate -----------------------------------------------------------------------


def result(
    success: bool = False, failing: list[str] | None = None, passing: list[str] | None = None,
    timed_out: bool = False,
) -> ValidationResult:
    """A validation with the given outcome."""
    return ValidationResult(
        success=success, failing_tests=failing or [], passing_tests=passing or [],
        exit_code=None if timed_out else (0 if success else 1), timed_out=timed_out,
    )


def test_compare_to_baseline_names_newly_failing_newly_passing_and_still_failing() -> None:
    baseline = result(failing=["t::old_bug", "t::fixed"], passing=["t::ok"])
    current = result(failing=["t::old_bug", "t::ok", "t::brand_new"], passing=["t::fixed"])
    comparison = compare_to_baseline(baseline, current)
    assert comparison.newly_failing == ["t::ok", "t::brand_new"]
    assert comparison.newly_passing == ["t::fixed"]
    assert comparison.still_failing == ["t::old_bug"]


def test_a_baseline_failure_is_newly_passing_only_when_the_run_shows_it() -> None:
    baseline = result(failing=["t::a", "t::b"])
    assert compare_to_baseline(baseline, result(failing=["t::a"])).newly_passing == []
    assert compare_to_baseline(baseline, result(success=True)).newly_passing == ["t::a", "t::b"]


def test_gate_passes_whenever_the_tests_pass() -> None:
    assert passes_gate(result(failing=["t::a"]), result(success=True))


def test_gate_fails_a_regression_from_a_green_baseline() -> None:
    assert not passes_gate(result(success=True), result(failing=["t::a"]))


def test_gate_with_a_red_baseline_passes_when_only_old_failures_remain() -> None:
    baseline = result(failing=["t::old", "t::target"], passing=["t::ok"])
    current = result(failing=["t::old"], passing=["t::ok", "t::target"])
    assert passes_gate(baseline, current, target_tests=["t::target"])


def test_gate_with_a_red_baseline_fails_when_a_target_test_still_fails() -> None:
    baseline = result(failing=["t::old", "t::target"])
    assert not passes_gate(baseline, result(failing=["t::old", "t::target"]),
                           target_tests=["t::target"])
    assert not passes_gate(baseline, result(failing=["t::old", "t::target[1]"]),
                           target_tests=["t::target"])


def test_gate_with_a_red_baseline_fails_when_a_test_that_passed_now_fails() -> None:
    baseline = result(failing=["t::old"], passing=["t::ok"])
    assert not passes_gate(baseline, result(failing=["t::old", "t::ok"]))


def test_gate_with_a_red_baseline_fails_on_a_new_failing_test() -> None:
    assert not passes_gate(result(failing=["t::old"]), result(failing=["t::old", "t::new"]))


def test_gate_fails_an_unexplained_failure_and_a_timeout() -> None:
    baseline = result(failing=["t::old"])
    assert not passes_gate(baseline, result(failing=[]))
    assert not passes_gate(baseline, result(failing=["t::old"], timed_out=True))


# --- run_validation on a real project --------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, value in ISOLATED_GIT_ENV.items():
        monkeypatch.setenv(name, value)
    return make_python_project(tmp_path / "calc")


def python_env() -> dict[str, str]:
    return {"PATH": ENVIRON["PATH"], "HOME": str(Path.home()), "GITHUB_TOKEN": "ghs_fake"}


def test_run_validation_names_the_failing_test_of_the_buggy_project(
    project: Path, sandbox: Sandbox
) -> None:
    testing = TestingConfig(test_command=TEST_COMMAND)
    validation = run_validation(project, testing, environ=python_env(), sandbox=sandbox)
    assert not validation.success
    assert validation.exit_code == 1
    assert validation.failing_tests == [FAILING_TEST]
    assert validation.test_output is not None and "1 failed, 2 passed" in validation.test_output


def test_run_validation_succeeds_on_the_fixed_project(project: Path, sandbox: Sandbox) -> None:
    ops = project / "calc" / "ops.py"
    ops.write_text(ops.read_text().replace(MUL_BUG, MUL_FIX))
    testing = TestingConfig(test_command=TEST_COMMAND + " -rA", lint_command="echo lint; exit 3",
                            type_check_command="echo types")
    validation = run_validation(project, testing, environ=python_env(), sandbox=sandbox)
    assert validation.success and validation.exit_code == 0
    assert validation.failing_tests == []
    assert FAILING_TEST in validation.passing_tests
    assert (validation.lint_output, validation.type_check_output) == ("lint\n", "types\n")


def test_run_validation_without_a_test_command_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="test_command"):
        run_validation(tmp_path, TestingConfig(), environ={}, sandbox=NoSandbox())


def test_run_validation_reports_a_timeout(tmp_path: Path, sandbox: Sandbox) -> None:
    sleeper = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(60)'"
    testing = TestingConfig(test_command=sleeper, timeout=0.5)
    validation = run_validation(tmp_path, testing, environ=ENVIRON, sandbox=sandbox,
                                kill_grace=0.2)
    assert validation.timed_out and not validation.success
    assert validation.exit_code is None


def test_a_same_size_edit_within_the_second_is_never_hidden_by_bytecode(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    (tmp_path / "mod.py").write_text("def f():\n    return 1 + 1\n")
    test = "from mod import f\n\n\ndef test_f():\n    assert f() == 2\n"
    (tmp_path / "test_mod.py").write_text(test)
    testing = TestingConfig(test_command=f"{sys.executable} -m pytest -q -p no:cacheprovider")
    assert run_validation(tmp_path, testing, environ=dict(os.environ), sandbox=sandbox).success
    (tmp_path / "mod.py").write_text("def f():\n    return 1 - 1\n")  # same size, same second

    result = run_validation(tmp_path, testing, environ=dict(os.environ), sandbox=sandbox)

    assert not result.success
    assert not list(tmp_path.rglob("*.pyc"))
