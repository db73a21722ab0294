"""Helpers of the first-hour tests: `cra` and `cra-bot` as real processes in a clean environment."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from tests.fakes.repos import ISOLATED_GIT_ENV

BIN = Path(sys.executable).parent
TIMEOUT_S = 90


@dataclass(frozen=True)
class Done:
    """A finished process: exit status and what it printed."""

    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


def program(name: str) -> list[str]:
    """The installed console script, else the module (`cra` → agent.cli.main)."""
    script = BIN / name
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "agent.cli.main" if name == "cra" else "bot.cli.main"]


def clean_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Our environment without CRA_ settings, git's user config out, HOME in the test's dir."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRA_")}
    env.update(ISOLATED_GIT_ENV)
    env.update(
        {
            "HOME": str(home),
            "PYTHONDONTWRITEBYTECODE": "1",
            "XDG_DATA_HOME": "",
            "PATH": os.pathsep.join([str(BIN), env.get("PATH", "")]),
        }
    )
    env.update(extra or {})
    return env


def run(name: str, *args: str, env: Mapping[str, str], cwd: Path | None = None) -> Done:
    """Run `cra` or `cra-bot` to its end."""
    done = subprocess.run(
        [*program(name), *args],
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    return Done(done.returncode, done.stdout, done.stderr)


def assert_plain(done: Done, *, code: int, names: tuple[str, ...] = (), lines: int = 2) -> None:
    """Exit `code`, no traceback, every name in stderr, at most `lines` lines of complaint."""
    assert done.code == code, done.text
    assert "Traceback" not in done.text, done.text
    for name in names:
        assert name in done.err, f"{name!r} not in: {done.err}"
    complaint = [line for line in done.err.splitlines() if line.strip() and "warning:" not in line]
    assert len(complaint) <= lines, done.err


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rsa_pem() -> str:
    """A fresh RSA private key (PEM), as GitHub hands out for an App."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()


def ec_pem() -> str:
    """A PEM private key that is not RSA."""
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def models_toml(
    url: str, name: str = "scripted-model", provider: str = "ollama", window: int | None = None
) -> str:
    """[models.*] sections pointing all three roles at one server."""
    extra = f"context_window = {window}\n" if window else ""
    return "".join(
        f'\n[models.{role}]\nprovider = "{provider}"\nbase_url = "{url}"\n'
        f'model = "{name}"\nmax_retries = 0\n{extra}'
        for role in ("reasoning", "coding", "classifier")
    )
