"""The pieces of the first hour that take data and return data: near misses, plain-word errors,
the doctor's rendering, progress lines, the preflight's judgment of a baseline."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pty
import tty
from pathlib import Path

import pytest

from agent.cli.main import build_parser
from agent.config.files import SolveConfig, parse_config
from agent.console import did_you_mean, run_main, unknown_variables
from agent.doctor.checks import first_program, roles_used
from agent.doctor.preflight import PreflightFailed, require_test_command_started
from agent.doctor.report import Report, fail, ok, render, run_checks, warn
from agent.errors import ConfigError
from agent.llm.probe import ServerState, _models, find_model, list_url, same_model
from agent.models import PlanStep, RunEvent, ValidationResult
from agent.progress import ProgressBar, describe_event


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


# --- near misses and plain words ---------------------------------------------------------------


def test_a_typo_finds_the_name_it_meant_and_a_stranger_finds_none() -> None:
    names = ["CRA_WEBHOOK_SECRET", "CRA_DATA_DIR", "CRA_DATABASE_URL"]
    assert did_you_mean("CRA_WEBHOOK_SECERT", names) == "CRA_WEBHOOK_SECRET"
    assert did_you_mean("cra_data_dir", names) == "CRA_DATA_DIR"
    assert did_you_mean("CRA_COFFEE", names) is None


def test_unknown_variables_skip_known_ones_and_other_tools() -> None:
    env = {
        "CRA_LABEL": "x",
        "CRA_LABLE": "x",
        "CRA_TEST_REDIS_URL": "x",
        "CRA_FOO": "x",
        "HOME": "/root",
    }
    known = ["CRA_LABEL"]
    assert unknown_variables(env, known, ignore=("CRA_TEST_",)) == [
        ("CRA_FOO", None),
        ("CRA_LABLE", "CRA_LABEL"),
    ]
    assert unknown_variables(env, known, ignore=("CRA_TEST_",), near_misses_only=True) == [
        ("CRA_LABLE", "CRA_LABEL")
    ]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"testing": {"test_comand": "x"}},
            "unknown key testing.test_comand; did you mean testing.test_command?",
        ),
        ({"tesitng": {}}, "unknown key tesitng; did you mean testing?"),
        (
            {"models": {"coding": {"provider": "olama"}}},
            "models.coding.provider: expected one of 'ollama' or 'openai', got the text 'olama'",
        ),
        ({"testing": {"timeout": "10"}}, "testing.timeout: expected a number, got the text '10'"),
        (
            {"orchestrator": {"max_calls_per_step": 0}},
            "orchestrator.max_calls_per_step: expected a number greater than 0, got 0",
        ),
        (
            {"orchestrator": {"decomposed_adjustment": "yes"}},
            "orchestrator.decomposed_adjustment: expected true or false, got the text 'yes'",
        ),
        ({"testing": "pytest"}, "testing: expected a table, got the text 'pytest'"),
    ],
)
def test_config_errors_are_in_plain_words(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(data, source="cra.toml")
    assert str(info.value) == f"cra.toml: {message}"
    assert "Input should" not in str(info.value) and "Extra inputs" not in str(info.value)


# --- the command line --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["--data-dir", "d", "-v", "runs"],
        ["runs", "--data-dir", "d", "-v"],
        ["-v", "runs", "--data-dir", "d"],
    ],
)
def test_global_options_parse_the_same_before_or_after_the_subcommand(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    assert (args.command, args.data_dir, args.verbose, args.debug) == (
        "runs",
        Path("d"),
        True,
        False,
    )


def test_an_unexpected_error_is_one_line_unless_debug(capsys: pytest.CaptureFixture[str]) -> None:
    def broken() -> int:
        raise RuntimeError("the disk ate it")

    assert run_main("cra", broken, debug=False) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "cra: unexpected error: RuntimeError: the disk ate it",
        "cra: run again with --debug to see where it happened",
    ]
    assert run_main("cra", broken, debug=True) == 1
    assert "Traceback" in capsys.readouterr().err


# --- the doctor's lines ------------------------------------------------------------------------


def test_the_report_marks_each_check_and_sums_up() -> None:
    report = Report(
        program="cra",
        findings=[
            ok("git", "git 2.43"),
            warn("coding model", "small window", "lower it"),
            fail("test command", "pytst not found", "install it"),
        ],
    )
    text = render(report, as_json=False, unicode=True)
    assert text.splitlines() == [
        "✓ git: git 2.43",
        "! coding model: small window → lower it",
        "✗ test command: pytst not found → install it",
        "",
        "cra doctor: 1 of 3 checks failed",
    ]
    assert render(report, as_json=False, unicode=False).splitlines()[2] == (
        "FAIL test command: pytst not found -> install it"
    )
    assert json.loads(render(report, as_json=True))["passed"] is False
    assert not report.passed and Report(program="x", findings=[report.findings[1]]).passed


def test_a_check_that_raises_is_one_failed_line_and_the_others_still_run() -> None:
    def broken() -> list[object]:
        raise OSError("boom")

    report = run_checks("cra", [("broken", broken), ("git", lambda: [ok("git", "fine")])])
    assert [(f.check, f.status) for f in report.findings] == [("broken", "fail"), ("git", "ok")]
    assert "OSError: boom" in report.findings[0].detail


@pytest.mark.parametrize(
    ("command", "program"),
    [
        ("pytest -q", "pytest"),
        ("PYTHONPATH=src python -m pytest", "python"),
        ("cd src && make test", "cd"),
        ("./run_tests.sh --fast", "./run_tests.sh"),
        ("'unbalanced", None),
    ],
)
def test_the_first_program_of_a_test_command(command: str, program: str | None) -> None:
    assert first_program(command) == program


def test_the_roles_a_command_calls() -> None:
    plain = SolveConfig.model_validate({"retrieval": {"stages": []}})
    assert roles_used(plain, plans=True, implements=True) == ("reasoning", "coding")
    assert roles_used(plain, plans=False, implements=True) == ("coding",)
    assert roles_used(SolveConfig(), plans=True, implements=False) == ("reasoning", "classifier")
    staged = SolveConfig.model_validate(
        {"retrieval": {"stages": []}, "orchestrator": {"decomposed_adjustment": True}}
    )
    assert roles_used(staged, plans=True, implements=True) == ("reasoning", "coding", "classifier")


# --- model servers -----------------------------------------------------------------------------


def test_model_lists_of_both_apis_and_their_windows() -> None:
    assert list_url("ollama", "http://h:11434/") == "http://h:11434/api/tags"
    assert list_url("openai", "http://h:8000/v1") == "http://h:8000/v1/models"
    assert list_url("openai", "http://h:8000") == "http://h:8000/v1/models"
    assert _models("ollama", {"models": [{"name": "qwen3:4b"}]}) == {"qwen3:4b": None}
    assert _models(
        "openai",
        {
            "data": [
                {"id": "vllm-model", "max_model_len": 32768},
                {"id": "llama.cpp", "meta": {"n_ctx_train": 4096}},
                {"id": "hosted"},
            ]
        },
    ) == {"vllm-model": 32768, "llama.cpp": 4096, "hosted": None}


def test_ollama_names_without_a_tag_are_latest() -> None:
    assert same_model("ollama", "llama3", "llama3:latest")
    assert same_model("ollama", "library/llama3:latest", "llama3")
    assert not same_model("ollama", "llama3", "llama3:8b")
    assert not same_model("openai", "llama3", "llama3:latest")


def test_a_server_without_a_list_leaves_the_name_unchecked() -> None:
    state = ServerState(url="http://h", provider="openai", reachable=True)
    config = SolveConfig().models.coding
    assert find_model(state, config).present is None


# --- the preflight's reading of a baseline -----------------------------------------------------


def baseline(code: int, output: str, **tests: list[str]) -> ValidationResult:
    return ValidationResult(success=False, exit_code=code, test_output=output, **tests)


def test_a_command_the_shell_could_not_find_stops_the_run() -> None:
    with pytest.raises(PreflightFailed) as info:
        require_test_command_started(baseline(127, "sh: 1: pytst: not found\n"), "pytst -q")
    assert "'pytst -q' could not start (exit 127: sh: 1: pytst: not found)" in str(info.value)


@pytest.mark.parametrize(
    "result",
    [
        baseline(1, "sh: 1: x: not found"),  # an ordinary failure
        baseline(
            127, "collected 3 items", failing_tests=["t::a"]
        ),  # tests ran, then a helper failed
        baseline(127, "exited quietly"),  # no word of the shell's: not ours to judge
    ],
)
def test_anything_else_is_left_to_the_gate(result: ValidationResult) -> None:
    require_test_command_started(result, "make test")


# --- progress ----------------------------------------------------------------------------------


def test_a_progress_bar_redraws_one_line_on_a_terminal() -> None:
    stream, now = Terminal(), [0.0]
    bar = ProgressBar(stream, "indexing", clock=lambda: now[0])
    for done in range(1, 101):
        now[0] = done * 0.02
        bar(done, 100)
    bar.finish()
    text = stream.getvalue()
    assert text.startswith("\rindexing [") and text.endswith("\n")
    last = text.rsplit("\r", 1)[1]
    assert "100/100 files · 50/s · 0 s left" in last and "█" * 24 in last
    assert text.count("\r") < 100  # redrawn at most every 0.1 s, and at the end


def test_a_progress_bar_redraws_in_place_on_a_real_terminal() -> None:
    leader, follower = pty.openpty()
    tty.setraw(follower)  # the bytes as written: no "\n" turned into "\r\n" on the way
    now = [0.0]
    with open(follower, "w", encoding="utf-8") as stream:
        bar = ProgressBar(stream, "mining", unit="commits", clock=lambda: now[0])
        for done in range(1, 21):
            now[0] = done * 0.05
            bar(done, 20, f"{done // 4} tasks")
        bar.finish()
    seen = b""
    with contextlib.suppress(OSError):  # EIO once the terminal's other end is closed
        while chunk := os.read(leader, 4096):
            seen += chunk
    os.close(leader)
    text = seen.decode()
    assert text.startswith("\rmining [") and text.endswith("\n") and text.count("\n") == 1
    assert 2 <= text.count("\r") <= 11  # redrawn at most every 0.1 s, and at the end
    assert "20/20 commits · 5 tasks" in text.rsplit("\r", 1)[1]


def test_a_progress_bar_writes_a_plain_line_each_tenth_elsewhere() -> None:
    stream = io.StringIO()
    bar = ProgressBar(stream, "indexing")
    for done in range(1, 1001):
        bar(done, 1000)
    bar.finish()
    assert stream.getvalue().splitlines() == [
        f"indexing: {n}/1000 files" for n in range(100, 1001, 100)
    ]


def test_progress_in_a_file_is_a_few_plain_lines_ending_with_the_last_state(
    tmp_path: Path,
) -> None:
    log = tmp_path / "bench.log"
    with log.open("w", encoding="utf-8") as stream:
        bar = ProgressBar(stream, "mining", unit="commits", clock=lambda: 0.0)
        for done in range(1, 4322):  # the work stops early, short of its total
            bar(done, 5000, f"{done // 1000} tasks")
        bar.finish()
    text = log.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert "\r" not in text and text.endswith("\n") and len(lines) == 9
    assert lines[0] == "mining: 500/5000 commits, 0 tasks"
    assert lines[-1] == "mining: 4321/5000 commits, 4 tasks"


def test_a_note_on_a_terminal_goes_above_the_bar_which_is_drawn_again() -> None:
    stream = Terminal()
    bar = ProgressBar(stream, "mining", unit="commits", clock=lambda: 1.0)
    bar(1, 4, "0 tasks")
    bar.note("  abc123: running the setup step (npm install)")
    text = stream.getvalue()
    before, note, after = text.split("\r")[1:]
    assert before.startswith("mining [") and "1/4 commits" in before
    assert note == "\x1b[K  abc123: running the setup step (npm install)\n"
    assert after.startswith("mining [") and "1/4 commits · 0 tasks" in after


def test_a_note_elsewhere_is_a_plain_line_of_its_own() -> None:
    stream = io.StringIO()
    bar = ProgressBar(stream, "mining", unit="commits")
    bar.note("  abc123: running the setup step (npm install)")
    assert stream.getvalue() == "  abc123: running the setup step (npm install)\n"


def test_slow_work_gets_a_plain_line_every_30_seconds_too() -> None:
    stream, now = io.StringIO(), [0.0]
    bar = ProgressBar(stream, "mining", unit="commits", clock=lambda: now[0])
    for done in range(1, 1001):
        now[0] = float(done)  # a commit a second: a tenth every 100 s
        bar(done, 1000)
    bar.finish()
    shown = [int(line.split()[1].split("/")[0]) for line in stream.getvalue().splitlines()]
    assert shown[:6] == [30, 60, 90, 100, 130, 160] and shown[-1] == 1000
    assert len(shown) <= 1000 // 30 + 10 + 1


def test_finishing_twice_writes_the_last_state_once() -> None:
    stream = io.StringIO()
    bar = ProgressBar(stream, "indexing")
    bar(1000, 1000)
    bar.finish()
    bar.finish()
    assert stream.getvalue() == "indexing: 1000/1000 files\n"


def test_a_small_job_draws_no_bar() -> None:
    stream = Terminal()
    bar = ProgressBar(stream, "indexing", min_total=200)
    bar(5, 5)
    bar.finish()
    assert stream.getvalue() == ""


def test_the_steps_of_a_run_read_as_lines() -> None:
    step = PlanStep(id="s1", description="Round up\nmore")
    events = [
        RunEvent(kind="pass_started", task_id="r", pass_type="baseline"),
        RunEvent(kind="pass_started", task_id="r", pass_type="reproduce"),
        RunEvent(kind="reproduced", task_id="r", status="reproduced", message="t.py::test_x"),
        RunEvent(kind="reproduced", task_id="r", status="none", message="docs only"),
        RunEvent(kind="plan_made", task_id="r", part_id="p1", steps=[step]),
        RunEvent(
            kind="step_failed",
            task_id="r",
            part_id="p1",
            step_id="s1",
            status="failed",
            message="Round up",
        ),
        RunEvent(kind="pass_finished", task_id="r"),
    ]
    assert [describe_event(e) for e in events] == [
        "  ▸ running the tests once (the baseline)",
        "  ▸ writing a test that reproduces the issue",
        "  · reproduction written: t.py::test_x",
        "  · reproduction none: docs only",
        "  · plan for part p1: 1 step(s) — s1: Round up",
        "  ✗ step p1/s1 failed: Round up",
        None,
    ]
