"""The demo's stand-ins as one process: a fake GitHub holding the sample repository, and a model.

Development tooling, not product code: it imports the test fakes (`tests.fakes`), which is why it
lives in examples/ and is never imported by `agent` or `bot`. `examples/demo.py` starts it as a
separate process; run by hand it prints the same thing:

    python examples/fake_services.py --state-dir /tmp/x [--answers examples/answers.json]

It builds a git repository from examples/sample_repo (all but ISSUE.md), serves it from a
FakeGitHub as `Codertocat/pager` with ISSUE.md as issue #1, and — with `--answers` — serves the
scripted answers from a ScriptedModelServer. When both listen it prints one JSON line (URLs, the
app's key file, a read-only inspection token, the issue) and serves until stdin closes (its parent
ended) or it gets SIGTERM / SIGINT. Everything it writes is under --state-dir.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the test fakes are not installed: they live in the source tree

from tests.fakes.github_server import FakeGitHub  # noqa: E402
from tests.fakes.model_server import Reply, ScriptedModelServer  # noqa: E402
from tests.fakes.repos import git_in, init_repo  # noqa: E402

SAMPLE = ROOT / "examples" / "sample_repo"
REPO = "Codertocat/pager"
OWNER = "Codertocat"  # the sender of the recorded `issues.labeled` payload
SCRIPTED_MODEL = "scripted"
CLOSE_TIMEOUT_S = 5.0


def read_issue(path: Path) -> tuple[str, str]:
    """(title, body) of a Markdown issue whose first line is `# title`."""
    first, _, rest = path.read_text(encoding="utf-8").partition("\n")
    return first.removeprefix("#").strip(), rest.strip()


def build_source(target: Path) -> Path:
    """A one-commit git repository holding the sample project (without its ISSUE.md)."""
    shutil.copytree(
        SAMPLE, target, ignore=shutil.ignore_patterns("ISSUE.md", "__pycache__", ".pytest_cache")
    )
    init_repo(target)
    git_in(target, "add", "--all")
    git_in(target, "commit", "--quiet", "--no-verify", "-m", "pager: page arithmetic")
    return target


def load_answers(path: Path, pace: float) -> dict[str, list[Reply]]:
    """Stage → replies from an answers file; a string is sent as is, anything else as JSON."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return {
        stage: [
            Reply(text=a if isinstance(a, str) else json.dumps(a), delay_s=pace) for a in answers
        ]
        for stage, answers in data.items()
        if not stage.startswith("_")
    }


def start_github(state: Path) -> tuple[FakeGitHub, dict[str, Any]]:
    """The fake GitHub with the sample repository and its issue; what a client needs to know."""
    github = FakeGitHub(root=state / "github").start()
    github.add_repo(REPO, build_source(state / "source"))
    github.set_permission(REPO, OWNER, "admin")
    title, body = read_issue(SAMPLE / "ISSUE.md")
    number = github.add_issue(REPO, number=1, title=title, body=body, user=OWNER)
    token = "demo_" + secrets.token_hex(20)
    github.add_static_token(token, login="cra-demo-viewer")
    key = state / "app-key.pem"
    key.touch(mode=0o600)
    key.write_text(github.private_key_pem, encoding="utf-8")
    return github, {
        "api_url": github.api_url,
        "git_url": github.git_url,
        "app_id": github.app_id,
        "installation_id": github.installation_id,
        "bot_login": github.bot_login,
        "private_key_path": str(key),
        "inspect_token": token,
        "repo": REPO,
        "owner": OWNER,
        "issue": {"number": number, "title": title, "body": body},
    }


def _stop(signum: int, frame: FrameType | None) -> None:
    """SIGTERM ends the process like Ctrl-C, through the `finally` that closes the servers."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--answers", type=Path, help="serve these scripted model answers")
    parser.add_argument("--pace", type=float, default=0.0, help="seconds before each answer")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop)
    args.state_dir.mkdir(parents=True, exist_ok=True)
    github, info = start_github(args.state_dir)
    model: ScriptedModelServer | None = None
    try:
        if args.answers is not None:
            model = ScriptedModelServer(models=(SCRIPTED_MODEL,)).start()
            for stage, replies in load_answers(args.answers, args.pace).items():
                model.script(stage, *replies)
        info["model_url"] = model.url if model else None
        info["model_name"] = SCRIPTED_MODEL if model else None
        print(json.dumps(info), flush=True)
        sys.stdin.buffer.read()  # until the parent closes the pipe (or dies)
    except KeyboardInterrupt:
        pass
    finally:
        _close(github, model)
    return 0


def _close(github: FakeGitHub, model: ScriptedModelServer | None) -> None:
    """Close both servers, deaf to further signals, and give up on a hung one after a while."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_IGN)
    watchdog = threading.Timer(CLOSE_TIMEOUT_S, os._exit, (1,))
    watchdog.daemon = True  # it outlives a hung close (even the exit's join), nothing else
    watchdog.start()
    if model is not None:
        model.close()
    github.close()


if __name__ == "__main__":
    sys.exit(main())
