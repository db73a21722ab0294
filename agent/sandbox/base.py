"""Where repository commands run: the Sandbox protocol, its shared parts, and `none`.

A Sandbox turns one shell command into a `Launch` (argv, environment, working directory, file
descriptors to pass); `agent.gate.validation` starts it, bounds its time and reads its output. The
real backend is bubblewrap (`agent.sandbox.bwrap`); `NoSandbox` is today's behaviour, used only when
chosen explicitly, and every report then says the commands ran unsandboxed.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from agent.errors import SandboxUnavailable as SandboxUnavailable  # raised here; lives in errors

SandboxKind = Literal["bwrap", "none"]

TREE_MOUNT = Path("/cra/work")
ENV_MOUNT = Path("/cra/env")
OUT_MOUNT = Path("/cra/out")
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
    "bubblewrap; Alpine: apk add bubblewrap util-linux), or choose no sandbox explicitly "
    "(CRA_SANDBOX=none for the bot, --sandbox none for cra): repository commands then run "
    "with the bot's files and network in reach"
)


class SandboxLimits(BaseModel):
    """Resource bounds of every sandboxed command (per process, except `processes`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cpu_seconds: int = Field(default=900, gt=0)
    memory_mb: int = Field(default=2048, gt=0)
    processes: int = Field(default=512, gt=0)
    file_size_mb: int = Field(default=4096, gt=0)
    tmp_mb: int = Field(default=1024, gt=0)

    def describe(self) -> str:
        """One line for reports."""
        return (
            f"{self.memory_mb} MB memory and {self.cpu_seconds} s CPU per process, "
            f"{self.processes} processes, files up to {self.file_size_mb} MB, "
            f"/tmp {self.tmp_mb} MB"
        )


_CHILD_PID = re.compile(rb'"child-pid"\s*:\s*(\d+)\s*[,}]')
_NET_NAMESPACE = re.compile(rb'"net-namespace"\s*:\s*(\d+)\s*[,}]')


@dataclass
class Launch:
    """How to start one command: argv, environment, host working directory, fds to pass, and
    where the sandbox reports the pid of its own init process (bwrap's --info-fd), if it does."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    pass_fds: tuple[int, ...] = ()
    info_fd: int | None = None  # our end of the report's pipe; its other end is in pass_fds
    # our end of the pipe the sandbox waits on before it runs the command (bwrap's --block-fd),
    # and what must happen first, given the init's pid: connecting its network (NetworkLink)
    start_fd: int | None = None
    connect: Callable[[int, int | None], NetworkLink] | None = None
    notes: list[str] = field(default_factory=list)  # for the command's output
    _link: NetworkLink | None = field(default=None, init=False, repr=False)
    # the sandbox's init once watch_init found it: a pidfd on it, or (without pidfds) its pid
    _init: int | None = field(default=None, init=False, repr=False)
    _init_is_pid: bool = field(default=False, init=False, repr=False)

    def close(self) -> None:
        """Close the fds handed to the child (call once it has started)."""
        for fd in self.pass_fds:
            os.close(fd)
        self.pass_fds = ()

    def watch_init(self, wait: float) -> None:
        """Read the sandbox's report of its init (waiting up to `wait` seconds while it is being
        set up) and hold on to that process, so that kill_init reaches it and no other; nothing
        without a report (no such sandbox, or it ended first)."""
        if self.info_fd is None:
            return
        report, deadline = b"", time.monotonic() + wait
        while (left := deadline - time.monotonic()) > 0 and select.select(
            [self.info_fd], [], [], left
        )[0]:
            chunk = os.read(self.info_fd, 4096)
            if not chunk:  # the whole report (bwrap writes it in parts, then closes the fd)
                os.close(self.info_fd)  # closed before that, the writer would get SIGPIPE
                self.info_fd = None
                break
            report += chunk
        found = _CHILD_PID.search(report)
        if found:
            try:  # a pidfd names that process: never another that later gets its pid
                self._init = os.pidfd_open(int(found[1]))
            except ProcessLookupError:  # already gone
                pass
            except OSError:  # no pidfds here (before Linux 5.3)
                self._init, self._init_is_pid = int(found[1]), True
        net = _NET_NAMESPACE.search(report)  # its network namespace's id, where it has its own
        self._let_start(int(found[1]) if found else None, int(net[1]) if net else None)

    def _let_start(self, init: int | None, net_namespace: int | None) -> None:
        """Connect the sandbox's network (if it has one to connect), then let its command run;
        a sandbox whose network cannot be connected is ended instead, with a note saying why."""
        if self.start_fd is None:
            return
        try:
            if self.connect is not None:
                if init is None:
                    raise SandboxUnavailable("the sandbox did not report its process")
                self._link = self.connect(init, net_namespace)
            os.write(self.start_fd, b"1")
        except BrokenPipeError:  # bwrap ended while setting up: its output says why
            pass
        except SandboxUnavailable as exc:
            if self._init is None:  # nothing to stop: it runs, on the namespace's loopback only
                self.notes.append(f"[cra] the command ran without the network: {exc}")
            else:
                self.notes.append(f"[cra] the command did not run: {exc}")
                self.kill_init()
        finally:
            os.close(self.start_fd)
            self.start_fd = None

    def kill_init(self) -> None:
        """SIGKILL the sandbox's init, if watch_init found it and it still runs: in its own PID
        namespace, every process there dies with it."""
        if self._init is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if self._init_is_pid:
                os.kill(self._init, signal.SIGKILL)
            else:
                signal.pidfd_send_signal(self._init, signal.SIGKILL)

    def _end_init(self, wait: float) -> None:
        """SIGKILL the sandbox's init and wait up to `wait` seconds until it has ended: bwrap
        reports the command's exit before its init has ended, and what the command left running
        inside dies only with that init."""
        self.kill_init()
        if self._init is None:
            return
        if not self._init_is_pid:  # a pidfd turns readable once its process has ended
            select.select([self._init], [], [], wait)
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.kill(self._init, 0)
            except (ProcessLookupError, PermissionError):
                return
            time.sleep(0.01)

    def release(self, *, wait: float) -> None:
        """Once the command is over: end the sandbox's init and all it still holds (waiting up
        to `wait` seconds for it to end), then close what the launch holds."""
        self._end_init(wait)
        if self.info_fd is not None:
            os.close(self.info_fd)
            self.info_fd = None
        if self.start_fd is not None:
            os.close(self.start_fd)
            self.start_fd = None
        if self._link is not None:
            self._link.close()
            self._link = None
        if self._init is not None and not self._init_is_pid:
            os.close(self._init)
        self._init, self._init_is_pid = None, False


class NetworkLink(Protocol):
    """What connects a sandbox's own network namespace to the world (slirp4netns), until
    closed."""

    def close(self) -> object: ...


class Sandbox(Protocol):
    """Turns a repository command into a Launch confined to the tree it may change."""

    @property
    def name(self) -> SandboxKind:
        """`bwrap` or `none`."""
        ...

    @property
    def isolated(self) -> bool:
        """False for `none`: every report then says the commands ran unsandboxed."""
        ...

    @property
    def limits(self) -> SandboxLimits | None:
        """The resource bounds; None when nothing but the timeout bounds a command."""
        ...

    @property
    def env_dir(self) -> Path | None:
        """The run's environment directory (HOME and what the setup step installs), if any."""
        ...

    def with_env(self, env_dir: Path | None) -> Sandbox:
        """This sandbox with `env_dir` as the environment directory of every command."""
        ...

    def launch(
        self,
        command: str,
        *,
        tree: Path,
        cwd: Path,
        env: Mapping[str, str],
        network: bool,
        outputs: Path | None = None,
        read_only: Sequence[Path] = (),
    ) -> Launch:
        """`command` under /bin/sh in `cwd` (inside `tree`); it may change only `tree`, the
        environment directory and `outputs` (a directory for its reports), and may also read
        `read_only` (where a scratch tree's links point)."""
        ...

    def seen_as(self, path: Path, *, tree: Path, outputs: Path | None = None) -> Path:
        """Where the command sees a host path inside `tree`, `outputs` or the environment
        directory."""
        ...


_FORK_FAILED = re.compile(
    r"Cannot fork|can't fork|fork: retry|fork failed|Resource temporarily "
    r"unavailable|BlockingIOError: \[Errno 11\]|EAGAIN",
    re.I,
)
_NO_MEMORY = re.compile(
    r"MemoryError|Cannot allocate memory|bad_alloc|out of memory|"
    r"OutOfMemoryError|ENOMEM",
    re.I,
)
_SIGNALS = {
    signal.SIGXCPU: "the CPU-time limit ({cpu} s per process)",
    signal.SIGXFSZ: "the file-size limit ({fsize} MB per file)",
}
_CRASHES = (signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS)


def limit_note(exit_code: int | None, output: str, limits: SandboxLimits) -> str | None:
    """A line saying which sandbox limit most likely stopped a failed command, or None."""
    if exit_code in (None, 0):
        return None
    assert exit_code is not None
    sig = exit_code - 128 if exit_code > 128 else -exit_code
    values = {"cpu": limits.cpu_seconds, "fsize": limits.file_size_mb}
    if sig in _SIGNALS:
        return f"[cra] stopped by the sandbox: {_SIGNALS[signal.Signals(sig)].format(**values)}"
    if _FORK_FAILED.search(output):
        return f"[cra] the command hit the sandbox's process limit ({limits.processes} processes)"
    if _NO_MEMORY.search(output) or sig in _CRASHES:
        return (
            f"[cra] the command may have hit the sandbox's memory limit "
            f"({limits.memory_mb} MB per process)"
        )
    return None


def command_env(
    env: Mapping[str, str], env_root: Path | None, *, has_venv: bool = False
) -> dict[str, str]:
    """`env` plus the run environment's variables: CRA_ENV, HOME in it, its bin dirs first."""
    if env_root is None:
        return dict(env)
    home = env_root / "home"
    bins = [env_root / "bin", home / ".local" / "bin"]
    path = ":".join([*map(str, bins), env.get("PATH", "/usr/local/bin:/usr/bin:/bin")])
    extra = {"CRA_ENV": str(env_root), "HOME": str(home), "PATH": path}
    if has_venv:  # the setup step made $CRA_ENV a virtualenv
        extra["VIRTUAL_ENV"] = str(env_root)
    return {**env, **extra}


def inside(path: Path, root: Path) -> Path:
    """`path` relative to `root`; SandboxUnavailable when it lies outside."""
    try:
        return path.resolve().relative_to(root.resolve())
    except ValueError as exc:
        raise SandboxUnavailable(f"{path} is outside the tree {root}") from exc


@dataclass(frozen=True)
class NoSandbox:
    """Today's behaviour: the command runs as the worker, with its files and network."""

    env_dir: Path | None = None
    name: SandboxKind = "none"
    isolated: bool = False
    limits: SandboxLimits | None = None

    def with_env(self, env_dir: Path | None) -> NoSandbox:
        """A copy using `env_dir`."""
        return replace(self, env_dir=env_dir)

    def launch(
        self,
        command: str,
        *,
        tree: Path,
        cwd: Path,
        env: Mapping[str, str],
        network: bool,
        outputs: Path | None = None,
        read_only: Sequence[Path] = (),
    ) -> Launch:
        """`/bin/sh -c command` in `cwd`, nothing hidden, nothing bounded but the timeout."""
        del tree, network, outputs, read_only
        inner = command_env(env, self.env_dir, has_venv=is_venv(self.env_dir))
        return Launch(["/bin/sh", "-c", command], inner, cwd)

    def seen_as(self, path: Path, *, tree: Path, outputs: Path | None = None) -> Path:
        """The host path itself."""
        del tree, outputs
        return path


def is_venv(env_dir: Path | None) -> bool:
    """True when the setup step made the environment directory a virtualenv."""
    return env_dir is not None and (env_dir / "pyvenv.cfg").is_file()


def hidden_paths(
    *, data: Sequence[Path], home: Path | None, extra: Sequence[str] = ()
) -> tuple[Path, ...]:
    """What bwrap hides: the given data paths, credentials in `home`, the system's secrets."""
    home_secrets = [home / rel for rel in HOME_SECRETS] if home is not None else []
    system = [Path(p) for p in SYSTEM_SECRETS]
    ssh_keys = sorted(Path("/etc/ssh").glob("ssh_host_*")) if Path("/etc/ssh").is_dir() else []
    return tuple([*data, *home_secrets, *system, *ssh_keys, *(Path(p) for p in extra)])


HOME_SECRETS = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".pypirc",
    ".npmrc",
    ".yarnrc.yml",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".password-store",
    ".local/share/keyrings",
    ".vault-token",
)
SYSTEM_SECRETS = (
    "/etc/shadow",
    "/etc/gshadow",
    "/var/lib/postgresql",
    "/var/lib/mysql",
    "/var/lib/redis",
    "/var/lib/docker",
    "/var/lib/containerd",
    "/run/secrets",
)


def describe_sandbox(sandbox: Sandbox, *, chosen: str = "") -> str:
    """One line saying where repository commands run."""
    if sandbox.isolated:
        limits = f"; {sandbox.limits.describe()}" if sandbox.limits else ""
        return f"repository commands run in the {sandbox.name} sandbox{limits}"
    why = "bubblewrap is not installed" if chosen == "auto" else "chosen explicitly"
    return f"repository commands run UNSANDBOXED (sandbox none: {why})"
