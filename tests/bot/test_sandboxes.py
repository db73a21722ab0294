"""bot.sandboxes: the bot's sandbox from its settings, failing closed, proven at start-up."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from agent.doctor.checks import check_sandbox as doctor_sandbox
from agent.sandbox import netblock
from agent.sandbox.base import NoSandbox, SandboxLimits
from agent.sandbox.bwrap import BwrapSandbox
from agent.sandbox.check import OWN_NETWORK, SHARED_NETWORK
from bot.cli.main import main
from bot.errors import SettingsError
from bot.sandboxes import build_bot_sandbox, build_env_cache, check_sandbox
from bot.settings import BotSettings
from tests.fakes.sandboxes import fence_closing, host_address, slirp_installed

MakeBwrap = Callable[..., BwrapSandbox]


def settings(tmp_path: Path, **values: object) -> BotSettings:
    return BotSettings(data_dir=tmp_path / "data", **values)  # type: ignore[arg-type]


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A PATH without bubblewrap (nor anything else)."""
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


def test_without_bubblewrap_the_bot_fails_closed_saying_how_to_fix_it(
    tmp_path: Path, no_bwrap: None
) -> None:
    with pytest.raises(SettingsError) as caught:
        build_bot_sandbox(settings(tmp_path), {"HOME": str(tmp_path)})
    assert "apt-get install bubblewrap" in str(caught.value)
    assert "CRA_SANDBOX=none" in str(caught.value)


@pytest.mark.parametrize("argv", [["serve"], ["worker", "--burst"]])
def test_serve_and_worker_refuse_to_start_without_a_working_sandbox(
    argv: list[str],
    tmp_path: Path,
    no_bwrap: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in {
        "CRA_DATA_DIR": str(tmp_path / "data"),
        "CRA_WEBHOOK_SECRET": "s3cret",
        "CRA_QUEUE": "rq" if argv[0] == "worker" else "thread",
        "CRA_REDIS_URL": "redis://127.0.0.1:1/0",
    }.items():
        monkeypatch.setenv(name, value)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "cra-bot: bubblewrap (bwrap) is not installed" in err
    assert not (tmp_path / "data" / "cra.db").exists()  # nothing was started


def test_none_is_the_operators_explicit_choice(tmp_path: Path, no_bwrap: None) -> None:
    chosen = build_bot_sandbox(settings(tmp_path, sandbox="none"), {})
    assert isinstance(chosen, NoSandbox)
    facts = check_sandbox(settings(tmp_path, sandbox="none"), chosen)
    assert facts == ["repository commands run UNSANDBOXED (sandbox none: chosen explicitly)"]


def test_an_unknown_sandbox_is_a_settings_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRA_SANDBOX", "docker")
    with pytest.raises(ValueError, match="sandbox"):
        BotSettings()


def test_the_self_check_proves_what_the_sandbox_confines(
    visible_dir: Path, bwrap: MakeBwrap
) -> None:
    config = settings(visible_dir)  # outside /tmp: only hiding keeps the canary out of view
    facts = check_sandbox(config, build_bot_sandbox(config, {"HOME": str(visible_dir)}))
    assert facts[1:6] == [
        "the worktree is writable",
        "the system is read-only",
        "own PID namespace",
        "no network",
        "the data directory is hidden",
    ]
    assert facts[0].startswith("repository commands run in the bwrap sandbox;")
    assert facts[6:] == [OWN_NETWORK if slirp_installed() else SHARED_NETWORK]


def test_without_slirp4netns_the_shared_network_is_said_and_the_doctor_warns(
    tmp_path: Path, bwrap: MakeBwrap
) -> None:
    sandbox = bwrap()
    shared = replace(sandbox, tools=replace(sandbox.tools, slirp4netns=None))
    findings = list(doctor_sandbox(lambda: shared, tmp_path / "work", "CRA_SANDBOX"))
    assert [f.status for f in findings] == ["ok", "warn"]
    assert "shares this machine's, loopback included" in findings[1].detail
    assert "CRA_SANDBOX_NETWORK=false" in (findings[1].fix or "")
    closed = replace(shared, allow_network=False)  # nothing gets the network: nothing to say
    assert [f.status for f in doctor_sandbox(lambda: closed, tmp_path / "w2", "CRA_SANDBOX")] == [
        "ok"
    ]


def test_the_self_check_refuses_a_network_that_reaches_the_clouds_metadata(
    visible_dir: Path, bwrap: MakeBwrap
) -> None:
    if not slirp_installed():
        pytest.skip("slirp4netns is not installed; .ci/run installs it")
    config = settings(visible_dir)
    sandbox = build_bot_sandbox(config, {"HOME": str(visible_dir)})
    assert isinstance(sandbox, BwrapSandbox)
    with pytest.raises(SettingsError, match=r"reaches .*169\.254\.169\.254"):
        check_sandbox(config, replace(sandbox, fence=fence_closing()))  # connected, no route


def test_the_self_check_refuses_a_network_that_reaches_this_machines_address(
    visible_dir: Path, bwrap: MakeBwrap
) -> None:
    """A sandbox closing only the metadata addresses (as it did before) lets the setup step
    reach a listener on this machine's network address, and the private ranges."""
    if not slirp_installed():
        pytest.skip("slirp4netns is not installed; .ci/run installs it")
    config = settings(visible_dir)
    sandbox = build_bot_sandbox(config, {"HOME": str(visible_dir)})
    assert isinstance(sandbox, BwrapSandbox)
    metadata_only = replace(sandbox, fence=fence_closing(*map(str, netblock.METADATA)))
    with pytest.raises(SettingsError) as caught:
        check_sandbox(config, metadata_only)
    said = str(caught.value)
    assert said.startswith(
        f"a command given the network reaches {host_address()}, "
        "10.255.255.254, 172.31.255.254, 192.168.255.254, 100.127.255.254 "
    )
    assert "169.254" not in said and "CRA_SANDBOX_NETWORK=false" in said


def test_the_self_check_says_what_the_operator_opened(
    visible_dir: Path, bwrap: MakeBwrap, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not slirp_installed():
        pytest.skip("slirp4netns is not installed; .ci/run installs it")
    monkeypatch.setenv("CRA_SANDBOX_ALLOW_ADDRESSES", f"10.1.2.3,{host_address()}")
    config = BotSettings(data_dir=visible_dir / "data")
    facts = check_sandbox(config, build_bot_sandbox(config, {"HOME": str(visible_dir)}))
    assert facts[-1] == f"{OWN_NETWORK}; the operator opened 10.1.2.3/32, {host_address()}/32"


@pytest.mark.parametrize("value", ["169.254.169.254", "fd00::1", "10.0.0.1/8"])
def test_an_address_that_cannot_be_opened_is_a_settings_error(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRA_SANDBOX_ALLOW_ADDRESSES", value)
    with pytest.raises(ValueError, match="sandbox_allow_addresses"):
        BotSettings()


def test_the_self_check_refuses_a_sandbox_that_shows_the_data_directory(
    visible_dir: Path, bwrap: MakeBwrap
) -> None:
    with pytest.raises(SettingsError, match=r"runs but does not confine: .*sandbox-canary"):
        check_sandbox(settings(visible_dir), bwrap(hide=()))


def test_the_sandbox_hides_the_data_dir_key_database_env_file_and_extra_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / "bot.env"
    env_file.write_text("CRA_WEBHOOK_SECRET=x\n")
    monkeypatch.setenv("CRA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CRA_PRIVATE_KEY_PATH", "/etc/cra/app.pem")
    monkeypatch.setenv("CRA_DATABASE_URL", "sqlite:////srv/cra/cra.db")
    monkeypatch.setenv("CRA_SANDBOX_HIDE", "/srv/secrets, /opt/keys")
    hidden = BotSettings.load(env_file).sandbox_hidden(Path("/home/bot"))
    for path in (
        tmp_path / "data",
        "/etc/cra/app.pem",
        "/srv/cra/cra.db",
        env_file,
        "/srv/secrets",
        "/opt/keys",
        "/home/bot/.ssh",
        "/home/bot/.netrc",
    ):
        assert Path(path) in hidden, path


def test_limits_network_and_cache_come_from_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "CRA_SANDBOX_MEMORY_MB": "512",
        "CRA_SANDBOX_PROCESSES": "64",
        "CRA_SANDBOX_CPU_SECONDS": "30",
        "CRA_SANDBOX_FILE_SIZE_MB": "10",
        "CRA_SANDBOX_TMP_MB": "20",
        "CRA_ENV_CACHE_MB": "0",
    }.items():
        monkeypatch.setenv(name, value)
    config = BotSettings(data_dir=tmp_path)
    assert config.sandbox_limits() == SandboxLimits(
        memory_mb=512, processes=64, cpu_seconds=30, file_size_mb=10, tmp_mb=20
    )
    assert build_env_cache(config) is None
    monkeypatch.setenv("CRA_ENV_CACHE_MB", "100")
    cache = build_env_cache(BotSettings(data_dir=tmp_path))
    assert cache is not None and cache.max_bytes == 100 << 20


def test_without_network_allowed_no_command_gets_it(tmp_path: Path, bwrap: MakeBwrap) -> None:
    config = settings(tmp_path, sandbox_network=False)
    sandbox = build_bot_sandbox(config, {})
    assert isinstance(sandbox, BwrapSandbox)
    launch = sandbox.launch("true", tree=tmp_path, cwd=tmp_path, env={}, network=True)
    launch.close()
    assert "--unshare-net" in launch.argv
