"""agent.sandbox.base.Launch: holding on to the sandbox's init from its report, and ending it when
released once the command is over (with a real process standing in for bwrap's init)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agent.sandbox.base import Launch


def _reported(pid: int, tmp_path: Path) -> Launch:
    """A launch whose sandbox reported `pid` as its init, the way bwrap's --info-fd does."""
    read, write = os.pipe()
    os.write(write, b'{\n    "child-pid": %d\n}\n' % pid)
    os.close(write)
    launch = Launch(argv=["true"], env={}, cwd=tmp_path, info_fd=read)
    launch.watch_init(wait=5)
    return launch


def test_release_kills_the_init_and_returns_once_it_has_ended(tmp_path: Path) -> None:
    init = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    launch = _reported(init.pid, tmp_path)
    launch.release(wait=30)
    # it had ended when release returned, not merely been signalled: reaping it does not block
    assert init.poll() == -9


def test_release_without_a_report_has_no_init_to_end(tmp_path: Path) -> None:
    launch = Launch(argv=["true"], env={}, cwd=tmp_path)
    launch.watch_init(wait=0.1)
    launch.release(wait=5)


def test_release_of_an_init_already_gone_is_harmless(tmp_path: Path) -> None:
    init = subprocess.Popen([sys.executable, "-c", "pass"])
    launch = _reported(init.pid, tmp_path)
    init.wait()
    launch.release(wait=30)  # nothing to signal, nothing to wait for
