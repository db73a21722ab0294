"""slirp4netns connecting a sandbox's network namespace: a network of its own, not the host's."""

from __future__ import annotations

import fcntl
import os
import select
import subprocess
import tempfile
import time
from collections.abc import Sequence
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path
from typing import IO

from agent.sandbox import netblock
from agent.sandbox.base import SandboxUnavailable

SLIRP_DNS = "10.0.2.3"  # slirp4netns's resolver, inside the namespace it connects
SLIRP_NETWORK = IPv4Network("10.0.2.0/24")  # the namespace's own network, which slirp4netns makes
SLIRP_GATEWAY = IPv4Address("10.0.2.2")  # its way out (the host's loopback is not behind it)
SLIRP_INTERFACE = "tap0"
SLIRP_READY_WAIT = 10.0  # seconds slirp4netns may take to connect a namespace
NS_GET_USERNS = 0xB701  # ioctl on a namespace's fd: the user namespace owning it (Linux 4.9)


def resolv_conf() -> tuple[list[str], list[int]]:
    """bwrap arguments putting slirp4netns's resolver in the sandbox's resolv.conf (where the
    host's is, or where its symlink leads), and the fd they pass; none without one."""
    if not Path("/etc/resolv.conf").exists():
        return [], []
    read, write = os.pipe()
    os.write(write, f"nameserver {SLIRP_DNS}\n".encode())
    os.close(write)
    where = Path("/etc/resolv.conf").resolve()
    return ["--ro-bind-data", str(read), str(where)], [read]


class Slirp:
    """slirp4netns connecting a sandbox's network namespace to the world through the worker's:
    outbound connections and DNS, never the host's loopback (`--disable-host-loopback`), where
    the bot's own services listen (its database, Redis, a local model server), nor this
    machine's other addresses, private and link-local ranges or the cloud's metadata addresses,
    but for the networks the operator allowed (agent.sandbox.netblock)."""

    def __init__(
        self,
        program: str,
        *,
        join_userns: bool,
        allowed: Sequence[IPv4Network] = (),
        fence: netblock.Fence = netblock.block,
    ) -> None:
        self._program, self._join_userns = program, join_userns
        self._allowed, self._fence = tuple(allowed), fence

    def __call__(self, init: int, net_namespace: int | None) -> _SlirpLink:
        """Connect the network namespace of the sandbox's init `init` (whose id bwrap reported
        as `net_namespace`) once bwrap has set up its loopback; SandboxUnavailable if it
        cannot."""
        deadline = time.monotonic() + SLIRP_READY_WAIT
        try:
            _wait_for_loopback(init, deadline)
            namespaces = self._namespaces(init, net_namespace)
        except OSError as exc:
            raise SandboxUnavailable(f"the sandbox's network namespace: {exc}") from exc
        try:
            link, said = self._try(namespaces, deadline)
            refused = None if link is None else self._fence_off(namespaces)
        finally:
            for fd in namespaces:
                os.close(fd)
        if link is None:
            raise SandboxUnavailable(
                f"slirp4netns did not connect the sandbox's network: "
                f"{said or 'no answer in time'}{_tun_hint(said)}"
            )
        if refused is not None:
            link.close()
            raise SandboxUnavailable(
                "could not keep the sandbox's network off this machine's "
                f"addresses and private ranges: {refused}"
            )
        return link

    def _fence_off(self, namespaces: list[int]) -> str | None:
        """Route this machine's addresses, the private ranges and the metadata addresses
        unreachable in the namespace, but for the allowed networks; None, or what failed."""
        try:
            own = netblock.machine_addresses()
        except OSError as exc:
            return f"this machine's addresses: {exc}"
        routes = netblock.plan(self._allowed, own, local=SLIRP_NETWORK)
        net, *user = namespaces
        return self._fence(
            net, user[0] if user else None, routes, gateway=SLIRP_GATEWAY, interface=SLIRP_INTERFACE
        )

    def _namespaces(self, init: int, net_namespace: int | None) -> list[int]:
        """fds on the sandbox's network namespace and (unprivileged) the user namespace that
        owns it — asked of the network namespace: bwrap nests another user namespace in it
        while it sets up, which the init may already have entered. ProcessLookupError when
        the namespace is not the one bwrap reported (its init ended, and its pid is another
        process's now)."""
        net = os.open(f"/proc/{init}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        if net_namespace is not None and os.fstat(net).st_ino != net_namespace:
            os.close(net)
            raise ProcessLookupError(f"process {init} is no longer the sandbox's")
        if not self._join_userns:
            return [net]
        try:
            return [net, fcntl.ioctl(net, NS_GET_USERNS)]
        except OSError:
            os.close(net)
            raise

    def _try(self, namespaces: list[int], deadline: float) -> tuple[_SlirpLink | None, str]:
        """One slirp4netns: running and connected, or None and what it said."""
        ready_read, ready_write = os.pipe()
        exit_read, exit_write = os.pipe()  # closed by us (or our death): slirp4netns ends
        net, *user = namespaces
        where = [
            *(f"--userns-path=/proc/self/fd/{fd}" for fd in user),
            "--netns-type=path",
            f"/proc/self/fd/{net}",
            SLIRP_INTERFACE,
        ]
        argv = [
            self._program,
            "--configure",
            "--mtu=65520",
            "--disable-host-loopback",
            f"--ready-fd={ready_write}",
            f"--exit-fd={exit_read}",
            *where,
        ]
        errors = tempfile.TemporaryFile()  # noqa: SIM115 (the link closes it)
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=errors,
                stderr=errors,
                pass_fds=(ready_write, exit_read, *namespaces),
                start_new_session=True,
            )
        except OSError as exc:
            for fd in (ready_read, exit_write):
                os.close(fd)
            errors.close()
            raise SandboxUnavailable(f"slirp4netns does not start: {exc}") from exc
        finally:
            os.close(ready_write)
            os.close(exit_read)
        link = _SlirpLink(proc, exit_write, errors)
        try:
            left = max(0.0, deadline - time.monotonic())
            ready = select.select([ready_read], [], [], left)[0] and os.read(ready_read, 1) == b"1"
        finally:
            os.close(ready_read)
        return (link, "") if ready else (None, link.close())


def _tun_hint(said: str) -> str:
    """How to give slirp4netns the device it could not open, if that is what it said."""
    if "/dev/net/tun" not in said:
        return ""
    return (
        "; it needs /dev/net/tun, usable by the worker's user (mode 0666, as udev makes it; "
        "in a container: docker run --device /dev/net/tun)"
    )


def _wait_for_loopback(init: int, deadline: float) -> None:
    """Wait until bwrap has set up the namespace's loopback (127.0.0.1 routed on lo): slirp4netns
    brings lo up too, and doing it first makes bwrap's own setup fail ("loopback: Failed
    RTM_NEWADDR"). OSError when the namespace is gone or the wait ran out."""
    trie = Path(f"/proc/{init}/net/fib_trie")
    while "127.0.0.1" not in trie.read_text(errors="replace"):
        if time.monotonic() >= deadline:
            raise TimeoutError("its loopback was not set up in time")
        time.sleep(0.002)


class _SlirpLink:
    """A running slirp4netns; close() ends it."""

    def __init__(self, proc: subprocess.Popen[bytes], exit_fd: int, errors: IO[bytes]) -> None:
        self._proc, self._exit_fd, self._errors = proc, exit_fd, errors

    def close(self) -> str:
        """End it (its exit fd closed; killed if it lingers); what it wrote, last lines."""
        if self._exit_fd >= 0:
            os.close(self._exit_fd)
            self._exit_fd = -1
        try:
            self._proc.wait(5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._errors.seek(0)
        said = self._errors.read()[-500:].decode(errors="replace").strip()
        self._errors.close()
        if self._proc.returncode > 0:
            said = f"{said} (it exited with status {self._proc.returncode})".strip()
        return said
