"""The bubblewrap backend, and `build_sandbox`, which chooses between it and none.

Inside bwrap a command sees a read-only view of the system, the directory it may change (a
worktree or a scratch tree) at TREE_MOUNT, the run's environment directory at ENV_MOUNT, a
private /tmp, its own PID namespace (everything it started dies with it), no network unless
asked — and then, where slirp4netns is installed, a network of its own that never reaches the
host's loopback, its other addresses, private, link-local or metadata addresses but those the
operator allows (else the host's) — and none of the hidden paths (the bot's data directory,
private key, database). CPU time, memory and file size per process and the number of processes
are bounded by rlimits set inside the sandbox. Run as root, the command itself runs under a
throwaway unprivileged uid that keeps only CAP_DAC_OVERRIDE, so that the process limit holds
(the kernel exempts uid 0 from it) and the root-owned worktree stays writable.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from ipaddress import IPv4Network
from pathlib import Path
from typing import Literal

from agent.git import files as gitfiles
from agent.git import repo as git
from agent.sandbox import netblock
from agent.sandbox.base import (
    ENV_MOUNT,
    INSTALL_HINT,
    OUT_MOUNT,
    TREE_MOUNT,
    Launch,
    NoSandbox,
    Sandbox,
    SandboxKind,
    SandboxLimits,
    SandboxUnavailable,
    command_env,
    inside,
    is_venv,
)
from agent.sandbox.slirp import Slirp, resolv_conf

_THROWAWAY_UIDS = (0x60000000, 1 << 24)  # root mode: a fresh uid from this range per command
_MB = 1024 * 1024
# The system directories bind-mounted read-only; everything else at / is left out.
_SKIP_ROOT = frozenset({"proc", "dev", "tmp", "run", "cra", "lost+found"})


@dataclass(frozen=True)
class BwrapTools:
    """The programs the bwrap backend runs, and what this bwrap supports."""

    bwrap: str
    prlimit: str
    setpriv: str | None  # needed only when the worker runs as root
    version: str = ""
    options: frozenset[str] = frozenset()
    slirp4netns: str | None = None  # the network of a command that has one (else the host's)


@dataclass(frozen=True)
class BwrapSandbox:
    """bubblewrap: read-only system, writable tree, private /tmp, own PID namespace."""

    tools: BwrapTools
    hide: tuple[Path, ...] = ()
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    as_root: bool = False
    allow_network: bool = True  # False: no command gets the network, whatever it asks
    env_dir: Path | None = None
    # networks the operator opened to a command with the network, inside those closed to it
    allow_addresses: tuple[IPv4Network, ...] = ()
    fence: netblock.Fence = netblock.block  # what closes them (agent.sandbox.netblock)
    name: SandboxKind = "bwrap"
    isolated: bool = True

    def with_env(self, env_dir: Path | None) -> BwrapSandbox:
        """A copy mounting `env_dir` at ENV_MOUNT."""
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
        """bwrap's argv for `command`; the synthetic git config travels in a passed pipe."""
        inner_cwd = TREE_MOUNT / inside(cwd, tree)
        git_args, fds = _git_view(tree)
        shown = [
            arg
            for p in read_only
            if p.exists()
            for arg in ("--ro-bind", str(p.resolve()), str(p.resolve()))
        ]
        mounts = [
            *self._system(),
            *self._hidden(),
            *shown,
            *_tree_mounts(tree, self.env_dir, outputs),
            *git_args,
            *self._seal(),
        ]
        network = network and self.allow_network
        linked = network and self.tools.slirp4netns is not None
        start: list[str] = []
        start_fd, connect = None, None
        if linked:  # its own network namespace, connected by slirp4netns before it starts
            assert self.tools.slirp4netns is not None
            dns, dns_fds = resolv_conf()
            start_read, start_fd = os.pipe()
            start, fds = [*dns, "--block-fd", str(start_read)], [*fds, *dns_fds, start_read]
            connect = Slirp(
                self.tools.slirp4netns,
                join_userns=not self.as_root,
                allowed=self.allow_addresses,
                fence=self.fence,
            )
        # bwrap reports its child (the sandbox's init) there: a signal that ends cra while the
        # sandbox starts must reach that child too, which is in a session of its own and binds
        # its life to bwrap's only once set up (agent.sandbox.commands kills it by this pid).
        info_read, info_write = os.pipe()
        argv = [
            self.tools.bwrap,
            *self._namespaces(shared_network=network and not linked),
            *mounts,
            *start,
            "--chdir",
            str(inner_cwd),
            "--info-fd",
            str(info_write),
            "--",
            *self._limit_prefix(),
            "/bin/sh",
            "-c",
            command,
        ]
        env_root = ENV_MOUNT if self.env_dir else None
        inner_env = command_env(env, env_root, has_venv=is_venv(self.env_dir))
        inner_env.setdefault("HOME", "/tmp")
        inner_env |= {"TMPDIR": "/tmp", "CRA_SANDBOX": "bwrap"}
        if self.as_root:  # the throwaway uid does not own the worktree git checks
            inner_env |= {
                "GIT_CONFIG_COUNT": "1",
                "GIT_CONFIG_KEY_0": "safe.directory",
                "GIT_CONFIG_VALUE_0": "*",
            }
        return Launch(
            argv,
            inner_env,
            tree,
            (*fds, info_write),
            info_fd=info_read,
            start_fd=start_fd,
            connect=connect,
        )

    def seen_as(self, path: Path, *, tree: Path, outputs: Path | None = None) -> Path:
        """A path inside `tree`, `outputs` or the environment directory, as the command sees
        it."""
        for root, mount in ((self.env_dir, ENV_MOUNT), (outputs, OUT_MOUNT)):
            if root is not None and path.resolve().is_relative_to(root.resolve()):
                return mount / inside(path, root)
        return TREE_MOUNT / inside(path, tree)

    def _namespaces(self, *, shared_network: bool) -> list[str]:
        args = [
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--hostname",
            "cra-sandbox",
            "--die-with-parent",
            "--new-session",
        ]
        if not shared_network:
            args.append("--unshare-net")
        if self.as_root:  # keep what setpriv needs to switch to the throwaway uid, no more
            args += ["--cap-drop", "ALL", *_each("--cap-add", ROOT_CAPS)]
        else:
            args.append("--unshare-user")
            if "--disable-userns" in self.tools.options:
                args.append("--disable-userns")
        return args

    def _system(self) -> list[str]:
        """Every top-level entry of / read-only (but the special ones), fresh /dev, /proc, /tmp."""
        args: list[str] = []
        for entry in sorted(os.scandir("/"), key=lambda e: e.name):
            if entry.name in _SKIP_ROOT:
                continue
            if entry.is_symlink():
                args += ["--symlink", os.readlink(entry.path), entry.path]
            else:
                args += ["--ro-bind", entry.path, entry.path]
        args += [
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            *self._tmpfs("/tmp", self.limits.tmp_mb),
            *self._tmpfs("/run", 16),
        ]
        if Path("/var/tmp").is_dir() and not Path("/var/tmp").is_symlink():
            args += self._tmpfs("/var/tmp", self.limits.tmp_mb)
        resolv = Path("/etc/resolv.conf").resolve()
        if resolv.is_relative_to("/run") and resolv.is_file():  # systemd-resolved's stub
            args += ["--ro-bind", str(resolv), str(resolv)]
        return args

    def _tmpfs(self, path: str, size_mb: int | None = None) -> list[str]:
        """A fresh tmpfs; sized and given its mode where this bwrap can (0.8 and later)."""
        if "--size" not in self.tools.options:
            return ["--tmpfs", path]
        size = ["--size", str(size_mb * _MB)] if size_mb else []
        return [*size, "--perms", "1777" if path.endswith("tmp") else "0755", "--tmpfs", path]

    def _hidden(self) -> list[str]:
        """An empty directory over each hidden directory, /dev/null over each hidden file."""
        args: list[str] = []
        for path in _outermost(self.hide):
            if path.is_dir():
                args += self._tmpfs(str(path), 1)
            elif path.exists():
                args += ["--ro-bind", "/dev/null", str(path)]
        return args

    def _seal(self) -> list[str]:
        """Make the mount-point directories bwrap created read-only too."""
        dirs = [p for p in _outermost(self.hide) if p.is_dir()]
        return [*_each("--remount-ro", [str(p) for p in dirs]), "--remount-ro", "/"]

    def _limit_prefix(self) -> list[str]:
        limits = self.limits
        bounds = {
            "data": limits.memory_mb * _MB,
            "nproc": limits.processes,
            "fsize": limits.file_size_mb * _MB,
            "core": 0,
        }
        # CPU: SIGXCPU at the soft limit says why; SIGKILL a little later if it is ignored.
        cpu = f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 5}"
        prefix = [self.tools.prlimit, cpu, *(f"--{k}={v}:{v}" for k, v in bounds.items()), "--"]
        if self.as_root:
            assert self.tools.setpriv is not None, "find_tools requires setpriv for root"
            prefix += [self.tools.setpriv, *_throwaway_identity(), "--"]
        return prefix


ROOT_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_DAC_OVERRIDE")


def _throwaway_identity() -> list[str]:
    """setpriv's options: a fresh unprivileged uid keeping only CAP_DAC_OVERRIDE.

    The securebits keep that capability in access(2) checks (which use the real uid) and stop
    the process from ever regaining root's powers.
    """
    base, span = _THROWAWAY_UIDS
    uid = base + secrets.randbelow(span)
    caps = "-all,+dac_override"
    return [
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        f"--inh-caps={caps}",
        f"--ambient-caps={caps}",
        f"--bounding-set={caps}",
        "--securebits=+noroot,+noroot_locked,+no_setuid_fixup,+no_setuid_fixup_locked",
    ]


def _each(flag: str, values: Iterable[str]) -> list[str]:
    return [item for value in values for item in (flag, value)]


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """The existing absolute paths that are not inside another one of them; never `/`."""
    resolved = sorted({p.resolve() for p in paths if p.is_absolute() and p.exists()})
    kept: list[Path] = []
    for path in resolved:
        if path != Path("/") and not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return kept


def _tree_mounts(tree: Path, env_dir: Path | None, outputs: Path | None) -> list[str]:
    """The writable tree, environment and output directories at their fixed places."""
    args = ["--perms", "0755", "--dir", str(TREE_MOUNT.parent)]
    for source, mount in ((tree, TREE_MOUNT), (env_dir, ENV_MOUNT), (outputs, OUT_MOUNT)):
        if source is not None:
            args += ["--bind", str(source.resolve()), str(mount)]
    # The tree's `.git` names the git dir that cra's own git uses after the command: rewritten,
    # it would point that git at a config of the command's making (core.fsmonitor, filters).
    pointer = tree / ".git"
    if pointer.exists():
        args += ["--ro-bind", str(pointer.resolve()), str(TREE_MOUNT / ".git")]
    return args


def _git_view(tree: Path) -> tuple[list[str], list[int]]:
    """Read-only mounts that let git work in a linked worktree whose admin dir is hidden.

    Git sees the repository's objects and refs and this worktree's own admin dir, read-only,
    and a config with only the format keys: never the real config (remote URLs, credentials),
    hooks, or the admin dirs of other worktrees.
    """
    admin = gitfiles.linked_admin_dir(tree)
    if admin is None:
        return [], []
    common = gitfiles.admin_common_dir(admin)
    args: list[str] = []
    for name in ("objects", "refs", "packed-refs", "HEAD", "shallow", "info"):
        if (common / name).exists():
            args += ["--ro-bind", str(common / name), str(common / name)]
    args += ["--ro-bind", str(admin), str(admin)]
    if not (common / "config").exists():  # nothing to hide (git's defaults), nowhere to mount
        return args, []
    read, write = os.pipe()
    os.write(write, git.format_only_config(common).encode())  # a few lines: fits the pipe
    os.close(write)
    return [*args, "--ro-bind-data", str(read), str(common / "config")], [read]


def find_tools(*, as_root: bool) -> BwrapTools:
    """bwrap, prlimit (and setpriv for root) on PATH; SandboxUnavailable saying what is missing."""
    found = {name: shutil.which(name) for name in ("bwrap", "prlimit", "setpriv", "slirp4netns")}
    if found["bwrap"] is None:
        raise SandboxUnavailable(f"bubblewrap (bwrap) is not installed: {INSTALL_HINT}")
    needed = ["prlimit", "setpriv"] if as_root else ["prlimit"]
    missing = [name for name in needed if found[name] is None]
    if missing:
        raise SandboxUnavailable(
            f"{' and '.join(missing)} (util-linux) not found: the bwrap "
            f"sandbox needs it to set resource limits; {INSTALL_HINT}"
        )
    version = _output([found["bwrap"], "--version"]).strip()
    options = frozenset(
        re.findall(r"^\s+(--[a-z0-9-]+)", _output([found["bwrap"], "--help"]), re.M)
    )
    return BwrapTools(
        bwrap=found["bwrap"],
        prlimit=str(found["prlimit"]),
        setpriv=found["setpriv"],
        version=version,
        options=options,
        slirp4netns=found["slirp4netns"],
    )


def _output(argv: list[str]) -> str:
    """stdout of a quick tool query; SandboxUnavailable when it cannot run."""
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=30, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"{argv[0]} does not run: {exc}; {INSTALL_HINT}") from exc
    return proc.stdout


def build_sandbox(
    kind: SandboxKind | Literal["auto"],
    *,
    hide: Sequence[Path] = (),
    limits: SandboxLimits | None = None,
    allow_network: bool = True,
    allow_addresses: Sequence[IPv4Network] = (),
) -> Sandbox:
    """The sandbox `kind` names; `auto` is bwrap when bubblewrap is installed, else none.
    SandboxUnavailable when bwrap is named and missing."""
    if kind == "none":
        return NoSandbox()
    if kind == "auto" and shutil.which("bwrap") is None:
        return NoSandbox()
    as_root = os.geteuid() == 0
    return BwrapSandbox(
        tools=find_tools(as_root=as_root),
        hide=tuple(hide),
        limits=limits or SandboxLimits(),
        as_root=as_root,
        allow_network=allow_network,
        allow_addresses=tuple(allow_addresses),
    )
