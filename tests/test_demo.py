"""`make demo` end to end: examples/demo.py as a process, with its fakes and `cra-bot serve`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.fakes.sandboxes import test_sandbox_kind

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "demo.py"

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux's /proc"),
]


def demo_env(tmp: Path) -> dict[str, str]:
    """Our environment without CRA_* settings; TMPDIR marks every process the demo starts."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRA_")}
    return {
        **env,
        "TMPDIR": str(tmp),
        "PYTHONDONTWRITEBYTECODE": "1",
        "CRA_SANDBOX": test_sandbox_kind(),
    }


def processes_marked(tmp: Path) -> list[str]:
    """Command lines of the processes whose TMPDIR is `tmp` or under it (the demo's)."""
    mark = f"TMPDIR={tmp}".encode()
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if any(var == mark or var.startswith(mark + b"/") for var in environ):
            found.append(f"{entry.name}: {cmdline}")
    return found


def test_demo_turns_the_sample_issue_into_a_pull_request(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(DEMO), "--no-wait"],
        env=demo_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=55,
        check=False,
    )

    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "LOCAL STAND-IN" in out and "scripted answers from examples/answers.json" in out
    assert "/Codertocat/pager/pull/" in out
    assert "Fixes #1" in out and "### Plan" in out and "Round page\\_count up" in out
    assert "page\\_count now rounds up" in out  # the adjustment's rationale
    # the issue names no failing test: the reproduction written first is the gate and evidence
    repro = "tests/test_core.py::test_the_last_partial_page_holds_the_rest"
    assert "### Reproduction" in out and f"`{repro}`" in out
    assert "**Fails on the base commit:**" in out and "assert 2 == 3" in out
    assert "**Passes here:**" in out
    assert f"Newly passing (1): `{repro}`" in out
    assert "```diff" in out and "+    return (total + per_page - 1) // per_page" in out
    assert "2/2 steps · succeeded" in out
    if test_sandbox_kind() == "bwrap":  # always in CI
        assert (
            "  sandbox repository commands run in the bwrap sandbox;" in out
            and "the data directory is hidden" in out
        )
        assert "Commands ran in the `bwrap` sandbox." in out
    else:
        assert "The tests ran unsandboxed" in out
    run_pages = [line for line in out.splitlines() if line.startswith("Run page: http://")]
    assert len(run_pages) == 1 and run_pages[0].endswith("/runs/1")
    assert "Still serving" not in out  # --no-wait
    assert processes_marked(tmp_path) == []
    # Its temporary directory is gone; what it kept to look at is in the output directory.
    output = tmp_path / "cra-demo-output"
    assert list(tmp_path.iterdir()) == [output]
    assert sorted(p.name for p in output.iterdir()) == ["pull-2.md", "run-1.html"]
    assert "Round page\\_count up" in (output / "pull-2.md").read_text()
    kept = (output / "run-1.html").read_text()
    assert "page_count" in kept and "<style>" in kept  # it opens from disk, styled
    assert 'rel="stylesheet"' not in kept
    assert f"Kept for after the demo: {output / 'pull-2.md'}" in out


def test_the_demo_serves_the_run_page_and_the_pull_request_until_ctrl_c(tmp_path: Path) -> None:
    argv = [sys.executable, str(DEMO), "--output", str(tmp_path / "out")]
    with subprocess.Popen(
        argv,
        env=demo_env(tmp_path),
        cwd=tmp_path,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    ) as demo:
        assert demo.stdout is not None
        seen = []
        for line in demo.stdout:
            seen.append(line)
            if line.strip().startswith("pull request  http://"):
                break
        urls = [
            line.split()[2]
            for line in seen
            if line.strip().startswith(("run page  ", "pull request  "))
        ]
        pages = [httpx.get(url, timeout=10.0) for url in urls]
        demo.send_signal(signal.SIGINT)
        rest, _ = demo.communicate(timeout=40)

    out = "".join(seen) + rest
    assert [p.status_code for p in pages] == [200, 200], out
    assert "page_count" in pages[0].text  # the run page: the plan, the diff
    assert "Round page\\_count up" in pages[1].text and "+    return (total" in pages[1].text
    assert demo.returncode == 0, out
    assert processes_marked(tmp_path) == []


def test_ctrl_c_mid_run_stops_every_process_the_demo_started(tmp_path: Path) -> None:
    argv = [sys.executable, str(DEMO), "--pace", "2"]
    with subprocess.Popen(
        argv,
        env=demo_env(tmp_path),
        cwd=tmp_path,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    ) as demo:
        assert demo.stdout is not None
        seen = []
        for line in demo.stdout:
            seen.append(line)
            if line.startswith("Delivered a signed issues.labeled webhook"):
                break
        started = processes_marked(tmp_path)
        demo.send_signal(signal.SIGINT)
        rest, _ = demo.communicate(timeout=40)

    out = "".join(seen) + rest
    assert any("cra-bot serve" in p for p in started), started
    assert any("fake_services.py" in p for p in started), started
    assert demo.returncode == 130, out
    assert "interrupted" in out
    assert processes_marked(tmp_path) == []
    assert list(tmp_path.iterdir()) == []
