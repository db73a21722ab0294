"""Addresses a sandbox's own network never reaches, but for those the operator opened.

slirp4netns gives a command the network (the setup step) through the worker's, host loopback
excepted. Through the worker it would still reach the machine's own addresses (and every service
listening on all of them), its private neighbours — the cloud's internal services, a Docker
host's bridge, the office network — and, on a cloud machine, the instance metadata service at
169.254.169.254, which hands the machine's credentials to whoever asks. Before the command
starts, each of those networks gets an `unreachable` route inside the sandbox's network
namespace: connecting fails at once ("No route to host"), and the command, without the
capability, cannot take the route away. A network the operator allows (a private package
mirror) gets a more specific route through slirp4netns's gateway instead; the metadata
addresses are never opened. IPv6, which slirp4netns does not give the namespace, is switched
off on its interface, link-local addresses included.

The routes are added by a small Python process of its own (single-threaded, as joining a user
namespace requires) that joins the namespace — and, for an unprivileged worker, the user
namespace owning it, where it holds the capabilities to change routes — and asks the kernel over
netlink: no `ip` to install, and no exec after joining, which would drop those capabilities.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path
from typing import Annotated, Protocol

from pydantic import PlainValidator

# Never opened: link-local (AWS, GCP, Azure, Oracle, DigitalOcean … metadata at 169.254.169.254,
# container credentials at 169.254.170.2), Alibaba's metadata, Azure's wire server.
METADATA = tuple(map(IPv4Network, ("169.254.0.0/16", "100.100.100.200/32", "168.63.129.16/32")))
# Private (RFC 1918) and carrier-grade NAT (RFC 6598, cloud-internal services) ranges.
PRIVATE = tuple(
    map(IPv4Network, ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"))
)
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000

_SCRIPT = r"""
import ctypes, json, os, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
*joins, spec = sys.argv[1:]
for join in joins:
    fd, kind = (int(part) for part in join.split(":"))
    if libc.setns(fd, kind) != 0:
        sys.exit("joining the namespace: " + os.strerror(ctypes.get_errno()))
spec = json.loads(spec)
link = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
routes = [(net, None) for net in spec["unreachable"]] + [(net, spec["gateway"])
                                                         for net in spec["opened"]]
for seq, (network, gateway) in enumerate(routes, 1):
    address, length = network.split("/")
    # rtmsg: AF_INET, dst_len, src_len, tos, table main, protocol static, scope universe,
    # type unreachable (or unicast through the gateway), flags; then RTA_DST (, RTA_GATEWAY)
    body = struct.pack("=BBBBBBBBI", 2, int(length), 0, 0, 254, 4, 0, 1 if gateway else 7, 0)
    body += struct.pack("=HH", 8, 1) + socket.inet_aton(address)
    if gateway:
        body += struct.pack("=HH", 8, 5) + socket.inet_aton(gateway)
    # RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_EXCL | NLM_F_CREATE
    link.send(struct.pack("=IHHII", 16 + len(body), 24, 0x1 | 0x4 | 0x200 | 0x400, seq, 0) + body)
    answer = link.recv(4096)
    kind, = struct.unpack_from("=H", answer, 4)
    error, = struct.unpack_from("=i", answer, 16)
    if kind != 2 or error != 0:
        sys.exit(f"the route to {network}: " + os.strerror(-error if kind == 2 else 0))
if os.path.isdir("/proc/sys/net/ipv6/conf"):  # sysctls of the joined namespace
    try:
        with open(f"/proc/sys/net/ipv6/conf/{spec['interface']}/disable_ipv6", "w") as knob:
            knob.write("1")
    except OSError as exc:
        sys.exit(f"switching IPv6 off on {spec['interface']}: {exc.strerror}")
"""


@dataclass(frozen=True)
class Routes:
    """What a sandbox's namespace is given: networks routed unreachable, and networks opened
    inside them (routed through its gateway)."""

    unreachable: tuple[IPv4Network, ...]
    opened: tuple[IPv4Network, ...] = ()


def plan(
    allowed: Iterable[IPv4Network], own: Iterable[IPv4Address], *, local: IPv4Network
) -> Routes:
    """The routes keeping a namespace (whose own network is `local`) off METADATA, PRIVATE and
    this machine's `own` addresses, except the `allowed` networks (never METADATA's)."""
    allowed = [net for net in dict.fromkeys(allowed) if not never_opened(net)]
    own_nets = [IPv4Network(a) for a in own if not a.is_loopback and a not in local]
    closed = [
        net
        for net in dict.fromkeys([*PRIVATE, *own_nets])
        if not any(net.subnet_of(a) for a in allowed)
    ]
    opened = [
        net
        for net in allowed
        if not net.subnet_of(local) and any(net != c and net.subnet_of(c) for c in closed)
    ]
    return Routes(tuple(dict.fromkeys([*METADATA, *closed])), tuple(opened))


def never_opened(network: IPv4Network) -> bool:
    """True for a network within the metadata addresses, which no allow-list opens."""
    return any(network.subnet_of(m) for m in METADATA)


def allowable(value: object) -> IPv4Network:
    """An address or network (CIDR) the operator opens to a command with the network;
    ValueError in plain words for anything else, or for a metadata address."""
    if not isinstance(value, str | IPv4Network):
        raise ValueError("expected an IPv4 address or network, such as 10.1.2.3 or 10.9.0.0/16")
    try:
        network = IPv4Network(value.strip() if isinstance(value, str) else value)
    except ValueError as exc:
        ipv6 = "; a command with the network has no IPv6" if ":" in str(value) else ""
        raise ValueError(f"{value!r} is not an IPv4 address or network ({exc}){ipv6}") from None
    if never_opened(network):
        raise ValueError(
            f"{network} is among the link-local and cloud metadata addresses "
            f"({', '.join(map(str, METADATA))}), which are never opened"
        )
    return network


AllowedNetwork = Annotated[IPv4Network, PlainValidator(allowable)]


def own_addresses(fib_trie: str) -> list[IPv4Address]:
    """This machine's IPv4 addresses, from the text of /proc/net/fib_trie (each local /32)."""
    found: dict[IPv4Address, None] = {}
    leaf = None
    for line in fib_trie.splitlines():
        if match := re.match(r"\s*\|-- (\d+\.\d+\.\d+\.\d+)\s*$", line):
            leaf = IPv4Address(match[1])
        elif leaf is not None and re.match(r"\s*/32 host LOCAL\b", line):
            found[leaf] = None
    return list(found)


def machine_addresses() -> list[IPv4Address]:
    """The IPv4 addresses of this machine (its network namespace); OSError if unreadable."""
    return own_addresses(Path("/proc/net/fib_trie").read_text())


class Fence(Protocol):
    """What gives a sandbox's network namespace its routes: `block`, or a fake in tests."""

    def __call__(
        self, net: int, user: int | None, routes: Routes, *, gateway: IPv4Address, interface: str
    ) -> str | None: ...


def block(
    net: int,
    user: int | None,
    routes: Routes,
    *,
    gateway: IPv4Address,
    interface: str,
    timeout: float = 10.0,
) -> str | None:
    """Give the network namespace of fd `net` (joining the user namespace of fd `user` first,
    when given) `routes`, and no IPv6 on `interface`; None when done, else what went wrong."""
    joins = [f"{user}:{CLONE_NEWUSER}"] if user is not None else []
    joins.append(f"{net}:{CLONE_NEWNET}")
    fds = (net,) if user is None else (net, user)
    spec = {
        "unreachable": _names(routes.unreachable),
        "opened": _names(routes.opened),
        "gateway": str(gateway),
        "interface": interface,
    }
    try:
        argv = [sys.executable, "-I", "-S", "-c", _SCRIPT, *joins, json.dumps(spec)]
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            pass_fds=fds,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if proc.returncode == 0:
        return None
    return (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]


def _names(networks: Sequence[IPv4Network]) -> list[str]:
    return [str(net) for net in networks]
