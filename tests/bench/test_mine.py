"""`cra bench mine` on a history built in the test: exactly the fix commits become tasks, with
the right FAIL_TO_PASS and PASS_TO_PASS; statements never hold the fix; the file is SWE-bench's
instance schema."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agent.bench.mining.mine import MineOptions, mine
from agent.bench.statement import added_lines, compose, linked_issue
from agent.bench.tasks import BenchTask, read_tasks, write_tasks
from agent.bench.trees import checkout
from tests.bench.history import History, bed
from tests.fakes.github_server import FakeGitHub

# SWE-bench's instance fields and the types its datasets give them (test lists: JSON strings).
SWE_BENCH_FIELDS = {
    "instance_id": str,
    "repo": str,
    "base_commit": str,
    "patch": str,
    "test_patch": str,
    "problem_statement": str,
    "hints_text": str,
    "created_at": str,
    "version": str,
    "environment_setup_commit": str,
    "FAIL_TO_PASS": str,
    "PASS_TO_PASS": str,
}


pytestmark = pytest.mark.usefixtures("isolated_git")


@pytest.fixture(scope="module")
def mined(history: History, tmp_path_factory: pytest.TempPathFactory) -> list[BenchTask]:
    tmp = tmp_path_factory.mktemp("mine")
    return mine(history.repo, bed(history.repo, tmp), MineOptions()).tasks


def by_commit(tasks: list[BenchTask], commit: str) -> BenchTask:
    [task] = [t for t in tasks if t.instance_id.endswith(commit[:12])]
    return task


def test_exactly_the_fix_commits_become_tasks(history: History, mined: list[BenchTask]) -> None:
    kept = {t.instance_id.rsplit("-", 1)[1] for t in mined}
    assert kept == {history.fix_double[:12], history.docs_and_fix[:12], history.fix_inc[:12]}


def test_fail_to_pass_and_pass_to_pass_are_the_tests_own_outcomes(
    history: History,
    mined: list[BenchTask],
) -> None:
    double = by_commit(mined, history.fix_double)
    assert double.FAIL_TO_PASS == ["tests/test_double.py::test_double"]
    assert double.PASS_TO_PASS == ["tests/test_mathx.py::test_neg"]
    half = by_commit(mined, history.docs_and_fix)
    assert half.FAIL_TO_PASS == [
        "tests/test_half.py::test_half",
        "tests/test_half.py::test_half_odd",
    ]
    assert "tests/test_double.py::test_double" in half.PASS_TO_PASS
    assert "README.md" in half.patch and "README.md" not in half.test_patch
    assert "tests/test_half.py" in half.test_patch and "tests/" not in half.patch
    assert half.base_commit == history.only_tests


def test_statements_never_hold_the_fix(mined: list[BenchTask]) -> None:
    for task in mined:
        for line in added_lines(task.patch):
            assert line not in task.problem_statement, (task.instance_id, line)
    assert all("These tests fail and should pass" in t.problem_statement for t in mined)


def test_a_statement_that_quotes_the_fix_is_scrubbed() -> None:
    patch = "+++ b/pkg/x.py\n+    return compute_the_answer(x) * 2\n"
    text = compose(
        "Fix it:\n    return compute_the_answer(x) * 2\nplease", ["t::a"], "E boom", patch
    )
    assert "compute_the_answer" not in text and "please" in text


def test_the_linked_issue_is_the_statement_when_the_api_can_read_it(
    history: History,
    tmp_path: Path,
) -> None:
    with FakeGitHub() as fake:
        fake.add_repo("Codertocat/mathx")
        fake.add_issue(
            "Codertocat/mathx", number=5, title="inc adds two", body="inc(1) gives 3, not 2."
        )
        fake.add_static_token("ghs_bench")
        options = MineOptions(
            repo_name="Codertocat/mathx",
            github_api=fake.api_url,
            github_token="ghs_bench",
            max_commits=2,
        )
        tasks = mine(history.repo, bed(history.repo, tmp_path), options).tasks
    inc = by_commit(tasks, history.fix_inc)
    assert inc.problem_statement == "inc adds two\n\ninc(1) gives 3, not 2."
    assert inc.instance_id == f"Codertocat__mathx-{history.fix_inc[:12]}"


def test_a_commit_naming_an_issue_is_found() -> None:
    assert linked_issue("Fix inc (closes #5)") == 5
    assert linked_issue("Merge pull request #12 from a/b") == 12
    assert linked_issue("See https://x.org/a#5 and &#39;") is None


def test_the_file_is_swe_benchs_instance_schema(mined: list[BenchTask], tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    assert write_tasks(path, mined) == len(mined)
    for line in path.read_text().splitlines():
        data = json.loads(line)
        assert set(SWE_BENCH_FIELDS) <= set(data)
        for name, kind in SWE_BENCH_FIELDS.items():
            assert isinstance(data[name], kind), name
        assert re.fullmatch(r"[0-9a-f]{40}", data["base_commit"])
        assert isinstance(json.loads(data["FAIL_TO_PASS"]), list)
        assert isinstance(json.loads(data["PASS_TO_PASS"]), list)
    assert list(read_tasks(path)) == mined


def test_a_swe_bench_file_with_list_fields_or_a_json_array_is_read(tmp_path: Path) -> None:
    item = {field: "x" for field in SWE_BENCH_FIELDS}
    item.update(FAIL_TO_PASS=["a::b"], PASS_TO_PASS=[], instance_id="o__r-1")
    (tmp_path / "lines.jsonl").write_text(json.dumps(item) + "\n")
    (tmp_path / "array.json").write_text(json.dumps([item]))
    for name in ("lines.jsonl", "array.json"):
        [task] = read_tasks(tmp_path / name)
        assert task.FAIL_TO_PASS == ["a::b"] and task.instance_id == "o__r-1"


def test_a_checkout_under_a_relative_work_folder_lands_there(
    history: History,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `cra --data-dir data bench mine` once made every worktree inside the repository (git runs
    # there) and then looked for it here, so that no commit's tests applied
    monkeypatch.chdir(tmp_path)
    with checkout(history.repo, "HEAD", Path("work")) as tree:
        assert tree.is_absolute() and tree.parent == tmp_path / "work"
        assert any(tree.iterdir())
