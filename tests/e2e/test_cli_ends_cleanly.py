"""`cra solve` ends cleanly (issue 11): SIGINT and SIGTERM during a model call cancel the run,
record it cancelled, remove its worktree and branch, print one line and exit 130 / 143; a run
whose process was killed leaves nothing that the next `cra` does not clean; a model server that
trickles its answer is cut at request_timeout and the run's error names the model first."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.cli.main import main
from agent.runlog.store import RunLog
from tests.e2e.first_hour import clean_env, program
from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.fakes.repos import (
    DEFAULT_CRA_TOML,
    MUL_BUG,
    MUL_FIX,
    TEST_COMMAND,
    git_in,
    make_python_project,
)
from tests.fakes.sandboxes import processes_with

pytestmark = pytest.mark.usefixtures("isolated_git")

STEP = {
    "id": "s1",
    "description": "Fix mul",
    "target_files": ["calc/ops.py"],
    "target_symbols": ["mul"],
    "depends_on": [],
}
NO_REPRODUCTION = "<no_reproduction>the task names no behaviour to test</no_reproduction>"
META = json.dumps(
    {
        "task_summary": "t",
        "rationale": "r",
        "parts": [
            {
                "id": "p1",
                "description": "Fix mul",
                "affected_files": ["calc/ops.py"],
                "depends_on": [],
            }
        ],
    }
)
PART = json.dumps({"part_id": "p1", "task_summary": "t", "rationale": "r", "steps": [STEP]})
# A second step keeps the plan's adjustment after the first (none follows a part's last step):
# its slow answer is where these runs are stopped, once the first step is committed.
THEN = {
    "id": "s2",
    "description": "Document mul",
    "target_files": ["calc/ops.py"],
    "target_symbols": ["mul"],
    "depends_on": ["s1"],
}
PART_TWO = json.dumps(
    {"part_id": "p1", "task_summary": "t", "rationale": "r", "steps": [STEP, THEN]}
)
FIX = (
    f'<edit file="calc/ops.py">\n<search>\n{MUL_BUG.rstrip()}\n</search>\n'
    f"<replacement>\n{MUL_FIX.rstrip()}\n</replacement>\n</edit>"
)


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as s:
        yield s


def write_config(tmp: Path, server: ScriptedModelServer, *, timeout: float = 60.0) -> Path:
    config = tmp / "cra-config.toml"
    config.write_text(
        "".join(
            f'[models.{role}]\nbase_url = "{server.url}"\nmodel = "{role}-m"\nmax_retries = 0\n'
            f"request_timeout = {timeout}\n"
            for role in ("reasoning", "coding", "classifier")
        )
        + f"[testing]\ntest_command = {json.dumps(TEST_COMMAND)}\ntimeout = 120\n"
        "[retrieval]\nstages = []\n"
    )
    return config


class Solve:
    """`cra solve` as a process, on a fresh calc project."""

    def __init__(self, tmp: Path, server: ScriptedModelServer, *extra: str) -> None:
        self.repo = make_python_project(tmp / "repo", bug=True, config=DEFAULT_CRA_TOML)
        self.data = tmp / "data"
        self.config = write_config(tmp, server)
        self.env = clean_env(tmp)
        self.extra = extra

    def start(self) -> subprocess.Popen[str]:
        argv = [
            *program("cra"),
            "--data-dir",
            str(self.data),
            "solve",
            "Fix mul",
            "--repo",
            str(self.repo),
            "--config",
            str(self.config),
            *self.extra,
        ]
        return subprocess.Popen(
            argv, env=self.env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )

    def branches(self) -> list[str]:
        return git_in(self.repo, "branch", "--list", "cra/*", "--format=%(refname:short)").split()

    def worktrees(self) -> list[Path]:
        folder = self.data / "worktrees"
        return sorted(folder.iterdir()) if folder.exists() else []

    def log(self) -> RunLog:
        return RunLog.open(f"sqlite:///{self.data / 'cra.db'}")


def wait_for_call(server: ScriptedModelServer, proc: subprocess.Popen[str], count: int = 1) -> None:
    """Until the run has made `count` scripted model calls (an unscripted one — the reproduction
    a test does not script — is answered at once: the run is not yet in the call it waits for)."""
    deadline = time.monotonic() + 120
    while len([r for r in server.requests if r.stage and not r.unscripted]) < count:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no model call"
        time.sleep(0.05)


def run_id_of(err: str) -> str:
    [line] = [line for line in err.splitlines() if "started — see it with" in line]
    return line.split("cra: run ", 1)[1].split()[0]


@pytest.mark.parametrize(
    ("signum", "code", "plan"),
    [
        (signal.SIGINT, 130, False),
        (signal.SIGTERM, 143, False),
        (signal.SIGINT, 130, True),
        (signal.SIGTERM, 143, True),
    ],
)
def test_a_signal_during_a_model_call_cancels_the_run_cleanly(
    tmp_path: Path,
    server: ScriptedModelServer,
    signum: int,
    code: int,
    plan: bool,
) -> None:
    if plan:
        plan_file = tmp_path / "plan.json"
        plan_file.write_text(
            json.dumps({"task_summary": "Fix mul", "rationale": "r", "steps": [STEP]})
        )
        server.script("implement", Reply(text=FIX, delay_s=60))
        solve = Solve(tmp_path, server, "--plan", str(plan_file))
    else:
        server.script("meta_plan", Reply(text=META, delay_s=60))
        solve = Solve(tmp_path, server)
    proc = solve.start()
    wait_for_call(server, proc)

    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)

    assert proc.returncode == code, err
    assert "Traceback" not in err, err
    [said] = [
        line for line in err.splitlines() if line.startswith("cra: run ") and "cancelled" in line
    ]
    name = signal.Signals(signum).name
    run_id = run_id_of(err)
    assert said == f"cra: run {run_id} cancelled (interrupted by {name})"
    assert solve.worktrees() == [] and solve.branches() == []
    with solve.log() as log:
        record = log.get_task_run(run_id) if plan else log.get_orchestrator_run(run_id)
        assert record is not None and record.status == "cancelled"


def test_keep_keeps_the_branch_of_an_interrupted_run(
    tmp_path: Path,
    server: ScriptedModelServer,
) -> None:
    server.script("reproduce", NO_REPRODUCTION)
    server.script("meta_plan", META)
    server.script("part_plan", PART_TWO)
    server.script("implement", FIX)
    server.script(
        "adjustment", Reply(text='{"revised_steps": [], "rationale": "done"}', delay_s=60)
    )
    solve = Solve(tmp_path, server, "--keep")
    proc = solve.start()
    wait_for_call(server, proc, count=5)

    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)

    assert proc.returncode == 130, err
    [branch] = solve.branches()
    assert f"its branch {branch} holds the 1 step(s) passed" in err
    assert solve.worktrees() == []


def test_the_next_run_removes_what_a_killed_run_left(
    tmp_path: Path,
    server: ScriptedModelServer,
) -> None:
    server.script("meta_plan", Reply(text=META, delay_s=60))
    solve = Solve(tmp_path, server)
    proc = solve.start()
    wait_for_call(server, proc)
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    killed = run_id_of(err)
    assert solve.worktrees() and solve.branches() == ["cra/fix-mul"]

    server.script("meta_plan", "not a plan", "still not a plan")  # the next run ends soon
    again = solve.start()
    _, err = again.communicate(timeout=120)

    assert f"cra: removed the worktree of run {killed}, whose process is gone" in err
    assert solve.worktrees() == [] and solve.branches() == []  # no "cra/fix-mul-2" either
    with solve.log() as log:
        record = log.get_orchestrator_run(killed)
        assert record is not None and record.status == "failed"


def test_a_live_runs_worktree_is_left_alone(tmp_path: Path, server: ScriptedModelServer) -> None:
    server.script("meta_plan", Reply(text=META, delay_s=60), "not a plan", "still not a plan")
    solve = Solve(tmp_path, server)
    first = solve.start()
    wait_for_call(server, first)
    [live] = [p for p in solve.worktrees() if p.is_dir()]
    try:
        second = solve.start()
        _, err = second.communicate(timeout=120)
        assert "whose process is gone" not in err
        assert live.is_dir()
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=60)


def test_a_trickling_model_is_cut_and_the_error_names_it_first(
    tmp_path: Path,
    server: ScriptedModelServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server.script("meta_plan", META)
    server.script("part_plan", PART)
    server.script("implement", Reply(text=FIX, trickle_s=0.5))
    repo = make_python_project(tmp_path / "repo", bug=True, config=DEFAULT_CRA_TOML)
    config = write_config(tmp_path, server, timeout=1.0)

    code = main(
        [
            "--data-dir",
            str(tmp_path / "data"),
            "solve",
            "--json",
            "Fix mul: tests/test_ops.py::test_mul fails",
            "--repo",
            str(repo),
            "--config",
            str(config),
        ]
    )

    result = json.loads(capsys.readouterr().out)
    assert code == 1 and result["status"] == "failed"
    assert result["error"].startswith("a model call failed: ollama ")
    assert "timed out after 1.0s" in result["error"]
    assert "(and so the tests the task names still fail" in result["error"]
    calls = [c for c in result["steps"][0]["attempts"]]
    assert calls, result
    assert result["usage"]["latency_ms"] >= 900  # the time the model took counts


def test_an_orchestrated_run_stores_its_effective_config(
    tmp_path: Path,
    server: ScriptedModelServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server.script("meta_plan", META)
    server.script("part_plan", PART)
    server.script("implement", FIX)
    server.script("adjustment", '{"revised_steps": [], "rationale": "done"}')
    repo = make_python_project(tmp_path / "repo", bug=True, config=DEFAULT_CRA_TOML)
    config = write_config(tmp_path, server, timeout=42.0)

    assert (
        main(
            [
                "--data-dir",
                str(tmp_path / "data"),
                "solve",
                "--json",
                "Fix mul",
                "--repo",
                str(repo),
                "--config",
                str(config),
            ]
        )
        == 0
    )
    run_id = json.loads(capsys.readouterr().out)["task_id"]

    with RunLog.open(f"sqlite:///{tmp_path / 'data' / 'cra.db'}") as log:
        run = log.get_orchestrator_run(run_id)
        assert run is not None
        [baseline] = [p for p in run.passes if p.pass_type == "baseline"]
        detail = log.get_task_run(baseline.task_run_id)
        assert detail is not None and detail.config_json is not None
    stored = json.loads(detail.config_json)
    assert stored["models"]["coding"]["request_timeout"] == 42.0
    assert stored["testing"]["test_command"] == TEST_COMMAND


def test_cra_runs_ends_a_killed_run_and_keeps_the_commits_it_made(
    tmp_path: Path,
    server: ScriptedModelServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server.script("reproduce", NO_REPRODUCTION)
    server.script("meta_plan", META)
    server.script("part_plan", PART_TWO)
    server.script("implement", FIX)
    server.script(
        "adjustment", Reply(text='{"revised_steps": [], "rationale": "done"}', delay_s=60)
    )
    solve = Solve(tmp_path, server)
    proc = solve.start()
    wait_for_call(server, proc, count=5)  # the first step passed and was committed
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    killed = run_id_of(err)

    assert main(["--data-dir", str(solve.data), "runs", "--json"]) == 0

    said = capsys.readouterr().err
    assert (
        f"cra: removed the worktree of run {killed}, whose process is gone; its branch "
        "cra/fix-mul keeps the commits it made"
    ) in said
    assert solve.worktrees() == [] and solve.branches() == ["cra/fix-mul"]
    with solve.log() as log:
        record = log.get_orchestrator_run(killed)
        assert record is not None and record.status == "failed"
        passes = [log.get_task_run(p.task_run_id) for p in record.passes]
    assert [p.status for p in passes if p is not None and p.status == "running"] == []
    assert any(p is not None and p.error == "interrupted: its cra process is gone" for p in passes)


def test_sigterm_while_the_tests_run_cancels_and_leaves_no_process(
    tmp_path: Path,
    server: ScriptedModelServer,
) -> None:
    marker = "417.25"  # a sleep no other test runs
    solve = Solve(tmp_path, server)
    solve.config.write_text(
        solve.config.read_text().replace(json.dumps(TEST_COMMAND), json.dumps(f"sleep {marker}"))
    )
    proc = solve.start()
    deadline = time.monotonic() + 120
    while not processes_with(marker):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the tests never started"
        time.sleep(0.05)

    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)

    assert proc.returncode == 143, err
    assert "Traceback" not in err, err
    run_id = run_id_of(err)
    assert f"cra: run {run_id} cancelled (interrupted by SIGTERM)" in err
    # The sandbox's processes die with it, by the kernel's hand: on a loaded machine that can
    # come a moment after cra's exit. Gone within seconds, or they leaked.
    deadline = time.monotonic() + 10
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(marker) == []
    assert solve.worktrees() == [] and solve.branches() == []
    with solve.log() as log:
        record = log.get_orchestrator_run(run_id)
        assert record is not None and record.status == "cancelled"


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_cra_plan_records_the_plan_run_cancelled(
    tmp_path: Path,
    server: ScriptedModelServer,
    signum: int,
    code: int,
) -> None:
    server.script("meta_plan", Reply(text=META, delay_s=60))
    solve = Solve(tmp_path, server)
    proc = subprocess.Popen(
        [
            *program("cra"),
            "--data-dir",
            str(solve.data),
            "plan",
            "Fix mul",
            "--repo",
            str(solve.repo),
            "--config",
            str(solve.config),
        ],
        env=solve.env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    wait_for_call(server, proc)

    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)

    assert proc.returncode == code, err
    assert "Traceback" not in err and out == "", err
    assert err.splitlines()[-1] == f"cra: interrupted by {signal.Signals(signum).name}"
    with solve.log() as log:
        [run] = log.list_task_runs(modes=("plan",))
    assert run.status == "cancelled"


def test_with_json_an_interrupted_run_still_prints_its_result(
    tmp_path: Path,
    server: ScriptedModelServer,
) -> None:
    server.script("meta_plan", Reply(text=META, delay_s=60))
    solve = Solve(tmp_path, server, "--json")
    proc = solve.start()
    wait_for_call(server, proc)

    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)

    assert proc.returncode == 130, err
    result = json.loads(out)
    assert result["status"] == "cancelled" and result["error"] == "interrupted by SIGINT"
    assert result["branch"] is None and solve.branches() == []
