"""Sandbox escapes: what a repository's tests or setup step try to reach or exhaust through the
real bwrap (the bot's files, system and home secrets, the host's services and private or
metadata addresses, processes outliving the command, process, memory, CPU and output floods),
each refused."""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from agent.gate.validation import run_validation
from agent.sandbox.base import NoSandbox, SandboxLimits, hidden_paths
from agent.sandbox.commands import run_command
from tests.fakes.probes import (
    PATH,
    PY,
    BotFiles,
    MakeBwrap,
    connect_command,
    needs_slirp,
    probe_testing,
    routes_to,
)
from tests.fakes.sandboxes import processes_with, slirp_installed

# --- the bot's files and the machine's secrets ---------------------------------------------------


def test_attack_reading_the_bots_key_database_mirrors_and_worktrees_is_refused(
    bwrap: MakeBwrap, bot_files: BotFiles, probe_env: None
) -> None:
    testing = probe_testing(bot_files)
    sandbox = bwrap(hide=hidden_paths(data=bot_files.hide(), home=None))
    result = run_validation(bot_files.worktree, testing, environ=dict(os.environ), sandbox=sandbox)
    assert result.success, result.test_output
    assert f"{len(bot_files.hidden()) + 5} passed" in (result.test_output or "")


def test_control_without_the_sandbox_the_same_probe_reads_the_bots_files(
    bot_files: BotFiles, probe_env: None
) -> None:
    testing = probe_testing(bot_files)
    result = run_validation(
        bot_files.worktree, testing, environ=dict(os.environ), sandbox=NoSandbox()
    )
    assert not result.success  # the control: these files are really there
    assert "ghs_leaked" in (result.test_output or "") or "DID NOT RAISE" in (
        result.test_output or ""
    )


def test_attack_reading_etc_shadow_is_refused(bwrap: MakeBwrap, tmp_path: Path) -> None:
    assert Path("/etc/shadow").exists()  # the control: there is a file to steal
    sandbox = bwrap(hide=hidden_paths(data=[], home=None))
    result = run_command(
        "cat /etc/shadow /etc/gshadow",
        tmp_path,
        sandbox=sandbox,
        timeout=30,
        env={"PATH": PATH},
        max_output_chars=5000,
    )
    assert result.exit_code != 0
    assert "root:" not in result.output, result.output


HOME_CREDENTIALS = (
    ".ssh/id_ed25519",
    ".aws/credentials",
    ".git-credentials",
    ".netrc",
    ".config/gh/hosts.yml",
    ".pypirc",
    ".docker/config.json",
)


def test_attack_reading_home_credentials_is_refused(
    bwrap: MakeBwrap, visible_dir: Path, tmp_path: Path
) -> None:
    home = visible_dir / "home"
    for rel in HOME_CREDENTIALS:
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text("stolen-secret\n")
    (home / "notes.txt").write_text("visible\n")  # the control: the home itself is readable
    sandbox = bwrap(hide=hidden_paths(data=[], home=home))
    paths = " ".join(str(home / rel) for rel in (*HOME_CREDENTIALS, "notes.txt"))
    result = run_command(
        f"for f in {paths}; do cat $f; done",
        tmp_path,
        sandbox=sandbox,
        timeout=30,
        env={"PATH": PATH, "HOME": str(home)},
        max_output_chars=5000,
    )
    assert "stolen-secret" not in result.output, result.output
    assert result.output.count("visible") == 1, result.output


# --- the host's network ---------------------------------------------------------------------------


def test_attack_reaching_a_loopback_service_from_the_tests_is_refused(
    bwrap: MakeBwrap, listener: int, tmp_path: Path
) -> None:
    result = run_command(
        connect_command("127.0.0.1", listener),
        tmp_path,
        sandbox=bwrap(),
        timeout=30,
        env={"PATH": PATH},
        max_output_chars=5000,
    )
    assert result.exit_code != 0
    assert "ConnectionRefusedError" in result.output and "connected" not in result.output


def test_attack_reaching_the_hosts_own_address_from_the_setup_step_is_refused(
    bwrap: MakeBwrap, world_listener: tuple[str, int], tmp_path: Path
) -> None:
    """A service listening on every address of the worker (a database, a model server) is out
    of the setup step's reach by the worker's network address too, not only by its loopback."""
    needs_slirp()
    with socket.create_connection(world_listener, timeout=5):
        pass  # the control: the host reaches it
    result = run_command(
        connect_command(*world_listener),
        tmp_path,
        sandbox=bwrap(),
        timeout=30,
        env={"PATH": PATH},
        max_output_chars=5000,
        network=True,
    )
    assert "No route to host" in result.output and "connected" not in result.output.split()


PRIVATE_HOSTS = (
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.254",
    "192.168.1.1",
    "100.64.0.1",
    "169.254.169.254",
    "169.254.170.2",
)


def test_attack_reaching_private_or_link_local_ranges_from_the_setup_step_is_refused(
    bwrap: MakeBwrap, tmp_path: Path
) -> None:
    needs_slirp()
    assert routes_to(bwrap(), tmp_path, *PRIVATE_HOSTS) == dict.fromkeys(
        PRIVATE_HOSTS, "No route to host"
    )


def test_attack_reaching_out_over_ipv6_from_the_setup_step_is_refused(
    bwrap: MakeBwrap, tmp_path: Path
) -> None:
    """slirp4netns gives it IPv4 only; its interface's IPv6 (link-local) is switched off."""
    needs_slirp()
    unique_local, public = "fd00::1", "2606:4700::1111"
    assert routes_to(bwrap(), tmp_path, unique_local, public) == dict.fromkeys(
        (unique_local, public), "Network is unreachable"
    )
    interfaces = run_command(
        "cut -c 46- /proc/net/if_inet6",
        tmp_path,
        sandbox=bwrap(),
        timeout=30,
        env={"PATH": PATH},
        max_output_chars=5000,
        network=True,
    )
    assert interfaces.output.split() == ["lo"]


def test_attack_binding_to_the_interface_around_the_routes_is_refused(
    bwrap: MakeBwrap, world_listener: tuple[str, int], tmp_path: Path
) -> None:
    """Bound to an interface, a socket whose route is unreachable is sent on that link as if
    its address were there; slirp4netns answers for none but its own, so nothing leaves."""
    needs_slirp()
    host, port = world_listener
    code = (
        "import socket; s = socket.socket(); "
        "s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b'tap0'); "
        f"s.settimeout(10); s.connect(({host!r}, {port})); print('connected')"
    )
    result = run_command(
        f"{PY} -c {code!r}",
        tmp_path,
        sandbox=bwrap(),
        timeout=30,
        env={"PATH": PATH},
        max_output_chars=5000,
        network=True,
    )
    assert "No route to host" in result.output and "connected" not in result.output.split()


@pytest.mark.parametrize("host", ["127.0.0.1", "10.0.2.2"])  # slirp4netns's name for it
def test_attack_reaching_the_host_loopback_from_the_setup_step_is_refused(
    bwrap: MakeBwrap, listener: int, tmp_path: Path, host: str
) -> None:
    """Where the bot's own services listen (its database, Redis, a local model server): a setup
    step with the network must not reach them. With slirp4netns the command has a network of
    its own, and the host's loopback is not in it."""
    if not slirp_installed():
        pytest.skip(
            "slirp4netns is not installed: a command with the network shares the "
            "host's (loopback included); .ci/run installs it"
        )
    result = run_command(
        connect_command(host, listener),
        tmp_path,
        sandbox=bwrap(),
        timeout=30,
        env={"PATH": PATH},
        max_output_chars=5000,
        network=True,
    )
    assert result.exit_code != 0 and "connected" not in result.output, result.output


def test_attack_reaching_the_cloud_metadata_address_is_refused(
    bwrap: MakeBwrap, tmp_path: Path
) -> None:
    """169.254.169.254 hands a cloud machine's credentials to whoever asks: the setup step's
    network has it unreachable, and the command cannot take that route away."""
    if not slirp_installed():
        pytest.skip("slirp4netns is not installed; .ci/run installs it")
    script = (
        f"{connect_command('169.254.169.254', 80)}; "
        "ip route del unreachable 169.254.0.0/16 2>/dev/null || echo route-kept"
    )
    result = run_command(
        script,
        tmp_path,
        sandbox=bwrap(),
        timeout=30,
        env={"PATH": PATH},
        max_output_chars=5000,
        network=True,
    )
    assert "No route to host" in result.output and "connected" not in result.output.split()
    assert "route-kept" in result.output, result.output


def test_attack_reaching_the_machines_redis_from_the_tests_is_refused(
    bwrap: MakeBwrap, redis_url: str, tmp_path: Path
) -> None:
    parts = urlsplit(redis_url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 6379
    with socket.create_connection((host, port), timeout=5):
        pass  # the control: the worker itself reaches it
    result = run_command(
        connect_command(host, port),
        tmp_path,
        sandbox=bwrap(),
        timeout=30,
        env={"PATH": PATH},
        max_output_chars=5000,
    )
    assert result.exit_code != 0 and "connected" not in result.output


# --- processes, limits and floods ----------------------------------------------------------------


def test_attack_background_process_outliving_the_command_is_killed(
    bwrap: MakeBwrap, tmp_path: Path
) -> None:
    marker = f"cra-daemon-{uuid.uuid4().hex}"
    # A daemon in its own session with its output closed: it escapes a process-group kill.
    daemon = f"setsid {PY} -c 'import time; time.sleep(600)' {marker} </dev/null >/dev/null 2>&1 &"
    result = run_command(
        f"{daemon} sleep 0.2; echo started",
        tmp_path,
        sandbox=bwrap(),
        timeout=30,
        env={"PATH": PATH},
        max_output_chars=5000,
    )
    assert result.exit_code == 0 and "started" in result.output
    assert processes_with(marker) == []


def test_attack_fork_bomb_is_stopped_and_the_next_command_runs(
    bwrap: MakeBwrap, tmp_path: Path
) -> None:
    sandbox = bwrap(limits=SandboxLimits(processes=48))
    bomb = f"{PY} -c 'import os\nwhile True: os.fork()'"
    result = run_command(
        bomb, tmp_path, sandbox=sandbox, timeout=60, env={"PATH": PATH}, max_output_chars=5000
    )
    assert result.exit_code != 0 and not result.timed_out
    assert "[cra] the command hit the sandbox's process limit (48 processes)" in result.output
    after = run_command(
        "echo next",
        tmp_path,
        sandbox=sandbox,
        timeout=30,
        env={"PATH": PATH},
        max_output_chars=5000,
    )
    assert after.exit_code == 0 and after.output == "next\n"


def test_attack_memory_flood_is_stopped_and_reported(bwrap: MakeBwrap, tmp_path: Path) -> None:
    sandbox = bwrap(limits=SandboxLimits(memory_mb=256))
    result = run_command(
        f"{PY} -c 'bytearray(2 * 1024 ** 3)'",
        tmp_path,
        sandbox=sandbox,
        timeout=60,
        env={"PATH": PATH},
        max_output_chars=5000,
    )
    assert result.exit_code != 0
    assert "MemoryError" in result.output
    assert "[cra] the command may have hit the sandbox's memory limit (256 MB" in result.output


def test_attack_cpu_hog_is_stopped_by_the_cpu_limit(bwrap: MakeBwrap, tmp_path: Path) -> None:
    sandbox = bwrap(limits=SandboxLimits(cpu_seconds=1))
    result = run_command(
        f"{PY} -c 'while True: pass'",
        tmp_path,
        sandbox=sandbox,
        timeout=60,
        env={"PATH": PATH},
        max_output_chars=5000,
    )
    assert not result.timed_out
    assert "[cra] stopped by the sandbox: the CPU-time limit (1 s per process)" in result.output


def test_attack_output_flood_is_capped(bwrap: MakeBwrap, tmp_path: Path) -> None:
    result = run_command(
        "yes flood | head -c 50000000; echo the-end",
        tmp_path,
        sandbox=bwrap(),
        timeout=60,
        env={"PATH": PATH},
        max_output_chars=5000,
    )
    assert result.exit_code == 0
    assert len(result.output) < 6000 and result.output.rstrip().endswith("the-end")
