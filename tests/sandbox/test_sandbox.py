"""agent.sandbox.base and agent.sandbox.bwrap through the real bwrap: what a repository's commands
can reach
and do. (What they must not reach, attack by attack, is in tests/hostile/.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

import pytest

from agent.config.files import TestingConfig
from agent.gate.validation import run_validation
from agent.git.workspace import scratch_tree
from agent.sandbox import netblock
from agent.sandbox.base import (
    ENV_MOUNT,
    TREE_MOUNT,
    NoSandbox,
    SandboxLimits,
    SandboxUnavailable,
    hidden_paths,
    limit_note,
)
from agent.sandbox.bwrap import build_sandbox
from agent.sandbox.commands import run_command
from agent.sandbox.slirp import Slirp
from tests.fakes.probes import (
    PATH,
    PY,
    BotFiles,
    MakeBwrap,
    connect_command,
    needs_slirp,
    routes_to,
)
from tests.fakes.repos import commit_file, git_in, make_python_project
from tests.fakes.sandboxes import slirp_installed

# --- network -------------------------------------------------------------------------------------


def test_a_command_allowed_the_network_still_has_a_route_to_public_addresses(
    bwrap: MakeBwrap, tmp_path: Path
) -> None:
    """The internet stays within reach, checked at the level of the routes: nothing is sent."""
    needs_slirp()
    public = ("1.1.1.1", "140.82.112.3", "151.101.0.223", "172.15.255.1", "192.169.0.1")
    assert routes_to(bwrap(), tmp_path, *public) == dict.fromkeys(public, "routed")


def test_an_allowed_address_is_opened_and_nothing_else(
    bwrap: MakeBwrap, world_listener: tuple[str, int], tmp_path: Path
) -> None:
    """A private package mirror: the operator opens its address (here the host's own, where the
    listener is, and one inside 10.0.0.0/8); the rest stays closed."""
    needs_slirp()
    host, port = world_listener
    sandbox = bwrap(allow_addresses=[IPv4Network(host), IPv4Network("10.1.2.3")])
    result = run_command(
        connect_command(host, port),
        tmp_path,
        sandbox=sandbox,
        timeout=30,
        env={"PATH": PATH},
        max_output_chars=5000,
        network=True,
    )
    assert result.output == "connected\n"
    assert routes_to(sandbox, tmp_path, "10.1.2.3", "10.1.2.4", "192.168.1.1") == {
        "10.1.2.3": "routed",
        "10.1.2.4": "No route to host",
        "192.168.1.1": "No route to host",
    }


def test_a_namespace_that_cannot_be_joined_is_said() -> None:
    with open(os.devnull) as null:
        said = netblock.block(
            null.fileno(),
            None,
            netblock.Routes(netblock.METADATA),
            gateway=IPv4Address("10.0.2.2"),
            interface="tap0",
        )
    assert said is not None and said.startswith("joining the namespace: "), said


def test_a_network_that_cannot_be_connected_is_reported_and_the_command_never_runs(
    bwrap: MakeBwrap, tmp_path: Path
) -> None:
    sandbox = bwrap()
    broken = replace(sandbox, tools=replace(sandbox.tools, slirp4netns=shutil.which("false")))
    result = run_command(
        "echo ran",
        tmp_path,
        sandbox=broken,
        timeout=30,
        env={"PATH": PATH},
        max_output_chars=5000,
        network=True,
    )
    assert result.exit_code != 0 and "ran" not in result.output.split()
    assert result.output.startswith(
        "[cra] the command did not run: slirp4netns did not connect the sandbox's network"
    ), result.output
    assert "exited with status 1" in result.output


def test_a_slirp4netns_that_cannot_open_the_tun_device_says_how_to_give_it_one(
    bwrap: MakeBwrap, tmp_path: Path
) -> None:
    """A container's /dev may lack /dev/net/tun, or have it root-only: a non-root worker's
    slirp4netns cannot open it."""
    fake = tmp_path / "slirp4netns"
    fake.write_text("#!/bin/sh\necho 'open(\"/dev/net/tun\"): Permission denied' >&2; exit 1\n")
    fake.chmod(0o755)
    sandbox = bwrap()
    broken = replace(sandbox, tools=replace(sandbox.tools, slirp4netns=str(fake)))
    result = run_command(
        "echo ran",
        tmp_path,
        sandbox=broken,
        timeout=30,
        env={"PATH": PATH},
        max_output_chars=5000,
        network=True,
    )
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
        return [
            run_command(
                "echo ok",
                tmp_path,
                sandbox=sandbox,
                timeout=30,
                network=True,
                env={"PATH": PATH},
                max_output_chars=2000,
            ).output
            for _ in range(20)
        ]

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
    result = run_command(
        "cat /etc/resolv.conf",
        tmp_path,
        sandbox=bwrap(),
        timeout=30,
        env={"PATH": PATH},
        max_output_chars=5000,
        network=True,
    )
    assert result.output == "nameserver 10.0.2.3\n"


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
    result = run_command(
        script, tmp_path, sandbox=bwrap(), timeout=30, env={"PATH": PATH}, max_output_chars=5000
    )
    assert result.exit_code == 1  # the last test fails: the host's /tmp is not there
    assert result.output == f"{TREE_MOUNT}\n"
    assert (tmp_path / "made.txt").read_text() == "made\n"


def test_a_subdirectory_cwd_runs_there_in_the_tree(bwrap: MakeBwrap, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    result = run_command(
        "pwd",
        tmp_path / "src",
        tree=tmp_path,
        sandbox=bwrap(),
        timeout=30,
        env={"PATH": PATH},
        max_output_chars=5000,
    )
    assert result.output == f"{TREE_MOUNT}/src\n"


def test_a_caller_can_name_paths_as_the_command_sees_them(bwrap: MakeBwrap, tmp_path: Path) -> None:
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
    sandbox = replace(
        bwrap(
            hide=hidden_paths(data=bot_files.hide(), home=None), limits=SandboxLimits(processes=32)
        ),
        as_root=False,
    )
    script = (
        f"cat {bot_files.key} {bot_files.database}; git log -1 --format=%s; id -u; "
        "echo ok > written; for i in $(seq 64); do sleep 5 & done; echo all-started"
    )
    launch = sandbox.launch(
        script, tree=bot_files.worktree, cwd=bot_files.worktree, env={"PATH": PATH}, network=False
    )
    proc = subprocess.run(
        ["setpriv", f"--reuid={nobody}", f"--regid={nobody}", "--clear-groups", "--", *launch.argv],
        env=launch.env,
        cwd=launch.cwd,
        pass_fds=launch.pass_fds,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
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
    result = run_command(
        "pwd", tmp_path, sandbox=NoSandbox(), timeout=30, env={"PATH": PATH}, max_output_chars=5000
    )
    assert result.output == f"{tmp_path}\n"


@pytest.mark.parametrize(
    ("code", "output", "expected"),
    [
        (0, "Cannot fork", None),
        (1, "nothing special", None),
        (128 + 24, "", "CPU-time limit (900 s per process)"),
        (128 + 25, "", "file-size limit (4096 MB per file)"),
        (2, "sh: Cannot fork", "process limit (512 processes)"),
        (1, "MemoryError", "memory limit (2048 MB per process)"),
        (137, "", "memory limit"),
    ],
)
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
        "import helper\n\n\ndef test_helper():\n    assert helper.VALUE == 42\n"
    )
    testing = TestingConfig(
        test_command=f"PYTHONPATH=vendored {PY} -m pytest -q -p no:cacheprovider"
    )
    with scratch_tree(worktree, {}, parent=tmp_path / "scratch") as scratch:
        assert (scratch / "vendored").is_symlink()
        alone = run_validation(scratch, testing, environ=dict(os.environ), sandbox=bwrap())
        linked = run_validation(
            scratch, testing, environ=dict(os.environ), sandbox=bwrap(), read_only=[worktree]
        )
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

    result = run_command(
        "git log -1 --format=%s",
        tree,
        sandbox=bwrap(),
        timeout=60,
        env={"PATH": PATH},
        max_output_chars=2000,
    )

    assert result.exit_code == 0, result.output
