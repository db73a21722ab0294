"""The gate: run test, lint and type-check commands in a worktree and judge them against a baseline.

Commands are the repository's own strings (`pytest -q`, `cd src && make test`), run through
`/bin/sh -c` inside the run's Sandbox (agent.sandbox) with a scrubbed environment, stdin closed,
stdout and stderr merged, in their own process group so that a timeout kills everything they
started.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from pathlib import Path

from agent.config import TestingConfig
from agent.errors import ValidationError
from agent.models import BaselineComparison, CommandResult, ValidationResult
from agent.sandbox import Launch, Sandbox, limit_note

BASE_ENV = ("PATH", "HOME", "LANG", "TMPDIR", "VIRTUAL_ENV")
SECRET_PATTERNS = (
    "GITHUB_TOKEN", "GH_TOKEN", "CRA_*", "*_API_KEY", "*_TOKEN", "*_SECRET", "*SECRET*",
    "*PASSWORD*", "*PRIVATE_KEY*",
)
KILL_GRACE = 2.0
PARSE_KEEP_CHARS = 2_000_000  # kept of each end of the output for parsing test names
_CHUNK = 65536


# --- environment -----------------------------------------------------------------------------


def is_secret_name(name: str) -> bool:
    """True when an environment variable's name looks like a credential."""
    upper = name.upper()
    return any(fnmatchcase(upper, pattern) for pattern in SECRET_PATTERNS)


def scrubbed_env(environ: Mapping[str, str], allow: Sequence[str]) -> dict[str, str]:
    """The base variables plus the allow-list (glob patterns), minus anything secret-looking."""
    wanted = (*BASE_ENV, *allow)
    return {
        name: value for name, value in environ.items()
        if any(fnmatchcase(name, pattern) for pattern in wanted) and not is_secret_name(name)
    }


# --- running one command ---------------------------------------------------------------------


class _Capture:
    """Decodes a byte stream as UTF-8 (with replacement), keeping its head and tail."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.total = 0
        self.head: list[str] = []
        self.head_len = 0
        self.tail: deque[str] = deque()
        self.tail_len = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes, *, final: bool = False) -> None:
        """Decode `data` and keep what fits in the head, else in the bounded tail."""
        text = self._decoder.decode(data, final)
        self.total += len(text)
        room = self.keep - self.head_len
        if room > 0:
            self.head.append(text[:room])
            self.head_len += len(text[:room])
            text = text[room:]
        if text:
            self.tail.append(text)
            self.tail_len += len(text)
            while self.tail_len - len(self.tail[0]) >= self.keep:
                self.tail_len -= len(self.tail.popleft())

    def text(self) -> str:
        """The kept text: all of it, or head and tail when the middle was dropped."""
        return "".join(self.head) + "".join(self.tail)


def cap_output(text: str, max_chars: int, *, dropped: int = 0) -> tuple[str, bool]:
    """`text` whole, or its head and tail around an "… N characters omitted …" marker.

    `dropped` counts characters already missing from the middle of `text`.
    """
    if len(text) + dropped <= max_chars:
        return text, False
    head = max_chars // 2
    tail = max_chars - head
    omitted = len(text) + dropped - head - tail
    return f"{text[:head]}\n… {omitted} characters omitted …\n{text[-tail:]}", True


def _drain(fd: int, capture: _Capture) -> None:
    """Read `fd` to its end into `capture`, then close it."""
    try:
        while chunk := os.read(fd, _CHUNK):
            capture.feed(chunk)
        capture.feed(b"", final=True)
    finally:
        os.close(fd)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send `sig` to a process group that may already be gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _stop_group(proc: subprocess.Popen[bytes], reader: threading.Thread, grace: float) -> bool:
    """SIGTERM the command's process group, then SIGKILL it; True once the output is closed."""
    _signal_group(proc.pid, signal.SIGTERM)
    reader.join(grace)
    if reader.is_alive() or proc.poll() is None:
        _signal_group(proc.pid, signal.SIGKILL)
        reader.join(grace)
    proc.wait()
    return not reader.is_alive()


def _start(command: str, launch: Launch) -> subprocess.Popen[bytes]:
    """Start the launch in a new session; ValidationError if it cannot start."""
    try:
        return subprocess.Popen(
            launch.argv, cwd=launch.cwd, env=launch.env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
            pass_fds=launch.pass_fds,
        )
    except OSError as exc:
        raise ValidationError(f"could not start {command!r} in {launch.cwd}: {exc}") from exc
    finally:
        launch.close()


def _reader(proc: subprocess.Popen[bytes], capture: _Capture) -> threading.Thread:
    """A started thread draining the command's output into `capture`."""
    assert proc.stdout is not None
    reader = threading.Thread(target=_drain, args=(os.dup(proc.stdout.fileno()), capture),
                              daemon=True)
    proc.stdout.close()  # the reader owns its duplicate of the pipe
    reader.start()
    return reader


def _wait(
    proc: subprocess.Popen[bytes], reader: threading.Thread, timeout: float, grace: float
) -> tuple[int | None, list[str]]:
    """Wait for the command (None on timeout) and its output; notes on what had to be killed."""
    try:
        exit_code: int | None = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        exit_code = None
    except BaseException:  # interrupted: leave nothing running behind us
        _stop_group(proc, reader, grace)
        raise
    notes: list[str] = []
    if exit_code is None:
        notes.append(f"[cra] timed out: the command and its children were killed after "
                     f"{timeout:g} s")
    else:
        reader.join(grace)
        if not reader.is_alive():
            _signal_group(proc.pid, signal.SIGTERM)  # daemons that closed their output
            return exit_code, notes
        notes.append("[cra] stopped processes the command left running")
    if not _stop_group(proc, reader, grace):
        notes.append("[cra] stopped reading: an escaped process still holds the output open")
    return exit_code, notes


def _execute(
    command: str, cwd: Path, *, sandbox: Sandbox, tree: Path, network: bool, timeout: float,
    env: Mapping[str, str], max_output_chars: int, kill_grace: float = KILL_GRACE,
) -> tuple[CommandResult, str]:
    """Run `command` in `sandbox`; its CommandResult and the (head and tail of the) output."""
    started = time.monotonic()
    capture = _Capture(max(PARSE_KEEP_CHARS, max_output_chars))
    if not cwd.is_dir():  # before the sandbox maps it: the same error with or without one
        raise ValidationError(f"could not start {command!r}: no directory {cwd}")
    launch = sandbox.launch(command, tree=tree, cwd=cwd, env=env, network=network)
    proc = _start(command, launch)
    exit_code, notes = _wait(proc, _reader(proc, capture), timeout, kill_grace)
    full = capture.text()
    output, truncated = cap_output(full, max_output_chars, dropped=capture.total - len(full))
    note = limit_note(exit_code, full, sandbox.limits) if sandbox.limits else None
    if note:
        notes.append(note)
    if notes:
        separator = "\n" if output and not output.endswith("\n") else ""
        output = output + separator + "\n".join(notes) + "\n"
    result = CommandResult(
        command=command, exit_code=exit_code, output=output, timed_out=exit_code is None,
        truncated=truncated, duration_ms=int((time.monotonic() - started) * 1000),
    )
    return result, full


def run_command(
    command: str, cwd: Path, *, sandbox: Sandbox, timeout: float, env: Mapping[str, str],
    max_output_chars: int, tree: Path | None = None, network: bool = False,
    kill_grace: float = KILL_GRACE,
) -> CommandResult:
    """Run a shell command in `cwd` inside `sandbox`, which lets it change only `tree` (default
    `cwd`), with a timeout that kills everything it started."""
    result, _ = _execute(command, cwd, sandbox=sandbox, tree=tree or cwd, network=network,
                         timeout=timeout, env=env, max_output_chars=max_output_chars,
                         kill_grace=kill_grace)
    return result


# --- parsing test names ----------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Trailing timings and counts: " (4 ms)", " 3ms", " (2 tests | 1 failed)".
_TIME = r"\d+(?:\.\d+)?\s*m?s"
_SUFFIX = re.compile(rf"(?:\s+(?:\({_TIME}\)|{_TIME}|\(\d+ tests?[^)]*\)))+$")
_FAILING = (
    re.compile(r"^(?:FAILED|ERROR) (?P<id>[^\s(].*?)(?: - .*)?$"),  # pytest short summary
    re.compile(r"^(?P<id>\S+::\S+) (?:FAILED|ERROR)\b"),  # pytest -v
    re.compile(r"^\[gw\d+\] \[\s*\d+%\] (?:FAILED|ERROR) (?P<id>\S+)"),  # pytest-xdist -v
    re.compile(r"^(?:FAIL|ERROR): (?P<name>\w+) \((?P<where>[\w.]+)\)"),  # unittest
    re.compile(r"^(?P<name>\w+) \((?P<where>[\w.]+)\)(?: .*)? \.\.\. (?:FAIL|ERROR)$"),
    re.compile(r"^\s*--- FAIL: (?P<id>\S+) \("),  # go test
    re.compile(r"^test (?P<id>.+?) \.\.\. FAILED$"),  # cargo test
    re.compile(r"^\s*FAIL {1,2}(?P<id>\S.*?)\s*$"),  # jest / vitest
    re.compile(r"^\s*[✕×✗] (?P<id>.+)$"),  # jest / vitest
    re.compile(r"^\s*● (?P<id>(?!Test suite failed to run|Console).+?)$"),  # jest
)
_PASSING = (
    re.compile(r"^PASSED (?P<id>\S+)"),  # pytest -rA
    re.compile(r"^(?P<id>\S+::\S+) PASSED\b"),  # pytest -v
    re.compile(r"^\[gw\d+\] \[\s*\d+%\] PASSED (?P<id>\S+)"),  # pytest-xdist -v
    re.compile(r"^(?P<name>\w+) \((?P<where>[\w.]+)\)(?: .*)? \.\.\. ok$"),  # unittest -v
    re.compile(r"^\s*--- PASS: (?P<id>\S+) \("),  # go test -v
    re.compile(r"^test (?P<id>.+?) \.\.\. ok$"),  # cargo test
    re.compile(r"^\s*PASS {1,2}(?P<id>\S.*?)\s*$"),  # jest
    re.compile(r"^\s*[✓✔√] (?P<id>.+)$"),  # jest / vitest
)


def _test_id(match: re.Match[str]) -> str:
    """One id form per match: unittest's `module.Class.test`, else the name without timing."""
    groups = match.groupdict()
    if groups.get("name"):
        name, where = groups["name"], groups["where"]
        return where if where.endswith(f".{name}") else f"{where}.{name}"
    return _SUFFIX.sub("", groups["id"].strip())


def _parse(output: str, patterns: Iterable[re.Pattern[str]]) -> list[str]:
    """The ids the first matching pattern of each line names, deduplicated, in order."""
    found: dict[str, None] = {}
    for line in _ANSI.sub("", output).splitlines():
        for pattern in patterns:
            match = pattern.match(line.rstrip())
            if match:
                found.setdefault(_test_id(match), None)
                break
    return list(found)


def parse_failing_tests(output: str) -> list[str]:
    """Failing test ids in pytest, unittest, go test, cargo test, jest and vitest output."""
    return _parse(output, _FAILING)


def parse_passing_tests(output: str) -> list[str]:
    """Passing test ids in the same runners' output (where the runner lists them)."""
    return _parse(output, _PASSING)


# --- validation and the gate -----------------------------------------------------------------


def run_validation(
    worktree: Path, testing: TestingConfig, *, environ: Mapping[str, str], sandbox: Sandbox,
    kill_grace: float = KILL_GRACE,
) -> ValidationResult:
    """Run the test command (the gate) and the optional lint and type-check commands in
    `sandbox`, which lets them change only `worktree` (a run's worktree or a scratch tree)."""
    if not testing.test_command:
        raise ValidationError("no [testing] test_command: cra needs a test command")
    # Edits land seconds apart and often keep a file's size ("a + b" → "a - b"); Python's
    # bytecode cache checks only mtime (whole seconds) and size, so a .pyc written by the
    # previous test run could hide the edit. No bytecode is written in a worktree.
    env = {**scrubbed_env(environ, testing.env), "PYTHONDONTWRITEBYTECODE": "1"}

    def run(command: str) -> tuple[CommandResult, str]:
        return _execute(command, worktree, sandbox=sandbox, tree=worktree,
                        network=testing.network, timeout=testing.timeout, env=env,
                        max_output_chars=testing.max_output_chars, kill_grace=kill_grace)

    test, full = run(testing.test_command)
    extras = {
        name: run(command)[0]
        for name, command in (("lint", testing.lint_command),
                              ("type_check", testing.type_check_command))
        if command
    }
    return ValidationResult(
        success=test.exit_code == 0 and not test.timed_out,
        test_output=test.output,
        lint_output=extras["lint"].output if "lint" in extras else None,
        type_check_output=extras["type_check"].output if "type_check" in extras else None,
        failing_tests=parse_failing_tests(full),
        passing_tests=parse_passing_tests(full),
        exit_code=test.exit_code,
        timed_out=test.timed_out,
        duration_ms=test.duration_ms + sum(r.duration_ms for r in extras.values()),
    )


def compare_to_baseline(
    baseline: ValidationResult, current: ValidationResult
) -> BaselineComparison:
    """Which tests fail now but did not at baseline, which were fixed, which still fail.

    A test that did not exist at baseline and fails now is newly failing. A baseline failure
    counts as newly passing only when the run succeeded or listed that test as passing.
    """
    before = set(baseline.failing_tests)
    now = set(current.failing_tests)
    passing = set(current.passing_tests)
    return BaselineComparison(
        newly_failing=[t for t in current.failing_tests if t not in before],
        newly_passing=[t for t in baseline.failing_tests
                       if t not in now and (current.success or t in passing)],
        still_failing=[t for t in current.failing_tests if t in before],
    )


def passes_gate(
    baseline: ValidationResult, current: ValidationResult, *, target_tests: Sequence[str] = ()
) -> bool:
    """DESIGN's gate: the tests pass, or — the baseline already failing — nothing got worse.

    "Nothing got worse" needs a run that finished, named its failures (an unexplained failure
    never passes), has no failing test that was not failing at baseline (which covers every
    test that passed at baseline), and no failing target test.
    """
    if current.timed_out:
        return False
    if current.success:
        return True
    if baseline.success or not current.failing_tests:
        return False
    if compare_to_baseline(baseline, current).newly_failing:
        return False
    return not any(_names(target, failing)
                   for target in target_tests for failing in current.failing_tests)


def _names(target: str, test_id: str) -> bool:
    """True when `target` is `test_id` or a file, class or parent test that contains it."""
    return test_id == target or any(test_id.startswith(target + sep)
                                    for sep in ("::", "[", "/", ".", " > ", " › "))
