"""Addresses a sandbox's own network never reaches: the cloud's metadata services.

slirp4netns gives a command the network (the setup step) through the worker's, host loopback
excepted. On a cloud machine that still reaches the instance metadata service at 169.254.169.254,
which hands the machine's credentials to whoever asks. Before the command starts, each network
here gets an `unreachable` route inside the sandbox's network namespace: connecting fails at once
("Network is unreachable").

The route is added by a small Python process of its own (single-threaded, as joining a user
namespace requires) that joins the namespace — and, for an unprivileged worker, the user
namespace owning it, where it holds the capabilities to change routes — and asks the kernel over
netlink: no `ip` to install, and no exec after joining, which would drop those capabilities.
"""

from __future__ import annotations

import subprocess
import sys

# Link-local (AWS, GCP, Azure, Oracle, DigitalOcean … metadata at 169.254.169.254), Alibaba's
# metadata, Azure's wire server.
BLOCKED = ("169.254.0.0/16", "100.100.100.200/32", "168.63.129.16/32")
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000

_SCRIPT = r"""
import ctypes, os, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
*joins, blocked = sys.argv[1:]
for join in joins:
    fd, kind = (int(part) for part in join.split(":"))
    if libc.setns(fd, kind) != 0:
        sys.exit("joining the namespace: " + os.strerror(ctypes.get_errno()))
link = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
for seq, network in enumerate(blocked.split(","), 1):
    address, length = network.split("/")
    # rtmsg: AF_INET, dst_len, src_len, tos, table main, protocol static, scope universe,
    # type unreachable, flags; then RTA_DST
    body = struct.pack("=BBBBBBBBI", 2, int(length), 0, 0, 254, 4, 0, 7, 0)
    body += struct.pack("=HH", 8, 1) + socket.inet_aton(address)
    # RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_EXCL | NLM_F_CREATE
    link.send(struct.pack("=IHHII", 16 + len(body), 24, 0x1 | 0x4 | 0x200 | 0x400, seq, 0) + body)
    answer = link.recv(4096)
    kind, = struct.unpack_from("=H", answer, 4)
    error, = struct.unpack_from("=i", answer, 16)
    if kind != 2 or error != 0:
        sys.exit(f"the route to {network}: " + os.strerror(-error if kind == 2 else 0))
"""


def block(net: int, user: int | None = None, *, timeout: float = 10.0) -> str | None:
    """Make BLOCKED unreachable in the network namespace of fd `net` (joining the user
    namespace of fd `user` first, when given); None when done, else what went wrong."""
    joins = [f"{user}:{CLONE_NEWUSER}"] if user is not None else []
    joins.append(f"{net}:{CLONE_NEWNET}")
    fds = (net,) if user is None else (net, user)
    try:
        argv = [sys.executable, "-I", "-S", "-c", _SCRIPT, *joins, ",".join(BLOCKED)]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              pass_fds=fds, stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if proc.returncode == 0:
        return None
    return (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
