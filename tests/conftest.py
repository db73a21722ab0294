"""Shared fixtures: no user config file, the real PostgreSQL and Redis services when CI names
them, real bwrap."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from ipaddress import IPv4Network
from pathlib import Path

import pytest

from agent.sandbox.base import SandboxLimits
from agent.sandbox.bwrap import BwrapSandbox, build_sandbox
from tests.fakes.repos import ISOLATED_GIT_ENV
from tests.fakes.sandboxes import bwrap_installed

# bot_files, probe_env, listener, world_listener: what the sandbox tests set commands to reach
pytest_plugins = ["tests.fakes.probes"]


def _service_url(var: str, what: str) -> str:
    url = os.environ.get(var)
    if not url:
        pytest.skip(f"{what} tests need {var} (set by .ci/run); skipped locally")
    return url


@pytest.fixture(scope="session")
def empty_config_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An XDG config home holding no cra/config.toml."""
    return tmp_path_factory.mktemp("config-home")


@pytest.fixture(autouse=True)
def no_user_config(monkeypatch: pytest.MonkeyPatch, empty_config_home: Path) -> None:
    """cra reads no config file of the person running the tests (their models, whom they trust):
    `cra` in-process and the programs the tests start see an empty config home."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(empty_config_home))


@pytest.fixture
def isolated_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """git ignores the user's and the system's config for the test (a module opts in with
    `pytestmark = pytest.mark.usefixtures("isolated_git")`)."""
    for key, value in ISOLATED_GIT_ENV.items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def postgres_url() -> str:
    """The PostgreSQL URL from CRA_TEST_POSTGRES_URL; skipped when unset, never when set."""
    return _service_url("CRA_TEST_POSTGRES_URL", "PostgreSQL")


@pytest.fixture
def redis_url() -> str:
    """The Redis URL from CRA_TEST_REDIS_URL; skipped when unset, never when set."""
    return _service_url("CRA_TEST_REDIS_URL", "Redis")


@pytest.fixture
def bwrap() -> Callable[..., BwrapSandbox]:
    """A factory of real bwrap sandboxes; skipped without bubblewrap, failed under CI=true."""
    if not bwrap_installed():
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")

    def make(
        hide: Sequence[Path] = (),
        limits: SandboxLimits | None = None,
        allow_addresses: Sequence[IPv4Network] = (),
    ) -> BwrapSandbox:
        sandbox = build_sandbox("bwrap", hide=hide, limits=limits, allow_addresses=allow_addresses)
        assert isinstance(sandbox, BwrapSandbox)
        return sandbox

    return make


@pytest.fixture
def visible_dir() -> Iterator[Path]:
    """A fresh directory outside /tmp (which a sandbox replaces), so a sandbox would see it
    unless told to hide it; world-traversable, for tests that drop to another user."""
    parent = Path(__file__).resolve().parents[1] / ".pytest_cache" / "cra-sandbox"
    parent.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(dir=parent))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)
