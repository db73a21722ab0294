"""Which sandbox a test runs repository commands in: the real bwrap wherever it is installed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agent.sandbox import SandboxKind


def bwrap_installed() -> bool:
    """True when bubblewrap is on PATH; a failed test under CI=true when it is not."""
    if shutil.which("bwrap") is not None:
        return True
    if os.environ.get("CI") == "true":
        pytest.fail("bubblewrap is required in CI: .ci/run installs it")
    return False


def test_sandbox_kind() -> SandboxKind:
    """bwrap when installed (always in CI), else none: the flow tests run either way."""
    return "bwrap" if bwrap_installed() else "none"


test_sandbox_kind.__test__ = False  # type: ignore[attr-defined]


def processes_with(marker: str) -> list[int]:
    """This machine's live processes whose command line (its arguments joined by spaces, as ps
    shows it) holds `marker`: "sleep 417.25" finds the sleep itself."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes().replace(
                    b"\0", b" ").decode(errors="replace"):  # fmt: skip
                found.append(int(entry.name))
        except OSError:
            continue
    return found
