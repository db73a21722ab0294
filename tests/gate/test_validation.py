"""agent.gate.validation: commands in their own process group, test runs read by outcome."""

from __future__ import annotations

import os
import select
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.config.files import TestingConfig
from agent.errors import CommandNotStarted, Interrupted
from agent.gate.validation import attempt_timeout, compare_to_baseline, run_validation
from agent.interrupts import interruptible
from agent.models import ValidationResult
from agent.sandbox.base import Launch, NoSandbox, Sandbox
from agent.sandbox.commands import cap_output, run_command, scrubbed_env
from tests.fakes.repos import (
    FAILING_TEST,
    ISOLATED_GIT_ENV,
    MUL_BUG,
    MUL_FIX,
    TEST_COMMAND,
    make_python_project,
)
from tests.fakes.sandboxes import processes_with

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
SECRET_VALUES = (
    "ghs_fake",
    "gho_fake",
    "sk-fake",
    "whsec-fake",
    "npm_fake",
    "django-fake",
    "/keys/id",
)


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
    result = run_command(
        command,
        tmp_path,
        sandbox=sandbox,
        env={"PATH": ENVIRON["PATH"]},
        max_output_chars=10_000,
        **options,
    )
    return result.output, result.timed_out, result.exit_code


# --- the environment -------------------------------------------------------------------------


def test_scrubbed_env_keeps_the_base_variables_and_the_allow_list() -> None:
    env = scrubbed_env(ENVIRON, ["MY_*"])
    assert env == {
        "PATH": ENVIRON["PATH"],
        "HOME": "/home/cra",
        "LANG": "C.UTF-8",
        "MY_SETTING": "visible",
    }


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
    output, timed_out, code = run(
        "echo started; sleep 300 & sleep 300", tmp_path, sandbox, timeout=1
    )
    assert timed_out and code is None
    assert output.startswith("started\n")
    assert "killed after 1 s" in output


class SignalledOnStart:
    """A sandbox whose launch, once the process has started (its `close`), SIGTERMs this
    process: the signal lands in the window between the fork and the caller holding it."""

    def __init__(self, inner: Sandbox) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def launch(self, command: str, **kwargs: Any) -> Launch:
        launch = self.inner.launch(command, **kwargs)
        inner_close = launch.close

        def close() -> None:
            inner_close()
            os.kill(os.getpid(), signal.SIGTERM)

        launch.close = close  # type: ignore[method-assign]
        return launch


@pytest.mark.timeout(30)
def test_a_signal_while_the_command_starts_interrupts_the_run_and_leaves_no_process(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    assert threading.current_thread() is threading.main_thread()  # where signals are handled
    marker = f"{os.getpid() % 1000}.{len(sandbox.name)}75"  # a sleep no other test runs
    with interruptible() as interrupts, pytest.raises(Interrupted):
        run(f"sleep {marker}", tmp_path, SignalledOnStart(sandbox))  # type: ignore[arg-type]
    assert interrupts.signum == signal.SIGTERM
    deadline = time.monotonic() + 10  # a sandbox's processes die a moment after its monitor
    while processes_with(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(f"sleep {marker}") == []


class StartingBwrap:
    """A sandbox as bwrap is in its first moments: its child (the sandbox's init) runs in a
    session of its own and does not yet die with it; bwrap reports the child's pid on the info
    fd (its --info-fd format) and waits. Here the command itself is that child (exec'd by its
    shell): without a PID namespace, killing it is what ends the command, as killing bwrap's
    init ends every process of the sandbox."""

    name = "bwrap"
    isolated = True
    limits = None
    env_dir = None

    def launch(self, command: str, *, tree: Path, cwd: Path, **_: object) -> Launch:
        read, write = os.pipe()
        script = (
            "import os, subprocess, sys; "
            "child = subprocess.Popen(['/bin/sh', '-c', 'exec ' + sys.argv[2]], "
            "start_new_session=True); "
            "os.write(int(sys.argv[1]), b'{\\n    \"child-pid\": %d\\n}\\n' % child.pid); "
            "os.close(int(sys.argv[1])); "
            "os.execvp('sleep', ['sleep', '300'])"
        )
        return Launch(
            [sys.executable, "-c", script, str(write), command],
            {"PATH": ENVIRON["PATH"]},
            cwd,
            (write,),
            info_fd=read,
        )


class StartingBwrapSignalled(StartingBwrap):
    """StartingBwrap, and a SIGTERM to this process once it has started its init."""

    def launch(self, command: str, *, tree: Path, cwd: Path, **_: object) -> Launch:
        launch = super().launch(command, tree=tree, cwd=cwd)
        inner_close = launch.close

        def close() -> None:
            inner_close()
            assert launch.info_fd is not None
            select.select([launch.info_fd], [], [], 10)  # reported: its init is running
            os.kill(os.getpid(), signal.SIGTERM)

        launch.close = close  # type: ignore[method-assign]
        return launch


@pytest.mark.timeout(30)
@pytest.mark.parametrize("how", ["timeout", "signal"])
def test_the_sandboxs_init_is_killed_even_before_it_dies_with_bwrap(
    tmp_path: Path, how: str
) -> None:
    """Killing bwrap's process group alone left the sandbox's init (and the tests) running
    when cra stopped a command while its sandbox was starting."""
    marker = f"{os.getpid() % 1000}.{len(how)}35"  # a sleep no other test runs
    sandbox: Any = StartingBwrap()
    if how == "timeout":
        _, timed_out, _ = run(f"sleep {marker}", tmp_path, sandbox, timeout=1, kill_grace=0.2)
        assert timed_out
    else:
        with interruptible(), pytest.raises(Interrupted):
            run(f"sleep {marker}", tmp_path, StartingBwrapSignalled())  # type: ignore[arg-type]
    deadline = time.monotonic() + 10
    while processes_with(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(f"sleep {marker}") == []


@pytest.mark.timeout(30)
def test_a_command_ignoring_sigterm_is_killed(tmp_path: Path, sandbox: Sandbox) -> None:
    _, timed_out, _ = run("trap '' TERM; sleep 300", tmp_path, sandbox, timeout=0.5, kill_grace=0.2)
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
    result = run_command(
        script,
        tmp_path,
        sandbox=sandbox,
        timeout=30,
        env={"PATH": ENVIRON["PATH"]},
        max_output_chars=300,
    )
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
    with pytest.raises(CommandNotStarted, match="could not start"):
        run_command(
            "true", tmp_path / "missing", sandbox=sandbox, timeout=5, env={}, max_output_chars=1000
        )


# --- comparison with the baseline ------------------------------------------------------------


def result(
    success: bool = False,
    failing: list[str] | None = None,
    passing: list[str] | None = None,
    timed_out: bool = False,
) -> ValidationResult:
    """A validation with the given outcome."""
    return ValidationResult(
        success=success,
        failing_tests=failing or [],
        passing_tests=passing or [],
        exit_code=None if timed_out else (0 if success else 1),
        timed_out=timed_out,
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
    testing = TestingConfig(
        test_command=TEST_COMMAND + " -rA",
        lint_command="echo lint; exit 3",
        type_check_command="echo types",
    )
    validation = run_validation(project, testing, environ=python_env(), sandbox=sandbox)
    assert validation.success and validation.exit_code == 0
    assert validation.failing_tests == []
    assert FAILING_TEST in validation.passing_tests
    assert (validation.lint_output, validation.type_check_output) == ("lint\n", "types\n")


def test_run_validation_without_a_test_command_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CommandNotStarted, match="test_command"):
        run_validation(tmp_path, TestingConfig(), environ={}, sandbox=NoSandbox())


def test_run_validation_reports_a_timeout(tmp_path: Path, sandbox: Sandbox) -> None:
    sleeper = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(60)'"
    testing = TestingConfig(test_command=sleeper, timeout=0.5)
    validation = run_validation(tmp_path, testing, environ=ENVIRON, sandbox=sandbox, kill_grace=0.2)
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


def test_pytest_runs_are_counted_from_a_junit_report(project: Path, sandbox: Sandbox) -> None:
    validation = run_validation(
        project, TestingConfig(test_command=TEST_COMMAND), environ=python_env(), sandbox=sandbox
    )
    assert validation.report.source == "junit"
    assert validation.report.counts is not None
    assert (validation.report.counts.passed, validation.report.counts.failed) == (2, 1)
    assert validation.report.outcomes[FAILING_TEST] == "failed"
    assert validation.timeout_s == 600


def test_a_test_file_that_cannot_be_collected_does_not_stop_the_others(
    project: Path, sandbox: Sandbox
) -> None:
    (project / "tests" / "test_new.py").write_text(
        "from calc import cube\n\n\ndef test_cube():\n    assert cube(2) == 8\n"
    )
    validation = run_validation(
        project, TestingConfig(test_command=TEST_COMMAND), environ=python_env(), sandbox=sandbox
    )
    assert validation.report.outcomes["tests/test_new.py"] == "error"
    assert validation.report.outcomes["tests/test_ops.py::test_add"] == "passed"
    assert validation.report.incomplete is None and not validation.success


def test_a_run_that_exits_before_reporting_has_no_report(project: Path, sandbox: Sandbox) -> None:
    (project / "conftest.py").write_text("import os\nos._exit(0)\n")
    validation = run_validation(
        project, TestingConfig(test_command=TEST_COMMAND), environ=python_env(), sandbox=sandbox
    )
    assert validation.success and not validation.report.reported


def test_later_runs_get_a_timeout_from_the_baselines_duration() -> None:
    testing = TestingConfig(test_command="t", timeout=600, timeout_factor=3, timeout_margin=30)
    quick = ValidationResult(success=True, duration_ms=2_000)
    slow = ValidationResult(success=True, duration_ms=500_000)
    hung = ValidationResult(success=False, timed_out=True, duration_ms=600_000)
    assert attempt_timeout(quick, testing) == 36
    assert attempt_timeout(slow, testing) == 600
    assert attempt_timeout(hung, testing) == 600


def test_the_timeout_given_never_exceeds_the_configured_one(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    sleeper = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(60)'"
    testing = TestingConfig(test_command=sleeper, timeout=0.5)
    validation = run_validation(
        tmp_path, testing, environ=ENVIRON, kill_grace=0.2, timeout=30, sandbox=sandbox
    )
    assert validation.timed_out and validation.timeout_s == 0.5
    assert validation.rerun_for_time_s is None  # the configured limit is the code's: judged


def test_a_full_passing_run_lengthens_the_derived_limit() -> None:
    testing = TestingConfig(test_command="t", timeout=600, timeout_factor=3, timeout_margin=30)
    stopped_at_first_failure = ValidationResult(success=False, duration_ms=2_000)
    assert attempt_timeout(stopped_at_first_failure, testing, passing_ms=None) == 36
    assert attempt_timeout(stopped_at_first_failure, testing, passing_ms=20_000) == 90
    assert attempt_timeout(stopped_at_first_failure, testing, passing_ms=1_000) == 36
    assert attempt_timeout(stopped_at_first_failure, testing, passing_ms=400_000) == 600


def test_a_run_that_outgrows_the_derived_limit_is_judged_on_a_run_under_the_configured_one(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    slow_pass = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(1.5)'"
    testing = TestingConfig(test_command=slow_pass, timeout=30)
    validation = run_validation(
        tmp_path, testing, environ=ENVIRON, kill_grace=0.2, timeout=0.5, sandbox=sandbox
    )
    assert validation.success and not validation.timed_out
    assert validation.rerun_for_time_s == 0.5 and validation.timeout_s == 30
