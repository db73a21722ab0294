"""Running one repository command: a shell string (`pytest -q`, `cd src && make test`) run
through `/bin/sh -c` inside the run's Sandbox (agent.sandbox.base), with a scrubbed environment,
stdin closed, stdout and stderr merged, in its own process group so that a timeout kills
everything it started, its output kept head and tail.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from agent.errors import CommandNotStarted
from agent.interrupts import deferred
from agent.models import CommandResult
from agent.sandbox.base import Launch, Sandbox, limit_note

BASE_ENV = ("PATH", "HOME", "LANG", "TMPDIR", "VIRTUAL_ENV")
SECRET_PATTERNS = (
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "CRA_*",
    "*_API_KEY",
    "*_TOKEN",
    "*_SECRET",
    "*SECRET*",
    "*PASSWORD*",
    "*PRIVATE_KEY*",
)
KILL_GRACE = 2.0
INIT_REPORT_WAIT = 5.0  # for a sandbox that is starting to report its init's pid, at most
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
        name: value
        for name, value in environ.items()
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


def _stop_group(
    proc: subprocess.Popen[bytes], reader: threading.Thread, grace: float, launch: Launch
) -> bool:
    """SIGTERM the command's process group, then SIGKILL it (and the sandbox's init); True
    once the output is closed."""
    _signal_group(proc.pid, signal.SIGTERM)
    reader.join(grace)
    if reader.is_alive() or proc.poll() is None:
        _kill(proc, launch)
        reader.join(grace)
    proc.wait()
    return not reader.is_alive()


def _kill(proc: subprocess.Popen[bytes], launch: Launch) -> None:
    """SIGKILL what the command started: the sandbox's init first (bwrap's child: it runs in
    a session of its own, and until it is set up it does not die with bwrap; its death ends
    every process in the sandbox), then the process group (bwrap, or the command itself)."""
    launch.kill_init()
    _signal_group(proc.pid, signal.SIGKILL)


def _start(command: str, launch: Launch) -> subprocess.Popen[bytes]:
    """Start the launch in a new session; CommandNotStarted if it cannot start."""
    try:
        return subprocess.Popen(
            launch.argv,
            cwd=launch.cwd,
            env=launch.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=launch.pass_fds,
        )
    except OSError as exc:
        raise CommandNotStarted(f"could not start {command!r} in {launch.cwd}: {exc}") from exc
    finally:
        launch.close()


def _reader(proc: subprocess.Popen[bytes], capture: _Capture) -> threading.Thread:
    """A started thread draining the command's output into `capture`."""
    assert proc.stdout is not None
    reader = threading.Thread(
        target=_drain, args=(os.dup(proc.stdout.fileno()), capture), daemon=True
    )
    proc.stdout.close()  # the reader owns its duplicate of the pipe
    reader.start()
    return reader


def _wait(
    proc: subprocess.Popen[bytes],
    reader: threading.Thread,
    timeout: float,
    grace: float,
    launch: Launch,
) -> tuple[int | None, list[str]]:
    """Wait for the command (None on timeout) and its output; notes on what had to be killed."""
    try:
        exit_code: int | None = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        exit_code = None
    except BaseException:  # interrupted: leave nothing running behind us
        _stop_group(proc, reader, grace, launch)
        raise
    notes: list[str] = []
    if exit_code is None:
        notes.append(
            f"[cra] timed out: the command and its children were killed after {timeout:g} s"
        )
    else:
        reader.join(grace)
        if not reader.is_alive():
            _signal_group(proc.pid, signal.SIGTERM)  # daemons that closed their output
            return exit_code, notes
        notes.append("[cra] stopped processes the command left running")
    if not _stop_group(proc, reader, grace, launch):
        notes.append("[cra] stopped reading: an escaped process still holds the output open")
    return exit_code, notes


@dataclass(frozen=True)
class Reach:
    """Where a command runs and what it may touch: `cwd`, inside `tree`, the one tree it may
    change; the network or not; `outputs`, a directory for its reports; `read_only`, paths it
    may also read (where a scratch tree's links point)."""

    cwd: Path
    tree: Path
    network: bool = False
    outputs: Path | None = None
    read_only: Sequence[Path] = ()


@dataclass(frozen=True)
class Bounds:
    """How long a command may run, how much of its output is kept, and how long what it started
    gets to stop before it is killed."""

    timeout: float
    max_output_chars: int
    kill_grace: float = KILL_GRACE


def execute(
    command: str, *, sandbox: Sandbox, reach: Reach, env: Mapping[str, str], bounds: Bounds
) -> tuple[CommandResult, str]:
    """Run `command` in `sandbox`; its CommandResult and the (head and tail of the) output."""
    started = time.monotonic()
    cwd, max_output_chars, kill_grace = reach.cwd, bounds.max_output_chars, bounds.kill_grace
    capture = _Capture(max(PARSE_KEEP_CHARS, max_output_chars))
    if not cwd.is_dir():  # before the sandbox maps it: the same error with or without one
        raise CommandNotStarted(f"could not start {command!r}: no directory {cwd}")
    launch = sandbox.launch(
        command,
        tree=reach.tree,
        cwd=cwd,
        env=env,
        network=reach.network,
        outputs=reach.outputs,
        read_only=reach.read_only,
    )
    try:
        exit_code, notes = _run(command, launch, capture, bounds.timeout, kill_grace)
    finally:  # in a sandbox, what the command left running inside ends here
        launch.release(wait=kill_grace)
    notes[:0] = launch.notes
    full = capture.text()
    output, truncated = cap_output(full, max_output_chars, dropped=capture.total - len(full))
    note = limit_note(exit_code, full, sandbox.limits) if sandbox.limits else None
    if note:
        notes.append(note)
    if notes:
        separator = "\n" if output and not output.endswith("\n") else ""
        output = output + separator + "\n".join(notes) + "\n"
    result = CommandResult(
        command=command,
        exit_code=exit_code,
        output=output,
        timed_out=exit_code is None,
        truncated=truncated,
        duration_ms=int((time.monotonic() - started) * 1000),
    )
    return result, full


def _run(
    command: str, launch: Launch, capture: _Capture, timeout: float, grace: float
) -> tuple[int | None, list[str]]:
    """Start the launch and wait for it (see _wait), its output going to `capture`."""
    proc = None
    try:
        with deferred():  # a signal while it starts ends the run once the process is ours
            proc = _start(command, launch)
            reader = _reader(proc, capture)
            launch.watch_init(wait=INIT_REPORT_WAIT)  # bwrap reports it a moment after start
    except BaseException:
        if proc is not None:  # started: nothing of it stays running
            _kill(proc, launch)
            proc.wait()
        raise
    return _wait(proc, reader, timeout, grace, launch)


def run_command(
    command: str,
    cwd: Path,
    *,
    sandbox: Sandbox,
    timeout: float,
    env: Mapping[str, str],
    max_output_chars: int,
    tree: Path | None = None,
    network: bool = False,
    kill_grace: float = KILL_GRACE,
) -> CommandResult:
    """Run a shell command in `cwd` inside `sandbox`, which lets it change only `tree` (default
    `cwd`), with a timeout that kills everything it started."""
    result, _ = execute(
        command,
        sandbox=sandbox,
        reach=Reach(cwd, tree or cwd, network),
        env=env,
        bounds=Bounds(timeout, max_output_chars, kill_grace),
    )
    return result
