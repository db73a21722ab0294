"""The oracle's answer to the reproduction call: the tests the fix adds (never the existing
tests it changes, which come with the fix); context-honest, only the hunks whose place the
prompt shows, else a request for the test file, then a plain decline."""

from __future__ import annotations

from agent.bench.oracle.label import parse_label
from agent.bench.oracle.model import NO_NEW_TEST, UNSEEN_TESTS, OracleModel
from agent.bench.tasks import BenchTask
from agent.config.files import ModelConfig
from agent.execute.parsers import parse_implement_response

SOURCE = "def scale(x):\n    return x * 3\n"
PATCH = """diff --git a/pkg/mod.py b/pkg/mod.py
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -1,2 +1,2 @@
 def scale(x):
-    return x * 3
+    return x * 2
"""
TESTS_BEFORE = "from pkg.mod import scale\n\n\ndef test_zero():\n    assert scale(0) == 0\n"
ADDS = """diff --git a/tests/test_mod.py b/tests/test_mod.py
--- a/tests/test_mod.py
+++ b/tests/test_mod.py
@@ -3,3 +3,7 @@ from pkg.mod import scale
{blank}
 def test_zero():
     assert scale(0) == 0
+
+
+def test_scale():
+    assert scale(4) == 8
""".replace("{blank}", " ")
PINS = """diff --git a/tests/test_mod.py b/tests/test_mod.py
--- a/tests/test_mod.py
+++ b/tests/test_mod.py
@@ -4,2 +4,2 @@ from pkg.mod import scale
 def test_zero():
-    assert scale(0) == 0
+    assert scale(1) == 2
"""
SHOWN = (
    f'<files>\n<file path="tests/test_mod.py">\n{TESTS_BEFORE}</file>\n</files>\n<task>\nx\n</task>'
)


BEFORE_FILES = {"pkg/mod.py": SOURCE, "tests/test_mod.py": TESTS_BEFORE}


def model_task(test_patch: str) -> BenchTask:
    return BenchTask(
        instance_id="o__r-1",
        repo="o/r",
        base_commit="a" * 40,
        patch=PATCH,
        test_patch=test_patch,
        problem_statement="scale doubles no more",
        FAIL_TO_PASS=["tests/test_mod.py::test_scale"],
    )


def oracle(test_patch: str, label: str = "oracle") -> OracleModel:
    before = dict(BEFORE_FILES)
    return OracleModel(
        ModelConfig(model="oracle"), model_task(test_patch), before, parse_label(label)
    )


def test_the_reproduction_is_the_tests_the_fix_adds() -> None:
    answer = oracle(ADDS).complete("", SHOWN, stage="reproduce").text
    [edit] = parse_implement_response(answer)
    assert edit.file_path == "tests/test_mod.py" and "def test_scale" in edit.replacement


WORKFLOW = """diff --git a/.github/workflows/tests.yaml b/.github/workflows/tests.yaml
new file mode 100644
--- /dev/null
+++ b/.github/workflows/tests.yaml
@@ -0,0 +1,2 @@
+on: [push]
+jobs: {}
"""


def test_the_reproduction_leaves_out_a_workflow_the_test_patch_adds() -> None:
    """A CI workflow named like a test file is in the test patch, but cra never edits one (a
    protected path refuses the whole answer), nor would a model reproducing a bug."""
    [edit] = parse_implement_response(
        oracle(ADDS + WORKFLOW).complete("", SHOWN, stage="reproduce").text
    )
    assert edit.file_path == "tests/test_mod.py"


def test_a_fix_that_only_changes_existing_tests_declines() -> None:
    assert oracle(PINS).complete("", SHOWN, stage="reproduce").text == NO_NEW_TEST


def test_the_context_oracle_writes_only_where_it_is_shown() -> None:
    honest = oracle(ADDS, "oracle:context")
    unseen = "<files>\n</files>\n<task>\nscale doubles no more\n</task>"
    assert honest.complete("", unseen, stage="reproduce").text == (
        "<need_context>tests/test_mod.py</need_context>"
    )
    assert honest.complete("", unseen, stage="reproduce_refined").text == UNSEEN_TESTS
    [edit] = parse_implement_response(honest.complete("", SHOWN, stage="reproduce_retry").text)
    assert "def test_scale" in edit.replacement


DATA = """diff --git a/tests/data/case.json b/tests/data/case.json
--- a/tests/data/case.json
+++ b/tests/data/case.json
@@ -1,1 +1,2 @@
-{"a": 1}
+{"a": 1,
+ "b": 2}
"""


def test_a_data_driven_suite_s_case_files_come_whole_with_the_reproduction() -> None:
    """The expectations of a data-driven suite are the new test: a changed case file comes
    with the reproduction, not with the fix."""
    model = oracle(DATA)
    model.before["tests/data/case.json"] = '{"a": 1}'
    [edit] = parse_implement_response(model.complete("", SHOWN, stage="reproduce").text)
    assert edit.file_path == "tests/data/case.json" and '"b": 2' in edit.replacement


PAIR = """diff --git a/tests/data/case.json b/tests/data/case.json
--- a/tests/data/case.json
+++ b/tests/data/case.json
@@ -1,1 +1,1 @@
-{"a": 1}
+{"a": 1, "b": 2}
diff --git a/tests/data/case.toml b/tests/data/case.toml
--- a/tests/data/case.toml
+++ b/tests/data/case.toml
@@ -1,1 +1,2 @@
-a = 1
+a = 1
+b = 2
"""


def test_a_data_driven_case_is_written_whole_or_not_at_all() -> None:
    """Shown the expectations but not the case file, the context oracle asks for it, and
    still unseen it writes no test: half a case can never pass."""
    model = oracle(PAIR, "oracle:context")
    model.before.update({"tests/data/case.json": '{"a": 1}', "tests/data/case.toml": "a = 1"})
    half = '<files>\n<file path="tests/data/case.json">\n{"a": 1}\n</file>\n</files>'
    assert model.complete("", half, stage="reproduce").text == (
        "<need_context>tests/data/case.toml</need_context>"
    )
    assert model.complete("", half, stage="reproduce_refined").text == UNSEEN_TESTS
    both = half.replace("</files>", '<file path="tests/data/case.toml">\na = 1\n</file>\n</files>')
    edits = parse_implement_response(model.complete("", both, stage="reproduce_retry").text)
    assert sorted(e.file_path for e in edits) == ["tests/data/case.json", "tests/data/case.toml"]


PINS_AND_ADDS = PINS.replace(
    "@@ -4,2 +4,2 @@ from pkg.mod import scale",
    "@@ -1,1 +1,2 @@\n from pkg.mod import scale\n+from pkg.mod import ScaleError\n"
    "@@ -4,2 +5,2 @@ from pkg.mod import scale",
)


def test_a_test_file_whose_tests_the_fix_changes_comes_whole_with_the_fix() -> None:
    """An import the changed tests use is added beside them: with the tests hidden it comes
    with the fix's change of that file, never apart (sqlparse: SQLParseError)."""
    model = oracle(PINS_AND_ADDS, "oracle")
    model_hidden = OracleModel(
        ModelConfig(model="oracle"), model_task(PINS_AND_ADDS), BEFORE_FILES, hidden=True
    )
    assert model.complete("", SHOWN, stage="reproduce").text == NO_NEW_TEST
    step = "<step>\\nApply the fix\\nFiles: tests/test_mod.py\\n</step>"
    edits = parse_implement_response(model_hidden.complete("", step, stage="implement").text)
    assert "ScaleError" in "".join(e.replacement for e in edits)


def judged(test_diff: str, label: str = "oracle") -> str:
    user = f"<task>\nx\n</task>\n\n<test>\n{test_diff}\n</test>\n\n<failure>\nF\n</failure>"
    return oracle(ADDS, label).complete("", user, stage="reproduction_wrong").text


def test_the_oracle_judges_a_reproduction_wrong_when_it_is_not_the_fix_s_tests() -> None:
    """Asked whether the test or the fix is wrong, it answers from the test shown: the fix's
    own tests are right; a line they never hold (the spoiled assert) makes it wrong."""
    assert judged(ADDS) == "no"
    assert judged(ADDS.replace("== 8", "== 9")) == "yes"


JS_TESTS = "t.test('sorting', t => Promise.all([\n  ['1.2.3'],\n].map(check)))\n"
SNAPSHOT = "exports[`test/bin/semver.js TAP sorting > 1.2.3 1`] = `\n1.2.3\n`\n"
SNAPSHOTTED = """diff --git a/{snap} b/{snap}
--- a/{snap}
+++ b/{snap}
@@ -1,3 +1,7 @@
 exports[`test/bin/semver.js TAP sorting > 1.2.3 1`] = `
 1.2.3
 `
+
+exports[`test/bin/semver.js TAP sorting > 1.2.3foo -l 1`] = `
+1.2.3-foo
+`
diff --git a/test/bin/semver.js b/test/bin/semver.js
--- a/test/bin/semver.js
+++ b/test/bin/semver.js
@@ -1,3 +1,4 @@
 t.test('sorting', t => Promise.all([
   ['1.2.3'],
+  ['1.2.3foo', '-l'],
 ].map(check)))
""".replace("{snap}", "tap-snapshots/test/bin/semver.js.test.cjs")


def test_a_test_file_s_cases_come_with_their_snapshot_or_not_at_all() -> None:
    """A snapshot is its test file's expectations, whatever its suffix: the reproduction
    writes both; shown the test file but not the snapshot, it writes neither."""
    model = oracle(SNAPSHOTTED, "oracle:context")
    model.before.update(
        {"test/bin/semver.js": JS_TESTS, "tap-snapshots/test/bin/semver.js.test.cjs": SNAPSHOT}
    )
    half = f'<files>\n<file path="test/bin/semver.js">\n{JS_TESTS}</file>\n</files>'
    assert model.complete("", half, stage="reproduce").text == (
        "<need_context>tap-snapshots/test/bin/semver.js.test.cjs</need_context>"
    )
    assert model.complete("", half, stage="reproduce_refined").text == UNSEEN_TESTS
    snapshot = f'<file path="tap-snapshots/test/bin/semver.js.test.cjs">\n{SNAPSHOT}</file>\n'
    both = half.replace("</files>", f"{snapshot}</files>")
    edits = parse_implement_response(model.complete("", both, stage="reproduce_retry").text)
    assert sorted(e.file_path for e in edits) == [
        "tap-snapshots/test/bin/semver.js.test.cjs",
        "test/bin/semver.js",
    ]
