"""Which sandbox a test runs repository commands in: the real bwrap wherever it is installed."""

from __future__ import annotations

import os
import shutil
import socket
from functools import cache
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

import pytest

from agent.sandbox import netblock
from agent.sandbox.base import SandboxKind


def _installed(program: str, package: str) -> bool:
    """True when `program` is on PATH; a failed test under CI=true when it is not."""
    if shutil.which(program) is not None:
        return True
    if os.environ.get("CI") == "true":
        pytest.fail(f"{package} is required in CI: .ci/run installs it")
    return False


def bwrap_installed() -> bool:
    """True when bubblewrap is on PATH; a failed test under CI=true when it is not."""
    return _installed("bwrap", "bubblewrap")


def slirp_installed() -> bool:
    """True when slirp4netns is on PATH (a sandboxed command with the network then has its own,
    without the host's loopback); a failed test under CI=true when it is not."""
    return _installed("slirp4netns", "slirp4netns")


@cache
def host_address() -> str:
    """This machine's address on its network (not loopback): how a sandboxed command with the
    network reaches a service of the host's (listening on every address) — never through the
    host's loopback, which slirp4netns keeps from it."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: a route is chosen, nothing is sent
        except OSError as exc:
            pytest.skip(f"this machine has no network address besides loopback: {exc}")
        return str(probe.getsockname()[0])


def fence_closing(*networks: str) -> netblock.Fence:
    """A fence routing only `networks` unreachable (the real netblock, told less): a sandbox
    whose network reaches what it must not."""

    def fence(
        net: int, user: int | None, routes: netblock.Routes, *, gateway: IPv4Address, interface: str
    ) -> str | None:
        del routes
        return netblock.block(
            net,
            user,
            netblock.Routes(tuple(map(IPv4Network, networks))),
            gateway=gateway,
            interface=interface,
        )

    return fence


def test_sandbox_kind() -> SandboxKind:
    """bwrap when installed (always in CI), else none: the flow tests run either way."""
    return "bwrap" if bwrap_installed() else "none"


test_sandbox_kind.__test__ = False  # type: ignore[attr-defined]


def processes_with(marker: str) -> list[int]:
    """This machine's live processes whose command line (its arguments joined by spaces, as ps
    shows it) holds `marker`: "sleep 417.25" finds the sleep itself."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes().replace(
                b"\0", b" "
            ).decode(errors="replace"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found
