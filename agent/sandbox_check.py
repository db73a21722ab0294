"""The start-up self-check: run a probe in the sandbox and prove what it confines."""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path

from agent.bwrap import BwrapSandbox
from agent.sandbox import Sandbox, SandboxUnavailable, describe_sandbox
from agent.validation import run_command

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
_NETWORK_PROBE = ("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | grep -v '^lo$'\n"
                  # 169.254.0.0/16 routed unreachable (agent.netblock)
                  "awk '$2 == \"0000FEA9\" && $8 == \"0000FFFF\" && $4 == \"0201\" "
                  "{ print \"metadata-unreachable\" }' /proc/net/route\n")


def self_check(sandbox: Sandbox, *, data_dir: Path) -> list[str]:
    """Run the probe (a canary file in `data_dir` must stay invisible); the facts it proved.

    SandboxUnavailable, saying what failed and how to fix it, when the sandbox does not work.
    """
    if not sandbox.isolated:
        return [describe_sandbox(sandbox)]
    data_dir.mkdir(parents=True, exist_ok=True)
    canary = data_dir / ".sandbox-canary"
    canary.write_text("the sandbox must not show this file\n")
    with tempfile.TemporaryDirectory(prefix="cra-check-", dir=data_dir) as tmp:
        result = run_command(_PROBE.format(secret=shlex.quote(str(canary))), Path(tmp),
                             sandbox=sandbox, timeout=60, env={"PATH": "/usr/bin:/bin"},
                             max_output_chars=4000)
        facts = [line for line in result.output.splitlines() if line.startswith("ok: ")]
        if result.exit_code != 0 or len(facts) != 5:
            raise SandboxUnavailable(_failure(result.output))
        network = _network_fact(sandbox, Path(tmp))
    return [describe_sandbox(sandbox), *(fact.removeprefix("ok: ") for fact in facts),
            *network]


def _network_fact(sandbox: Sandbox, tree: Path) -> list[str]:
    """What a command given the network (the setup step) is connected to, proved where it has
    a network of its own."""
    if not isinstance(sandbox, BwrapSandbox) or not sandbox.allow_network:
        return []
    if sandbox.tools.slirp4netns is None:
        return [SHARED_NETWORK]
    result = run_command(_NETWORK_PROBE, tree, sandbox=sandbox, timeout=60, network=True,
                         env={"PATH": "/usr/bin:/bin"}, max_output_chars=4000)
    if result.exit_code == 0 and result.output.split() == ["tap0"]:
        raise SandboxUnavailable(
            "a command given the network reaches the cloud's metadata addresses "
            "(169.254.0.0/16 is not unreachable in its namespace); set CRA_SANDBOX_NETWORK=false "
            "until that is fixed")
    if result.exit_code != 0 or result.output.split() != ["tap0", "metadata-unreachable"]:
        raise SandboxUnavailable(
            f"slirp4netns did not give a command the network: {result.output.strip()[-300:]}; "
            "fix it, uninstall it (commands with the network then share this machine's), or "
            "set CRA_SANDBOX_NETWORK=false")
    return ["a command given the network (the setup step) has its own, through slirp4netns: "
            "not this machine's loopback, nor the cloud's metadata addresses"]


def _failure(output: str) -> str:
    """What went wrong, in bwrap's or the probe's words, and how to fix it."""
    failed = [line.removeprefix("FAIL: ") for line in output.splitlines()
              if line.startswith("FAIL:")]
    if failed:
        return (f"the bwrap sandbox runs but does not confine: {'; '.join(failed)}; "
                "refusing to run repository commands")
    said = "; ".join(line for line in output.splitlines() if line.startswith("bwrap:"))
    return (f"the bwrap sandbox does not work here ({said or output.strip()[-300:]}): "
            f"{CONTAINER_HINT}; or set CRA_SANDBOX=none to run repository commands "
            "unsandboxed")
