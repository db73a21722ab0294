"""Fixes that span files, end to end through `cra solve`: steps that must change together land
as one group — each piece implemented by its own call on its own file, the gate judging them
once all are in, one commit — and a group that fails is rolled back whole and retried at the
piece its failure points to."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cli_runs import Solve, solve
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.repos import git_in, init_repo, write_files

pytestmark = pytest.mark.usefixtures("isolated_git")

GEOMETRY = '''"""Sizes."""


def area(w, h):
    """The area of a w × h rectangle."""
    return w * h
'''
REPORT = '''"""Words about sizes."""

from shapes.geometry import area


def describe(w, h):
    """A sentence about a w × h rectangle."""
    return f"area {area(w, h)}"
'''
CLI = '''"""The command line."""

from shapes.geometry import area


def main(args):
    """The area of the size given as two arguments."""
    return area(int(args[0]), int(args[1]))
'''
TESTS = """from shapes.cli import main
from shapes.geometry import area
from shapes.report import describe


def test_describe():
    assert describe(2, 3) == "area 6"


def test_main():
    assert main(["2", "3"]) == 6


def test_area_takes_a_size():
    assert area((2, 3)) == 6
"""
TASK = "tests/test_shapes.py::test_area_takes_a_size fails: area should take one (w, h) size"


def edit(path: str, search: str, replacement: str) -> str:
    return (
        f'<edit file="{path}">\n<search>\n{search}\n</search>\n'
        f"<replacement>\n{replacement}\n</replacement>\n</edit>"
    )


NEW_AREA = edit("shapes/geometry.py", "def area(w, h):", "def area(size):\n    w, h = size")
NEW_REPORT = edit(
    "shapes/report.py", 'return f"area {area(w, h)}"', 'return f"area {area((w, h))}"'
)
WRONG_REPORT = edit(
    "shapes/report.py",
    '"""A sentence about a w × h rectangle."""',
    '"""A sentence about the rectangle."""',
)
NEW_CLI = edit(
    "shapes/cli.py",
    "return area(int(args[0]), int(args[1]))",
    "return area((int(args[0]), int(args[1])))",
)


def step(
    sid: str,
    description: str,
    files: list[str],
    *,
    deps: tuple[str, ...] = (),
    lands_with: tuple[str, ...] = (),
) -> dict[str, Any]:
    return {
        "id": sid,
        "description": description,
        "target_files": files,
        "target_symbols": [],
        "depends_on": list(deps),
        "lands_with": list(lands_with),
        "changes_existing_tests": False,
    }


SIGNATURE_STEPS = [
    step("s1", "Make area take one (w, h) size", ["shapes/geometry.py"]),
    step(
        "s2",
        "Call area with a size in describe",
        ["shapes/report.py"],
        deps=("s1",),
        lands_with=("s1",),
    ),
    step(
        "s3", "Call area with a size in main", ["shapes/cli.py"], deps=("s1",), lands_with=("s1",)
    ),
]


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


def validation_kinds(run: Solve) -> list[str]:
    """The kind of every test run the run log holds under the run's attempts."""
    log = run.log()
    try:
        [summary] = log.list_orchestrator_runs()
        detail = log.get_orchestrator_run(summary.task_id)
        assert detail is not None
        kinds = []
        for p in detail.passes:
            task_run = log.get_task_run(p.task_run_id)
            assert task_run is not None
            kinds += [v.kind for a in task_run.attempts for v in a.validations]
        return kinds
    finally:
        log.close()


def shapes_repo(root: Path, files: dict[str, str] | None = None) -> Path:
    init_repo(root)
    write_files(
        root,
        files
        or {
            ".gitignore": "__pycache__/\n",
            "shapes/__init__.py": "",
            "shapes/geometry.py": GEOMETRY,
            "shapes/report.py": REPORT,
            "shapes/cli.py": CLI,
            "tests/__init__.py": "",
            "tests/test_shapes.py": TESTS,
        },
    )
    git_in(root, "add", "--all")
    git_in(root, "commit", "--quiet", "-m", "Initial")
    return root


def script_plan(server: ScriptedModelServer, steps: list[dict[str, Any]]) -> None:
    files = [f for s in steps for f in s["target_files"]]
    server.script(
        "meta_plan",
        json.dumps(
            {
                "task_summary": "t",
                "rationale": "r",
                "parts": [
                    {
                        "id": "p1",
                        "description": "the change",
                        "affected_files": files,
                        "depends_on": [],
                    }
                ],
            }
        ),
    )
    server.script(
        "part_plan",
        json.dumps({"part_id": "p1", "task_summary": "t", "rationale": "r", "steps": steps}),
    )
    server.script(
        "adjustment", json.dumps({"revised_steps": [], "rationale": "done", "changes_made": []})
    )


def implement_prompts(server: ScriptedModelServer) -> list[tuple[str, str]]:
    """(stage, the file the step names) of every implement call, in order."""
    found = []
    for request in server.requests:
        if request.stage and request.stage.startswith("implement"):
            named = request.user_prompt.split("<step>", 1)[1].split("Files: ", 1)[1]
            found.append((request.stage, named.split("\n", 1)[0]))
    return found


def test_a_signature_change_and_its_two_callers_land_as_one_group(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    script_plan(server, SIGNATURE_STEPS)
    server.script("implement", NEW_AREA, NEW_REPORT, NEW_CLI)

    run = solve(tmp_path, server, TASK, shapes_repo(tmp_path / "repo"), capsys)

    assert run.code == 0, run.out
    assert "status: complete" in run.out
    assert implement_prompts(server) == [
        ("implement", "shapes/geometry.py"),
        ("implement", "shapes/report.py"),
        ("implement", "shapes/cli.py"),
    ]
    second = [r for r in server.requests if r.stage == "implement"][1]
    assert "<lands_with>" in second.user_prompt and "def area(size)" in second.user_prompt
    assert "test_describe" in second.user_prompt  # the tests after the first piece, shown
    assert run.commits() == ["Make area take one (w, h) size (and 2 more landing with it)"]
    assert "area((w, h))" in run.show("shapes/report.py")
    assert "p1/s1+s2+s3 landed together after 1 round(s)" in run.out
    assert validation_kinds(run).count("piece") == 2  # after s1 and s2, for information


def test_a_step_over_two_files_lands_its_rename_and_imports_together(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = shapes_repo(tmp_path / "repo")
    write_files(
        repo,
        {
            "tests/test_rename.py": "from shapes.geometry import surface\n\n\n"
            "def test_surface():\n"
            "    assert surface(2, 3) == 6\n"
        },
    )
    git_in(repo, "add", "--all")
    git_in(repo, "commit", "--quiet", "-m", "A test of the new name")
    script_plan(
        server,
        [
            step(
                "s1",
                "Rename area to surface and import it by its new name",
                ["shapes/geometry.py", "shapes/report.py", "shapes/cli.py"],
            )
        ],
    )
    server.script(
        "implement",
        edit("shapes/geometry.py", "def area(w, h):", "def surface(w, h):"),
        edit(
            "shapes/report.py",
            "from shapes.geometry import area\n",
            "from shapes.geometry import surface as area\n",
        ),
        edit(
            "shapes/cli.py",
            "from shapes.geometry import area\n",
            "from shapes.geometry import surface as area\n",
        ),
    )
    old_tests = TESTS.replace("from shapes.geometry import area\n", "").replace(
        "\n\ndef test_area_takes_a_size():\n    assert area((2, 3)) == 6\n", ""
    )
    write_files(repo, {"tests/test_shapes.py": old_tests})
    git_in(repo, "commit", "--quiet", "-am", "Tests of the callers only")

    run = solve(
        tmp_path, server, "tests/test_rename.py::test_surface fails: rename area", repo, capsys
    )

    assert run.code == 0, run.out
    assert [f for _, f in implement_prompts(server)] == [
        "shapes/geometry.py",
        "shapes/report.py",
        "shapes/cli.py",
    ]
    assert "p1/s1.1+s1.2+s1.3 landed together" in run.out
    assert "step s1 changes 3 source files" in run.out
    assert run.commits() == ["Rename area to surface and import it by its new name"]


def test_a_new_helper_module_and_its_first_user_land_together(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = shapes_repo(tmp_path / "repo")
    write_files(
        repo,
        {
            "tests/test_words.py": "from shapes.report import describe\n\n\n"
            "def test_describe_in_words():\n"
            '    assert describe(2, 3) == "area six"\n'
        },
    )
    git_in(repo, "add", "--all")
    git_in(repo, "commit", "--quiet", "-m", "A test of words")
    script_plan(
        server,
        [
            step("s1", "Add shapes/words.py with in_words", ["shapes/words.py"]),
            step(
                "s2",
                "Describe the area in words",
                ["shapes/report.py"],
                deps=("s1",),
                lands_with=("s1",),
            ),
        ],
    )
    server.script(
        "implement",
        edit("shapes/words.py", "", 'def in_words(n):\n    return {6: "six"}[n]\n'),
        edit(
            "shapes/report.py",
            'return f"area {area(w, h)}"',
            'from shapes.words import in_words\n\n    return f"area {in_words(area(w, h))}"',
        ),
    )
    write_files(repo, {"tests/test_shapes.py": TESTS.replace('"area 6"', '"area six"')})
    git_in(repo, "commit", "--quiet", "-am", "describe speaks words")

    run = solve(tmp_path, server, "tests/test_words.py::test_describe_in_words fails", repo, capsys)

    assert run.code == 0, run.out
    assert len(implement_prompts(server)) == 2
    assert "p1/s1+s2 landed together" in run.out
    assert len(run.commits()) == 1
    assert "in_words" in run.show("shapes/words.py")


def test_a_group_whose_second_piece_is_wrong_is_rolled_back_and_that_piece_retried(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    script_plan(server, SIGNATURE_STEPS)
    server.script("implement", NEW_AREA, WRONG_REPORT, NEW_CLI)
    server.script("implement_retry", NEW_REPORT)

    run = solve(tmp_path, server, TASK, shapes_repo(tmp_path / "repo"), capsys)

    assert run.code == 0, run.out
    assert implement_prompts(server) == [
        ("implement", "shapes/geometry.py"),
        ("implement", "shapes/report.py"),
        ("implement", "shapes/cli.py"),
        ("implement_retry", "shapes/report.py"),
    ]
    retry = next(r for r in server.requests if r.stage == "implement_retry")
    assert "landed together and were judged together" in retry.user_prompt
    assert "tests/test_shapes.py::test_describe" in retry.user_prompt
    assert "round 1: made s1, s2, s3; tests failed" in run.out
    assert "round 2: made s2; tests passed" in run.out
    assert len(run.commits()) == 1
    assert run.show("shapes/report.py") == REPORT.replace("area(w, h)", "area((w, h))")
    assert "A sentence about a w × h rectangle" in run.show("shapes/report.py")  # rolled back


def test_a_group_that_never_passes_is_rolled_back_whole_and_commits_nothing(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    script_plan(server, SIGNATURE_STEPS)
    server.script("implement", NEW_AREA, WRONG_REPORT, NEW_CLI)
    server.script("implement_retry", WRONG_REPORT)

    run = solve(tmp_path, server, TASK, shapes_repo(tmp_path / "repo"), capsys)

    assert run.code != 0
    assert "status: failed" in run.out
    assert "p1/s1+s2+s3 failed together after 2 round(s)" in run.out
    assert git_in(run.repo, "branch", "--list", "cra/*").strip() == ""
    assert git_in(run.repo, "status", "--porcelain") == ""


def test_a_group_that_weakens_a_test_is_still_refused(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    weaken = step(
        "s2",
        "Adapt the tests of describe",
        ["tests/test_shapes.py"],
        deps=("s1",),
        lands_with=("s1",),
    )
    script_plan(server, [*SIGNATURE_STEPS[:1], weaken, SIGNATURE_STEPS[2]])
    server.script(
        "implement",
        NEW_AREA,
        edit(
            "tests/test_shapes.py",
            'def test_describe():\n    assert describe(2, 3) == "area 6"\n',
            "",
        ),
        NEW_CLI,
    )
    server.script("implement_retry", NEW_REPORT)

    run = solve(tmp_path, server, TASK, shapes_repo(tmp_path / "repo"), capsys)

    retry = next(r for r in server.requests if r.stage == "implement_retry")
    assert "no longer ran" in retry.user_prompt
    assert "Do not delete, empty, skip" in retry.user_prompt
    assert run.code == 0, run.out
    assert run.show("tests/test_shapes.py") == TESTS
    assert "area((w, h))" in run.show("shapes/report.py")
