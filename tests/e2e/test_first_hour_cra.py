"""A newcomer's mistakes with `cra`, as real processes: one or two lines naming the setting or
file, the right exit status, no traceback, and no model call when the mistake is known first."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.console import version
from tests.e2e.first_hour import (
    Done,
    assert_plain,
    clean_env,
    closed_port,
    models_toml,
    program,
    run,
)
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.repos import TEST_COMMAND, git_in, make_python_project


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(tmp_path)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_python_project(tmp_path / "repo", config=None)


def write_config(path: Path, testing: str, url: str) -> Path:
    path.write_text(f"[testing]\n{testing}\n{models_toml(url)}", encoding="utf-8")
    return path


def solve(tmp: Path, repo: Path, config: Path, env: dict[str, str], *extra: str) -> Done:
    return run(
        "cra",
        "solve",
        "Fix the failing test_mul",
        "--repo",
        str(repo),
        "--config",
        str(config),
        "--data-dir",
        str(tmp / "data"),
        *extra,
        env=env,
    )


def test_both_programs_say_their_version(env: dict[str, str]) -> None:
    for name in ("cra", "cra-bot"):
        done = run(name, "--version", env=env)
        assert done.code == 0 and done.out.strip() == f"{name} {version()}"


def test_global_options_work_after_the_subcommand(tmp_path: Path, env: dict[str, str]) -> None:
    after = run("cra", "runs", "--data-dir", str(tmp_path / "d"), "--json", env=env)
    before = run("cra", "--data-dir", str(tmp_path / "d"), "runs", "--json", env=env)
    assert (after.code, before.code) == (0, 0), after.text + before.text
    assert json.loads(after.out) == json.loads(before.out) == []
    assert (tmp_path / "d" / "cra.db").exists()


def test_a_data_dir_that_cannot_be_a_directory_is_named(
    tmp_path: Path, env: dict[str, str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    done = run("cra", "runs", "--data-dir", str(blocker / "cra"), env=env)
    assert_plain(done, code=2, names=("--data-dir", "CRA_DATA_DIR", str(blocker)))


def test_an_unknown_config_key_says_did_you_mean_and_calls_no_model(
    tmp_path: Path,
    repo: Path,
    env: dict[str, str],
    server: ScriptedModelServer,
) -> None:
    config = write_config(
        tmp_path / "cra.toml", f"test_comand = {json.dumps(TEST_COMMAND)}", server.url
    )
    done = solve(tmp_path, repo, config, env)
    assert_plain(
        done,
        code=2,
        names=(
            str(config),
            "unknown key testing.test_comand",
            "did you mean testing.test_command?",
        ),
    )
    assert server.requests == []


def test_a_wrong_type_in_the_config_is_said_in_plain_words(
    tmp_path: Path,
    repo: Path,
    env: dict[str, str],
    server: ScriptedModelServer,
) -> None:
    config = write_config(
        tmp_path / "cra.toml", 'test_command = "pytest"\ntimeout = "soon"', server.url
    )
    done = solve(tmp_path, repo, config, env)
    assert_plain(
        done, code=2, names=(str(config), "testing.timeout: expected a number, got the text 'soon'")
    )
    assert "Input should" not in done.err and server.requests == []


@pytest.mark.parametrize("command", ["solve", "plan"])
def test_a_repository_without_commits_is_named_and_calls_no_model(
    tmp_path: Path,
    env: dict[str, str],
    server: ScriptedModelServer,
    command: str,
) -> None:
    empty = tmp_path / "empty"
    git_in(tmp_path, "init", "--quiet", str(empty))
    config = write_config(
        tmp_path / "cra.toml", f"test_command = {json.dumps(TEST_COMMAND)}", server.url
    )
    done = run(
        "cra",
        command,
        "Add a parser",
        "--repo",
        str(empty),
        "--config",
        str(config),
        "--data-dir",
        str(tmp_path / "data"),
        env=env,
    )
    assert_plain(done, code=2, names=(str(empty), "has no commits yet"))
    assert "rev-parse" not in done.text and server.requests == []


def test_solve_says_uncommitted_changes_are_not_part_of_the_run(
    tmp_path: Path,
    repo: Path,
    env: dict[str, str],
) -> None:
    (repo / "calc" / "ops.py").write_text("# being edited\n", encoding="utf-8")
    (repo / "notes.txt").write_text("mine\n", encoding="utf-8")
    config = write_config(
        tmp_path / "cra.toml",
        f"test_command = {json.dumps(TEST_COMMAND)}",
        f"http://127.0.0.1:{closed_port()}",
    )
    done = solve(tmp_path, repo, config, env)
    head = git_in(repo, "rev-parse", "HEAD").strip()
    assert (
        f"cra: note: the run starts from HEAD ({head[:12]}); uncommitted changes are not "
        "part of it: calc/ops.py, notes.txt"
    ) in done.err
    git_in(repo, "checkout", "--", "calc/ops.py")
    (repo / "notes.txt").unlink()
    assert "cra: note:" not in solve(tmp_path, repo, config, env).err


def test_a_model_server_refusing_connections_is_named_at_once(
    tmp_path: Path,
    repo: Path,
    env: dict[str, str],
) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    config = write_config(tmp_path / "cra.toml", f"test_command = {json.dumps(TEST_COMMAND)}", url)
    done = solve(tmp_path, repo, config, env)
    assert_plain(done, code=2, names=(url, "refused the connection", "base_url"))
    assert "attempt" not in done.err  # no retries: retrying cures nothing here
    assert "started" not in done.err  # it ended before a run began


def test_a_model_ollama_does_not_have_is_named_at_start_with_the_pull_command(
    tmp_path: Path,
    repo: Path,
    env: dict[str, str],
) -> None:
    with ScriptedModelServer(models=("llama3:8b",)) as other:
        config = write_config(tmp_path / "cra.toml", 'test_command = "no-such-runner"', other.url)
        done = solve(tmp_path, repo, config, env)
        assert other.chat_requests == []
        warning = (
            "cra: warning: the reasoning model: scripted-model is not on "
            f"{other.url} (it has: llama3:8b) → ollama pull scripted-model"
        )
    assert warning in done.err.splitlines()
    assert done.err.index(warning) < done.err.index(" started — see it with")


def test_a_test_command_that_does_not_exist_ends_the_run_before_planning(
    tmp_path: Path,
    repo: Path,
    env: dict[str, str],
    server: ScriptedModelServer,
) -> None:
    config = write_config(tmp_path / "cra.toml", 'test_command = "no-such-runner -q"', server.url)
    done = solve(tmp_path, repo, config, env)

    assert done.code == 1 and "Traceback" not in done.text, done.text
    assert "the test command 'no-such-runner -q' could not start (exit 127" in done.text
    assert "no-such-runner: not found" in done.text
    assert server.chat_requests == []
    assert "planning" not in done.err  # the steps printed: baseline only
    runs = run("cra", "runs", "--json", "--data-dir", str(tmp_path / "data"), env=env)
    assert [r["status"] for r in json.loads(runs.out)] == ["failed"]


def test_a_test_script_that_is_not_executable_ends_the_run_before_planning(
    tmp_path: Path,
    repo: Path,
    env: dict[str, str],
    server: ScriptedModelServer,
) -> None:
    (repo / "run_tests.sh").write_text("#!/bin/sh\nexec python -m pytest -q\n")
    git_in(repo, "add", "run_tests.sh")
    git_in(repo, "commit", "-qm", "a test script, not executable")
    config = write_config(tmp_path / "cra.toml", 'test_command = "./run_tests.sh"', server.url)
    done = solve(tmp_path, repo, config, env, "--json")

    result = json.loads(done.out)
    assert done.code == 1 and result["status"] == "failed"
    assert "'./run_tests.sh' could not start (exit 126" in result["error"]
    assert "Permission denied" in result["error"]
    assert server.chat_requests == []


def test_solve_says_its_run_id_and_how_to_see_it(
    tmp_path: Path,
    repo: Path,
    env: dict[str, str],
    server: ScriptedModelServer,
) -> None:
    config = write_config(tmp_path / "cra.toml", 'test_command = "no-such-runner"', server.url)
    done = solve(tmp_path, repo, config, env, "--json")
    run_id = json.loads(done.out)["task_id"]
    hint = f"cra: run {run_id} started — see it with `cra --data-dir {tmp_path / 'data'} runs "
    assert hint + f"{run_id}`" in done.err
    shown = run("cra", "--data-dir", str(tmp_path / "data"), "runs", run_id, env=env)
    assert shown.code == 0 and f"orchestrator run {run_id} — failed" in shown.out


def test_a_misspelt_variable_is_named_with_the_setting_it_meant(
    tmp_path: Path,
    env: dict[str, str],
) -> None:
    done = run(
        "cra",
        "runs",
        "--data-dir",
        str(tmp_path / "d"),
        env={**env, "CRA_DATA_DIRR": str(tmp_path / "x")},
    )
    assert done.code == 0
    assert "cra reads no setting CRA_DATA_DIRR; did you mean CRA_DATA_DIR?" in done.err


def test_a_normal_start_prints_no_library_chatter_and_verbose_shows_it(
    tmp_path: Path,
    env: dict[str, str],
) -> None:
    quiet = run("cra", "runs", "--data-dir", str(tmp_path / "a"), env=env)
    loud = run("cra", "runs", "-v", "--data-dir", str(tmp_path / "b"), env=env)
    assert quiet.code == loud.code == 0
    assert quiet.err == ""
    assert "alembic" in loud.err and "Running upgrade" in loud.err


def test_a_closed_pipe_ends_the_output_quietly(tmp_path: Path, env: dict[str, str]) -> None:
    argv = [*program("cra"), "--data-dir", str(tmp_path / "d"), "runs", "--json"]
    with subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # the reader is gone before cra writes: `cra runs | head -0`
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=60)
    assert err == "" and code == 141


def test_doctor_takes_the_config_and_repository_it_is_given(
    tmp_path: Path,
    repo: Path,
    env: dict[str, str],
    server: ScriptedModelServer,
) -> None:
    config = write_config(
        tmp_path / "cra.toml", f"test_command = {json.dumps(TEST_COMMAND)}", server.url
    )
    done = run(
        "cra",
        "doctor",
        "--repo",
        str(repo),
        "--config",
        str(config),
        "--data-dir",
        str(tmp_path / "d"),
        env=env,
    )
    assert done.code == 0, done.text
    assert server.chat_requests == []


def many_files(root: Path, count: int) -> Path:
    root.mkdir()
    for n in range(count):
        (root / f"mod{n}.py").write_text(f"def f{n}():\n    return {n}\n")
    git_in(root, "init", "-q", "-b", "main")
    git_in(root, "add", "--all")
    git_in(root, "commit", "-qm", "many files")
    return root


def test_index_draws_a_progress_bar_on_a_terminal_and_plain_lines_elsewhere(
    tmp_path: Path,
    env: dict[str, str],
) -> None:
    repo = many_files(tmp_path / "many", 40)
    argv = [*program("cra"), "index", "--repo", str(repo)]
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [*argv, "--data-dir", str(tmp_path / "tty")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=follower,
    ) as proc:
        os.close(follower)
        seen = b""
        with contextlib.suppress(OSError):  # EIO once the process has closed the terminal
            while chunk := os.read(leader, 4096):
                seen += chunk
        assert proc.wait(timeout=60) == 0
    os.close(leader)
    drawn = seen.decode()
    assert "\rindexing [" in drawn and "40/40 files" in drawn and "█" * 24 in drawn

    plain = run("cra", "index", "--repo", str(repo), "--data-dir", str(tmp_path / "pipe"), env=env)
    assert plain.code == 0
    assert plain.err.splitlines() == [f"indexing: {n}/40 files" for n in range(4, 41, 4)]
