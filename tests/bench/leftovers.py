"""Checkouts made by another process, as a mine or bench makes them (agent.bench.trees): one
whose process was killed inside it, and one whose process is alive until the test lets it end."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.fakes.repos import git_env

# Checks `HEAD` out under the work dir, makes a test run's environment folder for it, prints
# the checkout's path; then is killed there (`kill`), or waits for its stdin to close.
_CHILD = """
import os, signal, sys
from pathlib import Path
from agent.bench.trees import checkout, env_dir

repo, work_dir, how = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
with checkout(repo, "HEAD", work_dir) as tree:
    env = env_dir(work_dir, tree)
    env.mkdir(parents=True)
    print(tree, flush=True)
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    sys.stdin.read()
    env.rmdir()  # as the test run's environment is closed
"""


def killed_checkout(repo: Path, work_dir: Path) -> Path:
    """The checkout a process killed inside it left under `work_dir` (its process is gone)."""
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(repo), str(work_dir), "kill"],
        env=git_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == -9, proc.stderr
    return Path(proc.stdout.strip())


@contextmanager
def live_checkout(repo: Path, work_dir: Path) -> Iterator[Path]:
    """A checkout under `work_dir` whose process runs until the block ends."""
    with subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(repo), str(work_dir), "wait"],
        env=git_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            yield Path(proc.stdout.readline().strip())
        finally:
            proc.stdin.close()  # it leaves its checkout as a mine does, removing it
            assert proc.wait(timeout=60) == 0
