"""`solve` in the bwrap sandbox: a setup step that installs what the tests need, the cache that
lets the next run of the repository skip it, and a run whose tests fork-bomb."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from ipaddress import IPv4Network
from pathlib import Path

import pytest

from agent.cli.render import render_result
from agent.config.files import parse_config
from agent.llm.client import HTTPChatModel
from agent.llm.router import ModelRouter
from agent.models import OrchestratorResult
from agent.run.orchestrator import solve
from agent.run.runtime import Runtime
from agent.runlog.store import RunLog
from agent.sandbox.base import SandboxLimits, hidden_paths
from agent.sandbox.bwrap import BwrapSandbox
from agent.sandbox.envcache import EnvCache
from tests.e2e.test_solve_orchestrator import adjustment, edit, meta, part, step
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.package_index import PackageIndex, build_wheel
from tests.fakes.repos import MUL_BUG, MUL_FIX, commit_file, make_python_project
from tests.fakes.sandboxes import host_address

pytestmark = pytest.mark.usefixtures("isolated_git")

PY = shlex.quote(sys.executable)
HELPER_TEST = "import helperpkg\n\n\ndef test_helper():\n    assert helperpkg.VALUE == 42\n"
FIX = step("s1", "Fix mul in calc/ops.py", ["calc/ops.py"])


@pytest.fixture
def index(tmp_path: Path) -> Iterator[PackageIndex]:
    (tmp_path / "wheels").mkdir()
    build_wheel(tmp_path / "wheels", "helperpkg", "1.0", {"helperpkg/__init__.py": "VALUE = 42\n"})
    with PackageIndex(tmp_path / "wheels") as served:
        yield served


class World:
    """A buggy calc project whose tests import helperpkg, the run log, models and a sandbox."""

    def __init__(self, tmp: Path, server: ScriptedModelServer, sandbox: BwrapSandbox) -> None:
        self.repo = make_python_project(tmp / "repo", bug=True, config=None)
        commit_file(self.repo, "tests/test_helper.py", HELPER_TEST, "Test the helper package")
        commit_file(self.repo, "requirements.txt", "helperpkg==1.0\n", "Require helperpkg")
        self.server, self.work = server, tmp / "data"
        self.log = RunLog.open(f"sqlite:///{tmp / 'cra.db'}")
        self.sandbox = sandbox
        self.cache = EnvCache(self.work / "envcache", max_bytes=1 << 30)

    def solve(self, testing: dict[str, object]) -> OrchestratorResult:
        self.server.script("meta_plan", meta(("p1", "Fix mul", ["calc/ops.py"])))
        self.server.script("part_plan", part("p1", FIX))
        self.server.script("implement", edit("calc/ops.py", MUL_BUG, MUL_FIX))
        self.server.script("adjustment", adjustment())
        models = {
            role: {"base_url": self.server.url, "model": role, "max_retries": 0}
            for role in ("reasoning", "coding", "classifier")
        }
        config = parse_config({"models": models, "testing": testing, "retrieval": {"stages": []}})
        router = ModelRouter(config.models, factory=HTTPChatModel)
        runtime = Runtime(
            log=self.log,
            models=router,
            environ=dict(os.environ),
            work_dir=self.work,
            sandbox=self.sandbox,
            env_cache=self.cache,
        )
        try:
            return solve("Fix the failing test_mul", self.repo, config, runtime)
        finally:
            router.close()


@pytest.fixture
def world(tmp_path: Path, bwrap: Callable[..., BwrapSandbox]) -> Iterator[World]:
    with ScriptedModelServer() as server:
        # the package index listens on the host's address: the operator's private mirror
        sandbox = bwrap(
            hide=hidden_paths(data=[tmp_path / "data"], home=None),
            allow_addresses=[IPv4Network(host_address())],
        )
        w = World(tmp_path, server, sandbox)
        yield w
        w.log.close()


def setup_testing(index: PackageIndex) -> dict[str, object]:
    return {
        "setup_command": (
            f"{PY} -m pip install --quiet --disable-pip-version-check "
            f'{index.pip_args} --target "$CRA_ENV/site" helperpkg'
        ),
        "test_command": f'PYTHONPATH="$CRA_ENV/site" {PY} -m pytest -q -p no:cacheprovider',
    }


def test_the_setup_step_installs_a_missing_package_and_the_next_run_reuses_it(
    world: World, index: PackageIndex
) -> None:
    first = world.solve(setup_testing(index))
    assert first.status == "complete", first.error
    assert first.environment is not None and first.environment.setup == "ran"
    assert first.baseline is not None and "test_helper" not in str(first.baseline.failing_tests)

    second = world.solve(setup_testing(index))
    assert second.status == "complete", second.error
    assert second.environment is not None and second.environment.setup == "cached"
    assert index.downloads == ["helperpkg-1.0-py3-none-any.whl"]  # the install ran once

    run = world.log.get_orchestrator_run(second.task_id)
    assert run is not None
    baseline = world.log.get_task_run(run.passes[0].task_run_id)
    assert baseline is not None and [v.result.success for v in baseline.setup] == [True]
    assert "restored from the environment cache" in (baseline.setup[0].result.test_output or "")
    assert world.log.get_state(second.task_id, "environment")["setup"] == "cached"


def test_without_a_setup_step_the_tests_that_need_the_package_fail(world: World) -> None:
    result = world.solve({"test_command": f"{PY} -m pytest -q -p no:cacheprovider"})
    assert result.baseline is not None and not result.baseline.success
    assert "No module named 'helperpkg'" in (result.baseline.test_output or "")


def test_a_failing_setup_stops_the_run_before_any_model_call(world: World) -> None:
    result = world.solve({"setup_command": "echo no index here; exit 3", "test_command": "true"})
    assert result.status == "failed"
    assert "the setup step (echo no index here; exit 3)" in (result.error or "")
    assert result.environment is not None and result.environment.setup == "failed"
    assert world.server.requests == []


def test_a_failing_setup_says_how_it_ended_and_what_it_printed_last(world: World) -> None:
    command = "echo resolving deps; echo 'npm ERR! could not reach git.example' >&2; exit 3"
    result = world.solve({"setup_command": command, "test_command": "true"})
    assert result.error == (
        f"the setup step ({command}) exited with status 3: npm ERR! could not reach git.example"
    )
    shown = render_result(result)
    assert "setup failed: the setup step" in shown
    assert "    resolving deps\n    npm ERR! could not reach git.example" in shown


def test_a_fork_bomb_in_the_tests_is_stopped_and_the_next_run_goes_on(world: World) -> None:
    world.sandbox = replace(world.sandbox, limits=SandboxLimits(processes=64))
    bomb = f"{PY} -c 'import os\nwhile True: os.fork()'"
    bombed = world.solve({"test_command": bomb, "timeout": 60})
    assert bombed.status == "failed"
    assert bombed.baseline is not None
    assert "the sandbox's process limit (64 processes)" in (bombed.baseline.test_output or "")

    assert world.server.pending() == 0
    after = world.solve(
        {"test_command": f"{PY} -m pytest -q -p no:cacheprovider tests/test_ops.py"}
    )
    assert after.status == "complete", after.error
