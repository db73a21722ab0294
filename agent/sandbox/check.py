"""The start-up self-check: run a probe in the sandbox and prove what it confines."""

from __future__ import annotations

import os
import shlex
import socket
import sys
import tempfile
from collections.abc import Sequence
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

from agent.sandbox import netblock
from agent.sandbox.base import Sandbox, SandboxUnavailable, describe_sandbox
from agent.sandbox.bwrap import BwrapSandbox
from agent.sandbox.commands import run_command

CONTAINER_HINT = (
    "in Docker, run the container with --security-opt seccomp=unconfined --security-opt "
    "apparmor=unconfined --security-opt systempaths=unconfined; on Ubuntu 23.10 and later "
    "(GitHub's ubuntu-24.04 runners too) also allow unprivileged user namespaces "
    "(sysctl kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile for bwrap)"
)
_PROBE = """\
echo probe > written && echo "ok: the worktree is writable"
if touch /usr/.cra-probe 2>/dev/null; then echo "FAIL: /usr is writable"
else echo "ok: the system is read-only"; fi
if [ "$$" -lt 10 ]; then echo "ok: own PID namespace"; else echo "FAIL: pid $$"; fi
ifaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | grep -v '^lo$' | tr '\\n' ' ')
if [ -z "$ifaces" ]; then echo "ok: no network"; else echo "FAIL: network $ifaces"; fi
if [ -e {secret} ]; then echo "FAIL: {secret} is visible"
else echo "ok: the data directory is hidden"; fi
"""


SHARED_NETWORK = (
    "a command given the network (the setup step) shares this machine's, loopback included: "
    "what listens there (the database, Redis, a model server) is within its reach"
)
_INTERFACES = "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | grep -v '^lo$'"
# Each target "tcp|udp,host,port": `closed` when the connection fails at once for want of a
# route, else `open`. A UDP connect only looks the route up: nothing is sent.
_CONNECT = """\
import errno, socket, sys
for target in sys.argv[1:]:
    kind, host, port = target.split(",")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM) as s:
            s.settimeout(10)
            s.connect((host, int(port)))
        print("open", host)
    except OSError as exc:
        closed = exc.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EAFNOSUPPORT)
        print("closed" if closed else "open", host)
"""
IPV6_PROBE = "fd00::1"  # a unique-local address: with IPv6 off, no IPv6 address is reachable
METADATA_PROBES = ("169.254.169.254", "100.100.100.200", "168.63.129.16")
OWN_NETWORK = (
    "a command given the network (the setup step) has its own, through slirp4netns: "
    "not this machine's loopback or addresses, private or link-local ranges, the "
    "cloud's metadata addresses, nor IPv6"
)


def self_check(sandbox: Sandbox, *, data_dir: Path) -> list[str]:
    """Run the probe (a canary file in `data_dir` must stay invisible); the facts it proved.

    SandboxUnavailable, saying what failed and how to fix it, when the sandbox does not work.
    """
    if not sandbox.isolated:
        return [describe_sandbox(sandbox)]
    data_dir.mkdir(parents=True, exist_ok=True)
    canary = data_dir / ".sandbox-canary"
    canary.write_text("the sandbox must not show this file\n")
    with tempfile.TemporaryDirectory(prefix="cra-check-", dir=data_dir) as scratch:
        result = run_command(
            _PROBE.format(secret=shlex.quote(str(canary))),
            Path(scratch),
            sandbox=sandbox,
            timeout=60,
            env={"PATH": "/usr/bin:/bin"},
            max_output_chars=4000,
        )
        facts = [line for line in result.output.splitlines() if line.startswith("ok: ")]
        if result.exit_code != 0 or len(facts) != 5:
            raise SandboxUnavailable(_failure(result.output))
        network = _network_fact(sandbox, Path(scratch))
    return [describe_sandbox(sandbox), *(fact.removeprefix("ok: ") for fact in facts), *network]


def _network_fact(sandbox: Sandbox, tree: Path) -> list[str]:
    """What a command given the network (the setup step) is connected to, proved where it has
    a network of its own: a listener on this machine's address, a private, a metadata and an
    IPv6 address are out of its reach, the networks the operator allowed within it."""
    if not isinstance(sandbox, BwrapSandbox) or not sandbox.allow_network:
        return []
    if sandbox.tools.slirp4netns is None:
        return [SHARED_NETWORK]
    try:
        own = netblock.machine_addresses()
    except OSError as exc:
        raise SandboxUnavailable(f"cannot list this machine's addresses: {exc}") from exc
    with socket.socket() as listener:
        listener.bind(("0.0.0.0", 0))
        listener.listen(8)
        closed, opened = network_targets(
            sandbox.allow_addresses, own, port=listener.getsockname()[1]
        )
        # the interpreter itself, not a virtualenv's link to it: a virtualenv under /tmp (a
        # fresh install's, a test's) is not in the sandbox, whose /tmp is its own
        python = os.path.realpath(sys.executable)
        probe = (
            f"{_INTERFACES}\n{shlex.quote(python)} -I -S -c "
            f"{shlex.quote(_CONNECT)} {shlex.join([*closed, *opened])}"
        )
        result = run_command(
            probe,
            tree,
            sandbox=sandbox,
            timeout=60,
            network=True,
            env={"PATH": "/usr/bin:/bin"},
            max_output_chars=4000,
        )
    lines = result.output.splitlines()
    if result.exit_code != 0 or lines[:1] != ["tap0"]:
        raise SandboxUnavailable(
            f"slirp4netns did not give a command the network: {result.output.strip()[-300:]}; "
            "fix it, uninstall it (commands with the network then share this machine's), or "
            "set CRA_SANDBOX_NETWORK=false"
        )
    found = {host: state for state, _, host in (line.partition(" ") for line in lines[1:])}
    wanted = {_host(t): "closed" for t in closed} | {_host(t): "open" for t in opened}
    if found.keys() != wanted.keys():
        raise SandboxUnavailable(
            f"the sandbox's network probe did not run: {result.output.strip()[-300:]}"
        )
    wrong = [host for host, state in wanted.items() if found[host] != state]
    if wrong:
        raise SandboxUnavailable(_network_failure(wrong, wanted))
    allowed = ", ".join(map(str, sandbox.allow_addresses))
    return [OWN_NETWORK + (f"; the operator opened {allowed}" if allowed else "")]


def network_targets(
    allowed: Sequence[IPv4Network], own: Sequence[IPv4Address], *, port: int
) -> tuple[list[str], list[str]]:
    """The probe's targets: those it must find closed (this machine's addresses at `port`, an
    address of each private range and each metadata address, one IPv6 address) and those it
    must find open (the first address of each network the operator allowed)."""

    def allows(address: IPv4Address) -> bool:
        return any(address in net for net in allowed)

    mine = [f"tcp,{a},{port}" for a in own if not a.is_loopback and not allows(a)]
    private = [net[-2] for net in netblock.PRIVATE]  # the last host address of each range
    closed = [
        *mine,
        *(f"udp,{a},53" for a in private if not allows(a)),
        *(f"udp,{a},80" for a in METADATA_PROBES),
        f"udp,{IPV6_PROBE},53",
    ]
    opened = [f"udp,{net[0]},53" for net in allowed if not netblock.never_opened(net)]
    return closed, opened


def _host(target: str) -> str:
    return target.split(",")[1]


def _network_failure(wrong: list[str], wanted: dict[str, str]) -> str:
    """What the network probe found open that must be closed (or the reverse), and what to do."""
    reached = [host for host in wrong if wanted[host] == "closed"]
    shut = [host for host in wrong if wanted[host] == "open"]
    said = [f"a command given the network reaches {', '.join(reached)}"] if reached else []
    said += [f"the allowed {', '.join(shut)} is unreachable"] if shut else []
    return (
        f"{'; '.join(said)} (its network namespace must have this machine's addresses, "
        "the private, link-local and metadata ranges routed unreachable, but for the "
        "allowed addresses); set CRA_SANDBOX_NETWORK=false until that is fixed"
    )


def _failure(output: str) -> str:
    """What went wrong, in bwrap's or the probe's words, and how to fix it."""
    failed = [
        line.removeprefix("FAIL: ") for line in output.splitlines() if line.startswith("FAIL:")
    ]
    if failed:
        return (
            f"the bwrap sandbox runs but does not confine: {'; '.join(failed)}; "
            "refusing to run repository commands"
        )
    said = "; ".join(line for line in output.splitlines() if line.startswith("bwrap:"))
    return (
        f"the bwrap sandbox does not work here ({said or output.strip()[-300:]}): "
        f"{CONTAINER_HINT}; or set CRA_SANDBOX=none to run repository commands "
        "unsandboxed"
    )
