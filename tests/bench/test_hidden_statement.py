"""The statement a run gets with the fix's tests hidden: the message and the error as a user
would report it, without the tests' list, any line the fix or its tests add, or a line naming
a test only the test patch adds; built from an already mined task's fields."""

from __future__ import annotations

from pathlib import Path

from agent.bench.statement import added_lines, compose, hidden_statement
from agent.bench.tasks import BenchTask

PATCH = """diff --git a/pkg/mathx.py b/pkg/mathx.py
--- a/pkg/mathx.py
+++ b/pkg/mathx.py
@@ -1,3 +1,3 @@
 def double(x):
     \"\"\"Twice x.\"\"\"
-    return x * 3
+    return x * 2  # twice, not thrice
"""
TEST_PATCH = """diff --git a/tests/test_double.py b/tests/test_double.py
new file mode 100644
--- /dev/null
+++ b/tests/test_double.py
@@ -0,0 +1,9 @@
+from pkg.mathx import double
+
+
+def test_double_of_four():
+    assert double(4) == 8
+
+
+def test_double_of_zero():
+    assert double(0) == 0
diff --git a/tests/test_mathx.py b/tests/test_mathx.py
--- a/tests/test_mathx.py
+++ b/tests/test_mathx.py
@@ -3,3 +3,3 @@ from pkg.mathx import neg
 def test_neg():
-    assert neg(2) == -2
+    assert neg(2) == -2 and neg(-2) == 2
"""
OUTPUT = """.F.                                                                      [100%]
=================================== FAILURES ===================================
_____________________________ test_double_of_four ______________________________

    def test_double_of_four():
>       assert double(4) == 8
E       assert 12 == 8
E        +  where 12 = double(4)

tests/test_double.py:5: AssertionError
=========================== short test summary info ============================
FAILED tests/test_double.py::test_double_of_four - assert 12 == 8
1 failed, 2 passed in 0.05s
"""
F2P = ["tests/test_double.py::test_double_of_four"]
P2P = ["tests/test_double.py::test_double_of_zero", "tests/test_mathx.py::test_neg"]


def mined(statement: str, f2p: list[str] = F2P) -> BenchTask:
    return BenchTask(
        instance_id="local__mathx-abc",
        repo="local/mathx",
        base_commit="abc",
        patch=PATCH,
        test_patch=TEST_PATCH,
        problem_statement=statement,
        FAIL_TO_PASS=f2p,
        PASS_TO_PASS=P2P,
    )


def from_a_commit() -> BenchTask:
    return mined(
        compose("Fix double: it tripled\n\nSeen in the report totals.", F2P, OUTPUT, PATCH)
    )


def test_the_hidden_statement_holds_no_line_the_tests_add() -> None:
    statement = hidden_statement(from_a_commit())
    for line in added_lines(TEST_PATCH) | added_lines(PATCH):
        assert line not in statement, line
    assert "assert double(4) == 8" not in statement  # quoted by the traceback, marker and all


def test_the_hidden_statement_names_no_test_the_test_patch_adds() -> None:
    statement = hidden_statement(from_a_commit())
    assert "test_double_of_four" not in statement and "test_double_of_zero" not in statement
    assert "tests/test_double.py" not in statement
    assert "These tests fail and should pass" not in statement


def test_the_hidden_statement_keeps_the_message_and_the_error() -> None:
    statement = hidden_statement(from_a_commit())
    assert statement.startswith("Fix double: it tripled\n\nSeen in the report totals.\n")
    assert "E       assert 12 == 8" in statement
    assert "E        +  where 12 = double(4)" in statement


def test_an_issue_statement_is_kept_but_for_the_lines_the_fix_adds() -> None:
    issue = compose(
        "Fix double (#3)",
        F2P,
        OUTPUT,
        PATCH,
        ("double triples", "double(4) gives 12.\nreturn x * 2  # twice, not thrice"),
    )
    assert hidden_statement(mined(issue)) == "double triples\n\ndouble(4) gives 12."


def test_a_test_that_was_there_before_may_be_named() -> None:
    neg = ["tests/test_mathx.py::test_neg"]
    task = mined(
        compose("Fix neg", neg, "FAILED tests/test_mathx.py::test_neg - assert 2 == -2\n", PATCH),
        neg,
    )
    assert "FAILED tests/test_mathx.py::test_neg - assert 2 == -2" in hidden_statement(task)


def test_the_hidden_statement_leaves_out_failures_of_other_test_files() -> None:
    beside = OUTPUT.replace(
        "1 failed, 2 passed in 0.05s\n",
        "ERROR tests/test_basic.py - pytest.PytestRemovedIn10Warning: Passing a non-Collection\n"
        "tests/test_basic.py:876: in <module>\n1 failed, 2 passed, 1 error in 0.05s\n",
    )
    statement = hidden_statement(mined(compose("Fix double: it tripled", F2P, beside, PATCH)))
    assert "test_basic" not in statement  # it fails before and after: not the task's
    assert "E       assert 12 == 8" in statement and "1 failed, 2 passed, 1 error" in statement


def test_a_dotted_name_is_no_test_file() -> None:
    output = OUTPUT.replace(
        "    def test_double_of_four():\n",
        "self = <tests.test_mathx.TestMath testMethod=test_neg>\n",
    )
    statement = hidden_statement(mined(compose("Fix double: it tripled", F2P, output, PATCH)))
    assert "self = <tests.test_mathx.TestMath testMethod=test_neg>" in statement


def test_the_failure_section_of_another_test_is_left_out_whole() -> None:
    # sqlparse's tests/test_cli.py fails on a newer Python before and after every fix; its
    # section's traceback names the test by its function alone, and the run took it for the task's
    beside = OUTPUT.replace(
        "=========================== short test summary info",
        "___________________________ test_encoding_gbk_stdout ___________________________\n"
        "\n"
        "    def test_encoding_gbk_stdout(filepath, load_file, capfd):\n"
        ">       sys.stdout.encoding = 'gbk'\n"
        "E       AttributeError: readonly attribute\n"
        "\n"
        "tests/test_cli.py:99: AttributeError\n"
        "=========================== short test summary info",
    )
    statement = hidden_statement(mined(compose("Fix double: it tripled", F2P, beside, PATCH)))
    assert "test_encoding_gbk_stdout" not in statement and "readonly" not in statement
    assert "E       assert 12 == 8" in statement  # the fix's own failure stays
    assert "FAILED tests/test_double.py" not in statement  # it names a test the patch adds
    assert "1 failed, 2 passed" in statement


def test_the_failure_section_of_a_parameter_of_the_fix_s_test_stays() -> None:
    f2p = ["tests/test_mathx.py::test_neg[2]"]
    output = (
        "________________________________ test_neg[2] _________________________________\n"
        "E       assert 2 == -2\n"
        "______________________________ test_unrelated[1] ______________________________\n"
        "E       assert 'other'\n"
        "=========================== short test summary info ============================\n"
        "1 failed in 0.01s\n"
    )
    statement = hidden_statement(mined(compose("Fix neg", f2p, output, PATCH), f2p))
    assert "E       assert 2 == -2" in statement and "test_neg[2]" in statement
    assert "unrelated" not in statement and "'other'" not in statement
    assert "1 failed in 0.01s" in statement


def test_a_section_whose_header_the_cut_left_out_goes_when_it_is_another_test_s() -> None:
    cut = (
        "ad_file at 0x7f307f151620>\n"
        "    def test_encoding_stdin_gbk(filepath, load_file, capfd):\n"
        ">           sys.stdout.encoding = 'gbk'\n"
        "E           AttributeError: readonly attribute\n"
        "\n" + OUTPUT.split("\n", 2)[2]  # from the first section header on
    )
    statement = hidden_statement(mined(compose("Fix double: it tripled", F2P, cut, PATCH)))
    assert "readonly" not in statement and "ad_file" not in statement
    assert "E       assert 12 == 8" in statement


def test_a_long_tap_log_s_statement_shows_the_failure_not_the_tail() -> None:
    """node-semver's layout: the failing assertion early in 20,000 characters of TAP, the rest
    passing lines of other files."""
    failure = (
        "# Subtest: test/functions/satisfies.js\n"
        "        not ok 110 - ~1.1 satisfied by 1.1.0-a\n"
        "          ---\n"
        "          at:\n"
        "            file: test/functions/satisfies.js\n"
        "          ...\n"
        "not ok 26 - test/functions/satisfies.js # time=62.012ms\n"
    )
    passing = "".join(f"    ok {n} - test covers a file {n}\n" for n in range(1, 800))
    output = "TAP version 13\n" + failure + "# Subtest: test/map.js\n" + passing
    statement = compose("Fix ~1.1 ranges", ["test/functions/satisfies.js"], output, PATCH)
    assert "not ok 110 - ~1.1 satisfied by 1.1.0-a" in statement
    assert "test covers a file 799" not in statement


def test_a_statement_shows_its_tasks_failing_test_before_a_failure_beside_it() -> None:
    """jest's output (recorded) fails `math › multiplies` first; the task's test is the other."""
    output = (Path(__file__).parents[1] / "gate/runner_outputs/js/jest29_default.txt").read_text()
    failing = ["tests/strings.test.js > strings > deep > deeper > fails too"]
    statement = compose("Fix deeper strings", failing, output, PATCH)
    shown = statement.split("Their output:\n```\n", 1)[1]
    assert shown.startswith("● strings › deep › deeper › fails too")
    assert "● math › multiplies" in shown
