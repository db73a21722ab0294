"""A clean install: the wheel builds without a warning of ours, ships its templates and
migrations, and `cra` / `cra-bot` run from a fresh virtualenv that holds only the wheel.

Offline: the wheel is built with this environment's setuptools (--no-build-isolation), and the
fresh virtualenv borrows the dependencies from this one through a path file — never the
checkout, whose packages the wheel's copies must replace.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.console import version
from tests.e2e.first_hour import clean_env, models_toml
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.repos import TEST_COMMAND, make_python_project

ROOT = Path(__file__).resolve().parent.parent
OUR_WARNINGS = (
    "SetuptoolsDeprecationWarning",
    "BuildBackendWarning",
    "is absent from the",
    "license",
    "deprecated",
)

pytestmark = pytest.mark.timeout(300)


def checkout_copy(target: Path) -> Path:
    """The files of this checkout (tracked and new, not ignored), copied: builds write beside."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            (target / name).write_bytes(source.read_bytes())
    return target


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """The wheel built from a copy of the checkout, and what the build printed."""
    tmp = tmp_path_factory.mktemp("install")
    source = checkout_copy(tmp / "src")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-w",
            str(tmp / "dist"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [wheel] = (tmp / "dist").glob("clean_room_agent-*.whl")
    yield wheel, done.stdout + done.stderr


@pytest.fixture(scope="module")
def fresh(built: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtualenv with the wheel installed; dependencies borrowed from this one."""
    venv = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    python = venv / "bin" / "python"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            str(built[0]),
        ],
        check=True,
        timeout=120,
        capture_output=True,
    )
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "borrowed-dependencies.pth").write_text(sysconfig.get_paths()["purelib"])
    return venv


def test_the_build_prints_no_warning_of_ours(built: tuple[Path, str]) -> None:
    _, output = built
    ours = [line for line in output.splitlines() if any(w in line for w in OUR_WARNINGS)]
    assert ours == [], "\n".join(ours)


def test_the_wheel_ships_the_templates_and_the_migrations(built: tuple[Path, str]) -> None:
    names = set(zipfile.ZipFile(built[0]).namelist())
    for shipped in (
        "bot/templates/run_page.html",
        "bot/templates/runs_list.html",
        "agent/_migrations/env.py",
        "agent/_migrations/script.py.mako",
        "agent/_migrations/versions/0001_run_log.py",
        "agent/py.typed",
        "bot/py.typed",
        "bot/templates/bench_page.html",
        "agent/bench/report/report.schema.json",
        "agent/bench/report/templates/report_page.html",
        "agent/bench/report/templates/report_body.html",
        "agent/bench/report/templates/report.css",
        "bot/static/cra.css",
    ):
        assert shipped in names, shipped
    assert not any(name.startswith(("tests/", "examples/")) for name in names)


def test_cra_and_cra_bot_run_from_the_fresh_virtualenv(fresh: Path, tmp_path: Path) -> None:
    bin_dir = fresh / "bin"
    env = clean_env(
        tmp_path, {"PATH": f"{bin_dir}:/usr/bin:/bin", "CRA_DATA_DIR": str(tmp_path / "bot")}
    )
    where = subprocess.run(
        [
            str(bin_dir / "python"),
            "-c",
            "import agent, bot; print(agent.__file__); print(bot.__file__)",
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert all(line.startswith(str(fresh)) for line in where.splitlines()), where
    for name in ("cra", "cra-bot"):
        done = subprocess.run(
            [str(bin_dir / name), "--version"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.stdout.strip() == f"{name} {version()}", done.stderr
    migrate = subprocess.run(
        [str(bin_dir / "cra-bot"), "migrate"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert migrate.returncode == 0 and "newest migration" in migrate.stdout, migrate.stderr


def test_cra_doctor_passes_from_the_fresh_virtualenv(fresh: Path, tmp_path: Path) -> None:
    repo = make_python_project(tmp_path / "repo", config=None)
    with ScriptedModelServer() as server:
        config = tmp_path / "cra.toml"
        config.write_text(
            f"[testing]\ntest_command = {json.dumps(TEST_COMMAND)}\n" + models_toml(server.url)
        )
        env = clean_env(tmp_path, {"PATH": f"{fresh / 'bin'}:/usr/bin:/bin"})
        done = subprocess.run(
            [
                str(fresh / "bin" / "cra"),
                "doctor",
                "--repo",
                str(repo),
                "--config",
                str(config),
                "--data-dir",
                str(tmp_path / "d"),
            ],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cra doctor: all 9 checks passed" in done.stdout
