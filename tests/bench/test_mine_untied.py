"""Mining a history whose test ids change from run to run (here, a count of the runs in every
test's name): no task can be found, and the mine says so by its own reason, with an id of
each run, instead of calling the fix an ordinary commit."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from agent.bench.mining.mine import MineOptions, mine
from agent.bench.mining.replay import NO_TASK, UNTIED
from tests.bench.history import bed, commit, replace
from tests.fakes.repos import ISOLATED_GIT_ENV, init_repo

# A runner printing TAP whose every test name holds how many times it ran in this tree.
RUNNER = """import glob, importlib.util, pathlib

count = pathlib.Path(".runs")
run = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(run))

tests = []
for path in sorted(glob.glob("tests/test_*.py")):
    spec = importlib.util.spec_from_file_location(path[:-3].replace("/", "."), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tests += [(path, n, f) for n, f in vars(module).items() if n.startswith("test_")]
print(f"1..{len(tests)}")
for number, (path, name, function) in enumerate(tests, 1):
    try:
        function()
        ok = "ok"
    except AssertionError:
        ok = "not ok"
    print(f"{ok} {number} - {path} > {name} [run {run}]")
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    os.environ.update(ISOLATED_GIT_ENV)
    repo = init_repo(tmp_path_factory.mktemp("untied") / "repo")
    command = f"{shlex.quote(sys.executable)} run_tests.py"
    commit(
        repo,
        {
            "cra.toml": f"[testing]\ntest_command = {json.dumps(command)}\ntimeout = 120\n",
            "run_tests.py": RUNNER,
            "pkg/__init__.py": "",
            "pkg/m.py": "def double(x):\n    return x * 3\n",
            "tests/test_m.py": "def test_true():\n    assert True\n",
        },
        "Initial",
    )
    fix = commit(
        repo,
        {
            "pkg/m.py": replace(repo, "pkg/m.py", "x * 3", "x * 2"),
            "tests/test_double.py": "from pkg.m import double\n\n\ndef test_double():\n"
            "    assert double(2) == 4\n",
        },
        "Fix double",
    )
    return repo, fix


def test_a_fix_whose_test_ids_change_every_run_is_left_out_as_untied(
    repo: tuple[Path, str], tmp_path: Path
) -> None:
    path, fix = repo
    mined = mine(path, bed(path, tmp_path), MineOptions())
    assert mined.tasks == []
    assert mined.skipped.get(UNTIED) == 1 and NO_TASK not in mined.skipped
    [note] = [n for n in mined.notes if "could not be tied" in n]
    assert fix[:12] in note
    assert "before: tests/test_double.py > test_double [run 1]" in note
    assert "after: tests/test_double.py > test_double [run 2]" in note
