"""What a sandboxed command is set to reach, as fixtures and helpers: the bot's files laid out as
the bot lays them out, services on the host, and routes to addresses."""

from __future__ import annotations

import os
import shlex
import socket
import sqlite3
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.config.files import TestingConfig
from agent.sandbox.bwrap import BwrapSandbox
from agent.sandbox.commands import run_command
from tests.fakes.repos import git_in, make_python_project
from tests.fakes.sandboxes import host_address, slirp_installed

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
        return [
            self.key,
            self.database,
            self.mirror / "hooks" / "pre-commit.sample",
            self.mirror / "description",
            self.other_mirror / "HEAD",
            self.other_worktree / "calc" / "ops.py",
            self.data / "cra.db",
        ]


PROBE_TESTS = """
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
"""


def probe_testing(files: BotFiles) -> TestingConfig:
    (files.worktree / "tests" / "test_probe.py").write_text(PROBE_TESTS)
    os.environ["PROBE_HIDDEN"] = os.pathsep.join(map(str, files.hidden()))
    os.environ["PROBE_VISIBLE"] = str(files.visible)
    return TestingConfig(
        test_command=f"{PY} -m pytest -q -p no:cacheprovider tests", env=["PROBE_*"]
    )


def connect_command(host: str, port: int) -> str:
    code = (
        f"import socket; socket.create_connection(({host!r}, {port}), timeout=5); "
        "print('connected')"
    )
    return f"{PY} -c {code!r}"


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
    result = run_command(
        f"{PY} -c {shlex.quote(ROUTED)} {shlex.join(hosts)}",
        tmp_path,
        sandbox=sandbox,
        timeout=30,
        env={"PATH": PATH},
        max_output_chars=5000,
        network=True,
    )
    assert result.exit_code == 0, result.output
    return dict(line.split(" ", 1) for line in result.output.splitlines())


def needs_slirp() -> None:
    if not slirp_installed():
        pytest.skip(
            "slirp4netns is not installed: a command with the network shares the "
            "host's; .ci/run installs it"
        )


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
        git_in(
            mirror, "worktree", "add", "--quiet", "-b", f"cra/{name}", str(worktrees / name), "HEAD"
        )
    database = data / "cra.db"
    with sqlite3.connect(database) as db:
        db.execute("create table runs (token text)")
    key = visible_dir / "keys" / "app.pem"
    key.parent.mkdir()
    key.write_text("-----BEGIN RSA PRIVATE KEY-----\n")
    visible = visible_dir / "visible.txt"
    visible.write_text("visible")
    return BotFiles(
        data, key, database, mirror, other, worktrees / "run-a", worktrees / "run-b", visible
    )


@pytest.fixture
def probe_env() -> Iterator[None]:
    yield
    for name in ("PROBE_HIDDEN", "PROBE_VISIBLE"):
        os.environ.pop(name, None)


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
