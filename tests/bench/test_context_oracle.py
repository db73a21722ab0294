"""The context-honest oracle through the real CLI: it resolves a fix whose code retrieval shows
it, leaves unresolved one whose code retrieval cannot bring into the window, and the results say
which hunk no implement call saw; the report shows what the calls cost and saw."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agent.bench.oracle.label import OracleSpec, parse_label
from agent.bench.results import read_results
from tests.bench.history import commit, replace
from tests.e2e.first_hour import clean_env, program
from tests.fakes.repos import ISOLATED_GIT_ENV, TEST_COMMAND, init_repo

SHOWN = "def double(x):\n    return x * 3\n"
FILLER = "".join(
    f"\n\ndef unrelated_{n}(a, b):\n    total = a + b * {n}\n    return total - {n}\n"
    for n in range(300)
)
# The fix is in a helper no text names, in a file too large to show whole in a small window:
# retrieval shows describe() (the test names it) and only the signatures of the rest.
BIG = (
    'def describe(x):\n    return f"value {_scale(x)}"\n'
    + FILLER
    + "\n\ndef _scale(x):\n    return x * 3\n"
)
WINDOWS = "".join(
    f"[models.{role}]\ncontext_window = 4096\n" for role in ("reasoning", "coding", "classifier")
)
CONFIG = (
    f"[testing]\ntest_command = {json.dumps(TEST_COMMAND)}\ntimeout = 120\n{WINDOWS}"
    "[budget]\nreserved_tokens = 512\n[retrieval]\nstages = []\n"
)


pytestmark = pytest.mark.usefixtures("isolated_git")


def cra(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*program("cra"), "--data-dir", str(tmp / "data"), *args],
        env=clean_env(tmp),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def benched(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A history of two fixes, mined and run by the context oracle: the results file, and
    each fix's commit by the file it changes."""
    os.environ.update(ISOLATED_GIT_ENV)
    tmp = tmp_path_factory.mktemp("context")
    repo = init_repo(tmp / "repo")
    commit(
        repo,
        {
            "cra.toml": CONFIG,
            "pkg/__init__.py": "",
            "pkg/shown.py": SHOWN,
            "pkg/big.py": BIG,
            "tests/__init__.py": "",
        },
        "Initial",
    )
    fixes = {
        "pkg/shown.py": commit(
            repo,
            {
                "pkg/shown.py": replace(repo, "pkg/shown.py", "x * 3", "x * 2"),
                "tests/test_double.py": "from pkg.shown import double\n\n\ndef test_double():\n"
                "    assert double(4) == 8\n",
            },
            "Fix double",
        ),
        "pkg/big.py": commit(
            repo,
            {
                "pkg/big.py": replace(repo, "pkg/big.py", "x * 3", "x * 2"),
                "tests/test_describe.py": "from pkg.big import describe\n\n\n"
                "def test_describe():\n"
                '    assert describe(2) == "value 4"\n',
            },
            "Fix describe",
        ),
    }
    tasks, results = tmp / "tasks.jsonl", tmp / "results.jsonl"
    mined = cra(tmp, "bench", "mine", "--repo", str(repo), "--output", str(tasks))
    assert mined.returncode == 0 and "2 task(s)" in mined.stderr, mined.stderr
    ran = cra(
        tmp,
        "bench",
        "run",
        str(tasks),
        "--repo",
        str(repo),
        "--results",
        str(results),
        "--model",
        "oracle:context",
        "--jobs",
        "2",
        "--tests",
        "given",
    )
    assert ran.returncode == 0, ran.stderr
    return results, fixes


def test_a_fix_whose_code_retrieval_shows_is_resolved(benched: tuple[Path, dict[str, str]]) -> None:
    results, fixes = benched
    [found] = [
        r for r in read_results(results) if r.instance_id.endswith(fixes["pkg/shown.py"][:12])
    ]
    assert found.resolved, found
    assert found.gold_files_seen == {"pkg/shown.py": True}
    assert found.gold_hunks_seen == {"pkg/shown.py:1-2": True}


def test_a_fix_in_a_file_retrieval_cannot_reach_is_not_and_says_which_hunk(
    benched: tuple[Path, dict[str, str]],
) -> None:
    results, fixes = benched
    [found] = [r for r in read_results(results) if r.instance_id.endswith(fixes["pkg/big.py"][:12])]
    assert found.outcome == "unresolved"
    [(hunk, seen)] = found.gold_hunks_seen.items()
    assert hunk.startswith("pkg/big.py:") and not seen
    assert found.calls_by_stage.get("implementing", 0) >= 1


def test_the_report_shows_what_the_calls_cost_and_saw(
    benched: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    results, _ = benched
    shown = cra(tmp_path, "bench", "report", str(results))
    assert shown.returncode == 0, shown.stderr
    assert "what the calls cost and saw, per task:" in shown.stdout
    assert "hunks 0/1" in shown.stdout and "hunks 1/1" in shown.stdout
    data = json.loads(cra(tmp_path, "bench", "report", str(results), "--json").stdout)
    [model] = data["models"]
    assert model["model"] == "oracle:context" and model["gold_hunks_seen"] == 0.5


@pytest.mark.parametrize(
    ("label", "spec"),
    [
        ("oracle", OracleSpec()),
        ("oracle:context", OracleSpec(context=True)),
        ("oracle:context+edits@0.5", OracleSpec(context=True, mode="edits", rate=0.5)),
        ("oracle:plans", OracleSpec(mode="plans")),
    ],
)
def test_oracle_labels_name_the_context_mode_and_one_noise_mode(
    label: str, spec: OracleSpec
) -> None:
    assert parse_label(label) == spec


@pytest.mark.parametrize(
    ("label", "why"),
    [("oracle:edits+plans", "more than one"), ("oracle:context+nonsense", "unknown")],
)
def test_two_noise_modes_or_an_unknown_one_are_refused(label: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_label(label)
