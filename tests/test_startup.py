"""What a `cra` start imports (issue 14): `cra --help` none of the libraries, and `cra solve`, by
its first model call, nothing that only a later pass, another command or another database needs.

Module names only, never times: benchmarks/startup.py measures those.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from agent.runlog.store import RunLog
from tests.fakes.model_server import (
    RecordedRequest,
    Reply,
    ScriptedModelServer,
    scripted_config,
)
from tests.fakes.repos import ISOLATED_GIT_ENV, make_python_project

ROOT = Path(__file__).resolve().parent.parent
IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s+(\S+)$", re.MULTILINE)

NOT_FOR_HELP = (
    "agent.cli.commands",
    "agent.config.files",
    "agent.runlog.store",
    "sqlalchemy",
    "pydantic",
    "httpx",
    "importlib.metadata",  # the version is looked up only for --version
)
NOT_BEFORE_THE_FIRST_CALL = (
    "alembic",  # the data dir's database is at the newest migration: no migration to run
    "sqlalchemy.dialects.postgresql",  # the run log is a SQLite file
    "sqlalchemy.orm",  # the run log is written and read with Core statements
    "bot",
    "flask",
    "github",
    "jinja2",
    "yaml",  # cra-bot's
    "agent.bench",
    "agent.cli.render",
    "agent.runlog.details",
    "agent.run.single_pass",
    "agent.run.planning",
    "agent.retrieval.indexing.command",  # other commands' (bench, runs, solve --plan, plan, index)
    "agent.execute.edits.patch",
    "agent.execute.implement",
    "agent.execute.decomposed_adjustment",
    "click",
    "pygments",  # httpx's command-line client, which cra never runs
)  # the edit engine, the implement pass and the adjustment: after the meta-plan's call


def imported(stderr: str) -> set[str]:
    """The modules a `python -X importtime` process imported, from its stderr."""
    return set(IMPORTED.findall(stderr))


def below(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """The modules that are one of `names` or inside one of them."""
    return sorted(m for m in modules if any(m == n or m.startswith(f"{n}.") for n in names))


def test_help_imports_none_of_the_libraries() -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "agent.cli.main", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        timeout=60,
    )
    assert "solve" in done.stdout
    assert below(imported(done.stderr), NOT_FOR_HELP) == []


def test_solve_imports_nothing_a_later_pass_or_other_command_needs_before_its_first_call(
    tmp_path: Path,
) -> None:
    modules = solve_until_the_first_call(tmp_path)
    assert {"agent.run.orchestrator", "agent.execute.plan", "sqlalchemy", "httpx"} <= modules
    assert below(modules, NOT_BEFORE_THE_FIRST_CALL) == []


def solve_until_the_first_call(tmp: Path) -> set[str]:
    """Run `cra solve` and kill it at its first chat request (its preflight's model listing is
    answered outside the script); the modules it had imported by then."""
    repo = make_python_project(tmp / "repo", config=None)
    RunLog.open(f"sqlite:///{tmp / 'data' / 'cra.db'}").close()  # a data dir in use: migrated
    errors = tmp / "stderr.txt"
    running: list[subprocess.Popen[bytes]] = []

    def first_call(_: RecordedRequest) -> Reply:
        running[0].kill()  # it waits for this answer: what it imported so far is written
        return Reply(status=400, error_body="the test stops here")

    with ScriptedModelServer() as server, errors.open("w") as sink:
        server.respond_with(first_call)
        config = tmp / "cra.toml"
        config.write_text(scripted_config(server.url))
        running.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-X",
                    "importtime",
                    "-m",
                    "agent.cli.main",
                    "--data-dir",
                    str(tmp / "data"),
                    "solve",
                    "Add a function",
                    "--repo",
                    str(repo),
                    "--config",
                    str(config),
                    "--sandbox",
                    "none",
                ],
                stdout=subprocess.DEVNULL,
                stderr=sink,
                cwd=ROOT,
                env={**os.environ, **ISOLATED_GIT_ENV},
            )
        )
        running[0].wait(timeout=300)
        chats = server.chat_requests
    text = errors.read_text()
    assert len(chats) == 1, text[-2000:]  # killed at its first call, not ended on its own
    return imported(text)
