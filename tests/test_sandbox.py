"""agent.sandbox and agent.bwrap through the real bwrap: what a repository's commands can and
cannot reach."""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import sqlite3
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from agent import netblock
from agent.bwrap import BwrapSandbox, build_sandbox
from agent.config import TestingConfig
from agent.sandbox import (
    ENV_MOUNT,
    TREE_MOUNT,
    NoSandbox,
    SandboxLimits,
    SandboxUnavailable,
    hidden_paths,
    limit_note,
)
from agent.slirp import Slirp
from agent.validation import run_command, run_validation
from agent.workspace import scratch_tree
from tests.fakes.repos import commit_file, git_in, make_python_project
from tests.fakes.sandboxes import host_address, processes_with, slirp_installed

MakeBwrap = Callable[..., BwrapSandbox]
PATH = "/usr/local/bin:/usr/bin:/bin"
PY = sys.executable


@dataclass
class BotFiles:
    """A bot's data directory with a run's worktree in it, and a private key elsewhere."""

    data: Path
    key: Path
    database: Path
    mirror: Path
    other_mirror: Path
    worktree: Path
    other_worktree: Path
    visible: Path  # a file outside every hidden path: the control

    def hide(self) -> list[Path]:
        return [self.data, self.key, self.database]

    def hidden(self) -> list[Path]:
        """Files the tests must not be able to read."""
        return [self.key, self.database, self.mirror / "hooks" / "pre-commit.sample",
                self.mirror / "description", self.other_mirror / "HEAD",
                self.other_worktree / "calc" / "ops.py", self.data / "cra.db"]


@pytest.fixture
def bot_files(visible_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> BotFiles:
    """Real mirrors and worktrees laid out as the bot lays them out, outside /tmp."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    origin = make_python_project(tmp_path / "origin", bug=False)
    data = visible_dir / "data"
    mirror = data / "mirrors" / "acme" / "calc.git"
    other = data / "mirrors" / "acme" / "secret.git"
    for path in (mirror, other):
        path.parent.mkdir(parents=True, exist_ok=True)
        git_in(path.parent, "clone", "--quiet", "--mirror", str(origin), str(path))
    # A mirror config a careless operator let keep a token: the sandbox never shows it.
    git_in(mirror, "config", "remote.origin.url", "https://x:ghs_leaked@github.example/a/c")
    worktrees = data / "work" / "worktrees"
    for name in ("run-a", "run-b"):
        git_in(mirror, "worktree", "add", "--quiet", "-b", f"cra/{name}",
               str(worktrees / name), "HEAD")
    database = data / "cra.db"
    with sqlite3.connect(database) as db:
        db.execute("create table runs (token text)")
    key = visible_dir / "keys" / "app.pem"
    key.parent.mkdir()
    key.write_text("-----BEGIN RSA PRIVATE KEY-----\n")
    visible = visible_dir / "visible.txt"
    visible.write_text("visible")
    return BotFiles(data, key, database, mirror, other, worktrees / "run-a",
                    worktrees / "run-b", visible)


PROBE_TESTS = '''
import os
import shlex
import shutil
import subprocess

import pytest

HIDDEN = os.environ["PROBE_HIDDEN"].split(os.pathsep)


@pytest.mark.parametrize("path", HIDDEN)
def test_bot_file_is_not_readable(path):
    with pytest.raises(OSError):
        open(path, "rb").read()


def test_a_file_outside_the_hidden_paths_is_readable():
    assert open(os.environ["PROBE_VISIBLE"]).read() == "visible"


def test_git_works_without_the_mirror_config():
    log = subprocess.run(["git", "log", "-1", "--format=%s"], capture_output=True, text=True)
    assert log.returncode == 0, log.stderr
    config = subprocess.run(["git", "config", "--list"], capture_output=True, text=True)
    assert "ghs_leaked" not in config.stdout and "remote." not in config.stdout
    common = subprocess.run(["git", "rev-parse", "--git-common-dir"], capture_output=True,
                            text=True).stdout.strip()
    assert "ghs_leaked" not in open(os.path.join(common, "config")).read()
'''


def probe_testing(files: BotFiles) -> TestingConfig:
    (files.worktree / "tests" / "test_probe.py").write_text(PROBE_TESTS)
    os.environ["PROBE_HIDDEN"] = os.pathsep.join(map(str, files.hidden()))
    os.environ["PROBE_VISIBLE"] = str(files.visible)
    return TestingConfig(test_command=f"{PY} -m pytest -q -p no:cacheprovider tests",
                         env=["PROBE_*"])


@pytest.fixture
def probe_env() -> Iterator[None]:
    yield
    for name in ("PROBE_HIDDEN", "PROBE_VISIBLE"):
        os.environ.pop(name, None)


def test_a_repositorys_tests_cannot_read_the_bots_key_database_mirrors_or_other_worktrees(
    bwrap: MakeBwrap, bot_files: BotFiles, probe_env: None
) -> None:
    testing = probe_testing(bot_files)
    sandbox = bwrap(hide=hidden_paths(data=bot_files.hide(), home=None))
    result = run_validation(bot_files.worktree, testing, environ=dict(os.environ),
                            sandbox=sandbox)
    assert result.success, result.test_output
    assert f"{len(bot_files.hidden()) + 5} passed" in (result.test_output or "")


def test_without_the_sandbox_the_same_tests_read_the_bots_files(
    bot_files: BotFiles, probe_env: None
) -> None:
    testing = probe_testing(bot_files)
    result = run_validation(bot_files.worktree, testing, environ=dict(os.environ),
                            sandbox=NoSandbox())
    assert not result.success  # the control: these files are really there
    assert "ghs_leaked" in (result.test_output or "") or "DID NOT RAISE" in (
        result.test_output or "")


# --- network -------------------------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP service on the host's loopback; its port."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


@pytest.fixture
def world_listener() -> Iterator[tuple[str, int]]:
    """A TCP service on every address of the host; its network address (not loopback) and
    port: what a command with the network reaches."""
    with socket.socket() as server:
        server.bind(("0.0.0.0", 0))
        server.listen(8)
        yield host_address(), server.getsockname()[1]


def connect_command(host: str, port: int) -> str:
    code = (f"import socket; socket.create_connection(({host!r}, {port}), timeout=5); "
            "print('connected')")
    return f"{PY} -c {code!r}"


def test_a_loopback_service_is_unreachable_when_network_is_off(
    bwrap: MakeBwrap, listener: int, tmp_path: Path
) -> None:
    result = run_command(connect_command("127.0.0.1", listener), tmp_path, sandbox=bwrap(),
                         timeout=30, env={"PATH": PATH}, max_output_chars=5000)
    assert result.exit_code != 0
    assert "ConnectionRefusedError" in result.output and "connected" not in result.output


# Whether the kernel routes a datagram to each address: a UDP connect only looks the route up,
# it sends nothing (no test reaches the internet).
ROUTED = """\
import socket, sys
for host in sys.argv[1:]:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect((host, 53))
            print(host, "routed")
        except OSError as exc:
            print(host, exc.strerror)
"""


def routes_to(sandbox: BwrapSandbox, tmp_path: Path, *hosts: str) -> dict[str, str]:
    """What a command given the network finds of a route to each host."""
    result = run_command(f"{PY} -c {shlex.quote(ROUTED)} {shlex.join(hosts)}", tmp_path,
                         sandbox=sandbox, timeout=30, env={"PATH": PATH}, max_output_chars=5000,
                         network=True)
    assert result.exit_code == 0, result.output
    return dict(line.split(" ", 1) for line in result.output.splitlines())


def needs_slirp() -> None:
    if not slirp_installed():
        pytest.skip("slirp4netns is not installed: a command with the network shares the "
                    "host's; .ci/run installs it")


def test_a_command_allowed_the_network_never_reaches_the_hosts_own_address(
    bwrap: MakeBwrap, world_listener: tuple[str, int], tmp_path: Path
) -> None:
    """A service listening on every address of the worker (a database, a model server) is out
    of the setup step's reach by the worker's network address too, not only by its loopback."""
    needs_slirp()
    with socket.create_connection(world_listener, timeout=5):
        pass  # the control: the host reaches it
    result = run_command(connect_command(*world_listener), tmp_path, sandbox=bwrap(),
                         timeout=30, env={"PATH": PATH}, max_output_chars=5000, network=True)
    assert "No route to host" in result.output and "connected" not in result.output.split()


PRIVATE_HOSTS = ("10.1.2.3", "172.16.0.1", "172.31.255.254", "192.168.1.1", "100.64.0.1",
                 "169.254.169.254", "169.254.170.2")


def test_a_command_allowed_the_network_has_no_route_to_private_or_link_local_addresses(
    bwrap: MakeBwrap, tmp_path: Path
) -> None:
    needs_slirp()
    assert routes_to(bwrap(), tmp_path, *PRIVATE_HOSTS) == dict.fromkeys(PRIVATE_HOSTS,
                                                                      "No route to host")


def test_a_command_allowed_the_network_still_has_a_route_to_public_addresses(
    bwrap: MakeBwrap, tmp_path: Path
) -> None:
    """The internet stays within reach, checked at the level of the routes: nothing is sent."""
    needs_slirp()
    public = ("1.1.1.1", "140.82.112.3", "151.101.0.223", "172.15.255.1", "192.169.0.1")
    assert routes_to(bwrap(), tmp_path, *public) == dict.fromkeys(public, "routed")


def test_a_command_allowed_the_network_has_no_ipv6(bwrap: MakeBwrap, tmp_path: Path) -> None:
    """slirp4netns gives it IPv4 only; its interface's IPv6 (link-local) is switched off."""
    needs_slirp()
    unique_local, public = "fd00::1", "2606:4700::1111"
    assert routes_to(bwrap(), tmp_path, unique_local, public) == dict.fromkeys(
        (unique_local, public), "Network is unreachable")
    interfaces = run_command("cut -c 46- /proc/net/if_inet6", tmp_path, sandbox=bwrap(),
                             timeout=30, env={"PATH": PATH}, max_output_chars=5000, network=True)
    assert interfaces.output.split() == ["lo"]


def test_an_allowed_address_is_opened_and_nothing_else(
    bwrap: MakeBwrap, world_listener: tuple[str, int], tmp_path: Path
) -> None:
    """A private package mirror: the operator opens its address (here the host's own, where the
    listener is, and one inside 10.0.0.0/8); the rest stays closed."""
    needs_slirp()
    host, port = world_listener
    sandbox = bwrap(allow_addresses=[IPv4Network(host), IPv4Network("10.1.2.3")])
    result = run_command(connect_command(host, port), tmp_path, sandbox=sandbox, timeout=30,
                         env={"PATH": PATH}, max_output_chars=5000, network=True)
    assert result.output == "connected\n"
    assert routes_to(sandbox, tmp_path, "10.1.2.3", "10.1.2.4", "192.168.1.1") == {
        "10.1.2.3": "routed", "10.1.2.4": "No route to host", "192.168.1.1": "No route to host"}


def test_binding_to_the_interface_does_not_get_around_the_routes(
    bwrap: MakeBwrap, world_listener: tuple[str, int], tmp_path: Path
) -> None:
    """Bound to an interface, a socket whose route is unreachable is sent on that link as if
    its address were there; slirp4netns answers for none but its own, so nothing leaves."""
    needs_slirp()
    host, port = world_listener
    code = ("import socket; s = socket.socket(); "
            "s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b'tap0'); "
            f"s.settimeout(10); s.connect(({host!r}, {port})); print('connected')")
    result = run_command(f"{PY} -c {code!r}", tmp_path, sandbox=bwrap(), timeout=30,
                         env={"PATH": PATH}, max_output_chars=5000, network=True)
    assert "No route to host" in result.output and "connected" not in result.output.split()


@pytest.mark.parametrize("host", ["127.0.0.1", "10.0.2.2"])  # slirp4netns's name for it
def test_a_command_allowed_the_network_still_never_reaches_the_hosts_loopback(
    bwrap: MakeBwrap, listener: int, tmp_path: Path, host: str
) -> None:
    """Where the bot's own services listen (its database, Redis, a local model server): a setup
    step with the network must not reach them. With slirp4netns the command has a network of
    its own, and the host's loopback is not in it."""
    if not slirp_installed():
        pytest.skip("slirp4netns is not installed: a command with the network shares the "
                    "host's (loopback included); .ci/run installs it")
    result = run_command(connect_command(host, listener), tmp_path, sandbox=bwrap(), timeout=30,
                         env={"PATH": PATH}, max_output_chars=5000, network=True)
    assert result.exit_code != 0 and "connected" not in result.output, result.output


def test_a_command_allowed_the_network_never_reaches_the_clouds_metadata(
    bwrap: MakeBwrap, tmp_path: Path
) -> None:
    """169.254.169.254 hands a cloud machine's credentials to whoever asks: the setup step's
    network has it unreachable, and the command cannot take that route away."""
    if not slirp_installed():
        pytest.skip("slirp4netns is not installed; .ci/run installs it")
    script = (f"{connect_command('169.254.169.254', 80)}; "
              "ip route del unreachable 169.254.0.0/16 2>/dev/null || echo route-kept")
    result = run_command(script, tmp_path, sandbox=bwrap(), timeout=30, env={"PATH": PATH},
                         max_output_chars=5000, network=True)
    assert "No route to host" in result.output and "connected" not in result.output.split()
    assert "route-kept" in result.output, result.output


def test_a_namespace_that_cannot_be_joined_is_said() -> None:
    with open(os.devnull) as null:
        said = netblock.block(null.fileno(), None, netblock.Routes(netblock.METADATA),
                              gateway=IPv4Address("10.0.2.2"), interface="tap0")
    assert said is not None and said.startswith("joining the namespace: "), said


def test_a_network_that_cannot_be_connected_is_reported_and_the_command_never_runs(
    bwrap: MakeBwrap, tmp_path: Path
) -> None:
    sandbox = bwrap()
    broken = replace(sandbox, tools=replace(sandbox.tools, slirp4netns=shutil.which("false")))
    result = run_command("echo ran", tmp_path, sandbox=broken, timeout=30, env={"PATH": PATH},
                         max_output_chars=5000, network=True)
    assert result.exit_code != 0 and "ran" not in result.output.split()
    assert result.output.startswith("[cra] the command did not run: slirp4netns did not "
                                    "connect the sandbox's network"), result.output
    assert "exited with status 1" in result.output


def test_a_slirp4netns_that_cannot_open_the_tun_device_says_how_to_give_it_one(
    bwrap: MakeBwrap, tmp_path: Path
) -> None:
    """A container's /dev may lack /dev/net/tun, or have it root-only: a non-root worker's
    slirp4netns cannot open it."""
    fake = tmp_path / "slirp4netns"
    fake.write_text('#!/bin/sh\necho \'open("/dev/net/tun"): Permission denied\' >&2; exit 1\n')
    fake.chmod(0o755)
    sandbox = bwrap()
    broken = replace(sandbox, tools=replace(sandbox.tools, slirp4netns=str(fake)))
    result = run_command("echo ran", tmp_path, sandbox=broken, timeout=30, env={"PATH": PATH},
                         max_output_chars=5000, network=True)
    assert "ran" not in result.output.split()
    assert "it needs /dev/net/tun, usable by the worker's user (mode 0666" in result.output


def test_commands_given_the_network_at_once_all_start(bwrap: MakeBwrap, tmp_path: Path) -> None:
    """slirp4netns connects a namespace only once bwrap has set up its loopback (it brings lo
    up itself, and doing that first failed bwrap's own setup about one time in twenty when
    several started together)."""
    if not slirp_installed():
        pytest.skip("slirp4netns is not installed; .ci/run installs it")
    sandbox = bwrap()

    def run_some(_: int) -> list[str]:
        return [run_command("echo ok", tmp_path, sandbox=sandbox, timeout=30, network=True,
                            env={"PATH": PATH}, max_output_chars=2000).output for _ in range(20)]

    with ThreadPoolExecutor(4) as pool:
        outputs = [output for batch in pool.map(run_some, range(4)) for output in batch]
    assert [o for o in outputs if o != "ok\n"] == []


def test_the_network_is_connected_only_to_the_namespace_bwrap_reported() -> None:
    """A pid bwrap reported whose process ended and whose number another process has now: its
    namespace is not the sandbox's, and is never connected."""
    slirp = Slirp("slirp4netns", join_userns=False)
    mine = os.stat(f"/proc/{os.getpid()}/ns/net").st_ino
    with pytest.raises(SandboxUnavailable, match="no longer the sandbox's"):
        slirp(os.getpid(), mine + 1)


def test_a_command_allowed_the_network_resolves_names(bwrap: MakeBwrap, tmp_path: Path) -> None:
    """Its resolv.conf names slirp4netns's resolver (the host's may be on loopback)."""
    if not slirp_installed():
        pytest.skip("slirp4netns is not installed; .ci/run installs it")
    result = run_command("cat /etc/resolv.conf", tmp_path, sandbox=bwrap(), timeout=30,
                         env={"PATH": PATH}, max_output_chars=5000, network=True)
    assert result.output == "nameserver 10.0.2.3\n"


def test_the_redis_of_the_machine_is_unreachable_from_the_tests(
    bwrap: MakeBwrap, redis_url: str, tmp_path: Path
) -> None:
    parts = urlsplit(redis_url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 6379
    with socket.create_connection((host, port), timeout=5):
        pass  # the control: the worker itself reaches it
    result = run_command(connect_command(host, port), tmp_path, sandbox=bwrap(), timeout=30,
                         env={"PATH": PATH}, max_output_chars=5000)
    assert result.exit_code != 0 and "connected" not in result.output


# --- processes and limits ------------------------------------------------------------------------


def test_a_background_process_is_gone_when_the_command_ends(
    bwrap: MakeBwrap, tmp_path: Path
) -> None:
    marker = f"cra-daemon-{uuid.uuid4().hex}"
    # A daemon in its own session with its output closed: it escapes a process-group kill.
    daemon = f"setsid {PY} -c 'import time; time.sleep(600)' {marker} </dev/null >/dev/null 2>&1 &"
    result = run_command(f"{daemon} sleep 0.2; echo started", tmp_path, sandbox=bwrap(),
                         timeout=30, env={"PATH": PATH}, max_output_chars=5000)
    assert result.exit_code == 0 and "started" in result.output
    assert processes_with(marker) == []


def test_a_fork_bomb_is_stopped_reported_and_the_next_command_runs(
    bwrap: MakeBwrap, tmp_path: Path
) -> None:
    sandbox = bwrap(limits=SandboxLimits(processes=48))
    bomb = f"{PY} -c 'import os\nwhile True: os.fork()'"
    result = run_command(bomb, tmp_path, sandbox=sandbox, timeout=60, env={"PATH": PATH},
                         max_output_chars=5000)
    assert result.exit_code != 0 and not result.timed_out
    assert "[cra] the command hit the sandbox's process limit (48 processes)" in result.output
    after = run_command("echo next", tmp_path, sandbox=sandbox, timeout=30, env={"PATH": PATH},
                        max_output_chars=5000)
    assert after.exit_code == 0 and after.output == "next\n"


def test_a_2gb_allocation_is_stopped_and_reported(bwrap: MakeBwrap, tmp_path: Path) -> None:
    sandbox = bwrap(limits=SandboxLimits(memory_mb=256))
    result = run_command(f"{PY} -c 'bytearray(2 * 1024 ** 3)'", tmp_path, sandbox=sandbox,
                         timeout=60, env={"PATH": PATH}, max_output_chars=5000)
    assert result.exit_code != 0
    assert "MemoryError" in result.output
    assert "[cra] the command may have hit the sandbox's memory limit (256 MB" in result.output


def test_a_cpu_hog_is_stopped_by_the_cpu_limit(bwrap: MakeBwrap, tmp_path: Path) -> None:
    sandbox = bwrap(limits=SandboxLimits(cpu_seconds=1))
    result = run_command(f"{PY} -c 'while True: pass'", tmp_path, sandbox=sandbox, timeout=60,
                         env={"PATH": PATH}, max_output_chars=5000)
    assert not result.timed_out
    assert "[cra] stopped by the sandbox: the CPU-time limit (1 s per process)" in result.output


# --- the file system -----------------------------------------------------------------------------


def test_the_system_is_read_only_the_tree_writable_and_tmp_private(
    bwrap: MakeBwrap, tmp_path: Path
) -> None:
    (tmp_path / "host-only").write_text("x")
    script = textwrap.dedent("""\
        touch /usr/cra-probe 2>/dev/null && echo system-writable
        echo made > made.txt && pwd
        ls /tmp
        test -e {host} && echo host-tmp-visible
    """).format(host=tmp_path / "host-only")
    result = run_command(script, tmp_path, sandbox=bwrap(), timeout=30, env={"PATH": PATH},
                         max_output_chars=5000)
    assert result.exit_code == 1  # the last test fails: the host's /tmp is not there
    assert result.output == f"{TREE_MOUNT}\n"
    assert (tmp_path / "made.txt").read_text() == "made\n"


def test_a_subdirectory_cwd_runs_there_in_the_tree(bwrap: MakeBwrap, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    result = run_command("pwd", tmp_path / "src", tree=tmp_path, sandbox=bwrap(), timeout=30,
                         env={"PATH": PATH}, max_output_chars=5000)
    assert result.output == f"{TREE_MOUNT}/src\n"


def test_a_caller_can_name_paths_as_the_command_sees_them(
    bwrap: MakeBwrap, tmp_path: Path
) -> None:
    tree, env = tmp_path / "tree", tmp_path / "env"
    sandbox = bwrap().with_env(env)
    assert sandbox.seen_as(tree / "out" / "junit.xml", tree=tree) == TREE_MOUNT / "out/junit.xml"
    assert sandbox.seen_as(env / "bin" / "python", tree=tree) == ENV_MOUNT / "bin/python"
    assert NoSandbox().seen_as(tree / "junit.xml", tree=tree) == tree / "junit.xml"


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another user needs root")
def test_an_unprivileged_worker_gets_the_same_sandbox(
    bwrap: MakeBwrap, bot_files: BotFiles
) -> None:
    """What the Docker image (uid 10001) runs: bwrap through a user namespace, no setpriv."""
    nobody = 65534
    for path in (bot_files.data, bot_files.key.parent):
        subprocess.run(["chown", "-R", f"{nobody}:{nobody}", str(path)], check=True)
    sandbox = replace(bwrap(hide=hidden_paths(data=bot_files.hide(), home=None),
                            limits=SandboxLimits(processes=32)), as_root=False)
    script = (f"cat {bot_files.key} {bot_files.database}; git log -1 --format=%s; id -u; "
              "echo ok > written; for i in $(seq 64); do sleep 5 & done; echo all-started")
    launch = sandbox.launch(script, tree=bot_files.worktree, cwd=bot_files.worktree,
                            env={"PATH": PATH}, network=False)
    proc = subprocess.run(["setpriv", f"--reuid={nobody}", f"--regid={nobody}",
                           "--clear-groups", "--", *launch.argv], env=launch.env,
                          cwd=launch.cwd, pass_fds=launch.pass_fds, capture_output=True,
                          text=True, timeout=60, check=False)
    launch.close()
    out = proc.stdout + proc.stderr
    assert "No such file or directory" in out and "BEGIN RSA" not in out
    assert f"{nobody}\n" in out and "all-started" not in out and "Cannot fork" in out
    assert (bot_files.worktree / "written").read_text() == "ok\n"


# --- choosing a sandbox --------------------------------------------------------------------------


def test_bwrap_missing_fails_closed_saying_how_to_install_or_opt_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailable) as caught:
        build_sandbox("bwrap")
    assert "apt-get install bubblewrap" in str(caught.value)
    assert "CRA_SANDBOX=none" in str(caught.value)


def test_auto_falls_back_to_none_only_when_bubblewrap_is_not_installed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert build_sandbox("auto").name == "none"
    assert build_sandbox("none").isolated is False


def test_no_sandbox_runs_on_the_host(tmp_path: Path) -> None:
    result = run_command("pwd", tmp_path, sandbox=NoSandbox(), timeout=30, env={"PATH": PATH},
                         max_output_chars=5000)
    assert result.output == f"{tmp_path}\n"


@pytest.mark.parametrize(("code", "output", "expected"), [
    (0, "Cannot fork", None),
    (1, "nothing special", None),
    (128 + 24, "", "CPU-time limit (900 s per process)"),
    (128 + 25, "", "file-size limit (4096 MB per file)"),
    (2, "sh: Cannot fork", "process limit (512 processes)"),
    (1, "MemoryError", "memory limit (2048 MB per process)"),
    (137, "", "memory limit"),
])
def test_limit_notes_name_the_limit(code: int, output: str, expected: str | None) -> None:
    note = limit_note(code, output, SandboxLimits())
    assert (note is None) if expected is None else (note is not None and expected in note)


def test_a_scratch_tree_reads_the_worktrees_ignored_files_through_its_links(
    bwrap: MakeBwrap, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate's scratch copy links what .gitignore hides (a virtualenv, node_modules) to the
    worktree; the sandbox shows the worktree read-only so that the links resolve."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    worktree = make_python_project(tmp_path / "repo", bug=False)
    commit_file(worktree, ".gitignore", "vendored/\n", "Ignore the vendored package")
    (worktree / "vendored" / "helper").mkdir(parents=True)
    (worktree / "vendored" / "helper" / "__init__.py").write_text("VALUE = 42\n")
    (worktree / "tests" / "test_helper.py").write_text(
        "import helper\n\n\ndef test_helper():\n    assert helper.VALUE == 42\n")
    testing = TestingConfig(test_command=f"PYTHONPATH=vendored {PY} -m pytest -q "
                            "-p no:cacheprovider")
    with scratch_tree(worktree, {}, parent=tmp_path / "scratch") as scratch:
        assert (scratch / "vendored").is_symlink()
        alone = run_validation(scratch, testing, environ=dict(os.environ), sandbox=bwrap())
        linked = run_validation(scratch, testing, environ=dict(os.environ), sandbox=bwrap(),
                                read_only=[worktree])
    assert not alone.success and "No module named 'helper'" in (alone.test_output or "")
    assert linked.success, linked.test_output


def test_git_works_in_a_worktree_of_a_repository_without_a_config_file(
    bwrap: MakeBwrap, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mirror fetched without a config file (git's defaults) still gives its worktrees git."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    source = make_python_project(tmp_path / "source", bug=False)
    mirror = tmp_path / "mirror.git"
    git_in(tmp_path, "clone", "--quiet", "--bare", str(source), str(mirror))
    (mirror / "config").unlink()
    tree = tmp_path / "tree"
    git_in(mirror, "worktree", "add", "--quiet", "--detach", str(tree), "HEAD")

    result = run_command("git log -1 --format=%s", tree, sandbox=bwrap(), timeout=60,
                         env={"PATH": PATH}, max_output_chars=2000)

    assert result.exit_code == 0, result.output


# A git dir of the command's making, whose config runs a command (writing `marker`) when git
# refreshes its index or cleans a file: what a test command would point cra's own git at.
HOSTILE_GIT_DIR = textwrap.dedent("""\
    evil="$PWD/$1"; real="$2"
    mkdir -p "$evil/objects/info" "$evil/refs/heads" "$evil/info"
    echo "$real/objects" > "$evil/objects/info/alternates"
    cat "$real/HEAD" > "$evil/HEAD"; cp "$real/index" "$evil/index"
    printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = "touch {marker}; false"\\n[filter "x"]\\n\\tclean = "touch {marker}; cat"\\n' > "$evil/config"
    echo '* filter=x' > "$evil/info/attributes"
""")  # noqa: E501


def test_a_command_cannot_repoint_the_worktrees_git_at_a_git_dir_of_its_own(
    bwrap: MakeBwrap, tmp_path: Path
) -> None:
    from agent import git

    source = make_python_project(tmp_path / "source", bug=False)
    tree = tmp_path / "tree"
    git_in(source, "worktree", "add", "--quiet", "--detach", str(tree), "HEAD")
    marker = tmp_path / "marker"
    admin = (tree / ".git").read_text()
    script = HOSTILE_GIT_DIR.format(marker=marker) + textwrap.dedent("""\
        printf 'gitdir: %s\\n' "$evil" > .git || echo rewrite refused
        rm -f .git || echo removal refused
        mv .git moved || echo move refused
    """)
    real = git_in(tree, "rev-parse", "--absolute-git-dir").strip()

    result = run_command(f"set -- calc/evil {real}\n{script}", tree, sandbox=bwrap(), timeout=60,
                         env={"PATH": PATH}, max_output_chars=5000)

    refused = [line for line in result.output.splitlines() if line.endswith("refused")]
    assert refused == ["rewrite refused", "removal refused", "move refused"]
    assert (tree / ".git").read_text() == admin
    (tree / "calc" / "ops.py").write_text("# changed\n")
    git.status_entries(tree), git.diff(tree, "HEAD"), git.reset_clean(tree, "HEAD")
    assert not marker.exists()


def test_cras_git_never_runs_inside_a_submodule_a_command_repointed(
    bwrap: MakeBwrap, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent import git
    from agent.workspace import open_workspace

    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    lib = make_python_project(tmp_path / "lib", bug=False)
    source = make_python_project(tmp_path / "source", bug=False)
    git_in(source, "-c", "protocol.file.allow=always", "submodule", "--quiet", "add", str(lib),
           "vendor/lib")
    git_in(source, "commit", "--quiet", "-m", "Add lib")
    ws = open_workspace(source, work_dir=tmp_path / "work", run_id="r1", branch_hint="x")
    tree, marker = ws.worktree, tmp_path / "marker"
    real = git_in(tree / "vendor/lib", "rev-parse", "--absolute-git-dir").strip()
    script = HOSTILE_GIT_DIR.format(marker=marker) + textwrap.dedent("""\
        printf 'gitdir: ../../evil\\n' > vendor/lib/.git
        echo '* filter=x' > vendor/lib/.gitattributes; touch vendor/lib/calc/ops.py
        echo changed >> calc/ops.py
    """)

    result = run_command(f"set -- evil {real}\n{script}", tree, sandbox=bwrap(), timeout=60,
                         env={"PATH": PATH}, max_output_chars=5000)

    assert result.exit_code == 0, result.output
    assert "calc/ops.py" in git.diff(tree, ws.base)  # the worktree's diff, via `git add --all`
    git.status_entries(tree), git.diff_stats(tree, ws.base)
    git.commit_all(tree, "all", author_name="a", author_email="a@example.com")
    git.reset_clean(tree, ws.base)
    assert not marker.exists()


def test_cras_git_never_runs_inside_a_submodule_that_was_never_checked_out(
    bwrap: MakeBwrap, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bot's mirrors are bare: no submodule is ever checked out. A repository that commits
    a git dir under another name (with a clean filter) and a file `gitdir: ../evil` has its
    command link that file into the gitlink's empty folder (a hard link keeps the checkout's
    owner, which git's ownership check asks for); `git add --all` would run `git status` in
    there, outside the sandbox, and with it the filter."""
    from agent import git
    from agent.workspace import open_workspace

    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    marker = tmp_path / "marker"
    source = make_python_project(tmp_path / "source", bug=False)
    template = make_python_project(tmp_path / "template", bug=False)
    evil = source / "evil"
    for folder in ("objects/info", "refs/heads", "info"):
        (evil / folder).mkdir(parents=True)
        (evil / folder / ".keep").write_text("")
    (evil / "HEAD").write_text("ref: refs/heads/main\n")
    shutil.copyfile(template / ".git" / "index", evil / "index")
    (evil / "config").write_text(f'[core]\n\trepositoryformatversion = 0\n[filter "x"]\n'
                                 f'\tclean = "touch {marker}; cat"\n')
    (evil / "info" / "attributes").write_text("* filter=x\n")
    (source / "gitfile").write_text("gitdir: ../evil\n")
    git_in(source, "add", ".")
    git_in(source, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},lib")
    git_in(source, "commit", "--quiet", "-m", "A submodule nobody checks out")
    mirror = tmp_path / "mirror.git"
    git_in(tmp_path, "clone", "--quiet", "--mirror", str(source), str(mirror))
    ws = open_workspace(mirror, work_dir=tmp_path / "work", run_id="r1", branch_hint="x")
    tree = ws.worktree
    script = ("ln gitfile lib/.git && cp calc/ops.py lib/ && touch -d 2001-01-01 lib/ops.py"
              " && echo changed >> calc/ops.py")

    result = run_command(script, tree, sandbox=bwrap(), timeout=60, env={"PATH": PATH},
                         max_output_chars=5000)  # fmt: skip

    assert result.exit_code == 0, result.output
    assert "calc/ops.py" in git.diff(tree, ws.base)
    git.diff_stats(tree, ws.base)
    git.commit_all(tree, "all", author_name="a", author_email="a@example.com")
    assert not marker.exists()
