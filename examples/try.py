"""`make try`: watch `cra solve` fix the bundled sample's bug, offline, as often as you like.

It copies examples/sample_repo into a fresh git repository under --dir, starts a loopback model
server answering from examples/answers.json (scripted answers: the machinery is real, the
model's part is canned), writes a config pointing cra's three models at it, and runs the real
`cra solve` on the sample's issue. The run log stays in --dir/data, so `cra runs ID` shows the
run afterwards; each try starts from a fresh copy of the sample and a fresh script.

With CRA_MODEL_URL (and CRA_MODEL_NAME, CRA_MODEL_PROVIDER) set, a real model answers instead.
"""

from __future__ import annotations

import sys

sys.dont_write_bytecode = True  # read-only: no __pycache__ in the source tree

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(EXAMPLES))
from fake_services import SAMPLE, SCRIPTED_MODEL, build_source, load_answers, read_issue  # noqa: E402, I001
from tests.fakes.model_server import ScriptedModelServer  # noqa: E402

ROLES = ("reasoning", "coding", "classifier")


def cra_command() -> list[str]:
    """The `cra` of this environment."""
    script = Path(sys.executable).parent / "cra"
    return [str(script)] if script.exists() else [sys.executable, "-m", "agent.cli.main"]


def write_config(path: Path, url: str, provider: str, names: dict[str, str]) -> None:
    """The sample's own cra.toml, with the three models pointed at `url`."""
    text = (SAMPLE / ".github" / "cra.toml").read_text(encoding="utf-8")
    for role in ROLES:
        text += (
            f"\n[models.{role}]\nprovider = {json.dumps(provider)}\n"
            f"base_url = {json.dumps(url)}\nmodel = {json.dumps(names[role])}\n"
        )
    path.write_text(text, encoding="utf-8")


def fresh_sample(target: Path) -> Path:
    """A one-commit git repository holding the sample project (what the issue is about)."""
    if target.exists():
        shutil.rmtree(target)
    return build_source(target)


def child_env() -> dict[str, str]:
    """Our environment with git's user config kept out and this Python's tools first."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {
        **os.environ,
        "PATH": path,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def solve(base: Path, url: str, provider: str, names: dict[str, str]) -> int:
    """`cra solve` on the sample's issue; its exit status."""
    repo = fresh_sample(base / "pager")
    config = base / "cra.toml"
    write_config(config, url, provider, names)
    title, body = read_issue(SAMPLE / "ISSUE.md")
    print(f'cra try: issue "{title}" on a fresh copy of the sample in {repo}\n', flush=True)
    argv = [
        *cra_command(),
        "--data-dir",
        str(base / "data"),
        "solve",
        f"{title}\n\n{body}",
        "--repo",
        str(repo),
        "--config",
        str(config),
    ]
    return subprocess.run(argv, env=child_env(), check=False).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "cra-try",
        help="where the sample copy and the run log go (default $TMPDIR/cra-try)",
    )
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    url = os.environ.get("CRA_MODEL_URL", "").strip()
    if url:
        provider = os.environ.get("CRA_MODEL_PROVIDER", "ollama")
        name = os.environ.get("CRA_MODEL_NAME", "").strip()
        from agent.config.files import ROLE_DEFAULTS

        names = {role: name or str(ROLE_DEFAULTS[role]["model"]) for role in ROLES}
        return solve(args.dir, url, provider, names)
    with ScriptedModelServer(models=(SCRIPTED_MODEL,)) as model:
        for stage, replies in load_answers(EXAMPLES / "answers.json", 0.0).items():
            model.script(stage, *replies)
        code = solve(args.dir, model.url, "ollama", dict.fromkeys(ROLES, SCRIPTED_MODEL))
        calls = len(model.chat_requests)
    print(
        f"\ncra try: the scripted model answered {calls} calls (examples/answers.json); "
        "`make try` again starts over.",
        flush=True,
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
