"""`make demo`: the whole bot on this machine — a labeled issue becomes a tested pull request.

Three real processes on loopback, all started and stopped here: examples/fake_services.py (a
local stand-in for GitHub holding examples/sample_repo, and a model server answering from
examples/answers.json), and `cra-bot serve` (waitress, falling back to Flask's server) on the
embedded defaults: SQLite and in-process worker threads, its data in a temporary directory. The
demo signs and delivers an `issues.labeled` webhook, draws the run's checklist from the bot's
progress comment on the fake GitHub, and prints the pull request it opens.

The sample project's tests run in the bot's bubblewrap sandbox, as in production: the demo
needs bubblewrap (`apt-get install bubblewrap`) and prints the bot's start-up sandbox check.
CRA_SANDBOX=none runs them unsandboxed instead, and the demo says so.

With CRA_MODEL_URL set, a real model answers instead of the script: CRA_MODEL_PROVIDER (ollama |
openai, default ollama), and CRA_MODEL_NAME or CRA_REASONING_MODEL / CRA_CODING_MODEL /
CRA_CLASSIFIER_MODEL name the models (CRA_<ROLE>_API_KEY and CRA_<ROLE>_CONTEXT_WINDOW pass
through). When the run ends, the pull request (Markdown) and the run page (HTML, one file that
opens from disk) are written to --output (default $TMPDIR/cra-demo-output), and both pages stay
served until Ctrl-C (--no-wait ends at once). Nothing else is written outside the temporary
directory (removed unless --keep).
"""

from __future__ import annotations

import sys

sys.dont_write_bytecode = True  # read-only: no __pycache__ in the source tree

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from collections.abc import Mapping  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from types import FrameType  # noqa: E402
from typing import IO, Any, NoReturn  # noqa: E402

import httpx  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from agent.config.files import ROLE_DEFAULTS  # noqa: E402
from bot.intake.webhooks import sign  # noqa: E402

EXAMPLES = ROOT / "examples"
PAYLOAD = ROOT / "tests" / "fixtures" / "github-webhooks" / "issues" / "labeled.payload.json"
ROLES = ("reasoning", "coding", "classifier")
FALLBACK_MODELS = {role: str(ROLE_DEFAULTS[role]["model"]) for role in ROLES}  # the README's
FINISHED = ("succeeded", "partial", "failed", "cancelled", "rejected")
START_TIMEOUT_S = 30.0
STOP_GRACE_S = 8.0
POLL_S = 0.25
EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 130


class DemoError(Exception):
    """The demo cannot go on; the message says why."""


# --- the model that answers ------------------------------------------------------------------


@dataclass(frozen=True)
class ModelChoice:
    """Scripted answers, or a real model server named by the environment."""

    url: str | None = None
    provider: str = "ollama"
    names: dict[str, str] = field(default_factory=dict)
    passthrough: dict[str, str] = field(default_factory=dict)

    @property
    def scripted(self) -> bool:
        return self.url is None

    def describe(self, scripted_url: str | None) -> str:
        if self.scripted:
            return (
                f"scripted answers from examples/answers.json (no model runs), served by a "
                f"local model stand-in at {scripted_url}"
            )
        names = ", ".join(f"{role} {name}" for role, name in self.names.items())
        return f"a real model: {names} via {self.provider} at {self.url}"


def model_choice(env: Mapping[str, str]) -> ModelChoice:
    """What the environment asks for: CRA_MODEL_URL and friends, else the script."""
    url = env.get("CRA_MODEL_URL", "").strip()
    if not url:
        return ModelChoice()
    provider = env.get("CRA_MODEL_PROVIDER", "ollama").strip() or "ollama"
    if provider not in ("ollama", "openai"):
        raise DemoError(f"CRA_MODEL_PROVIDER must be ollama or openai, not {provider!r}")
    common = env.get("CRA_MODEL_NAME", "").strip()
    names = {
        role: env.get(f"CRA_{role.upper()}_MODEL", "").strip() or common or FALLBACK_MODELS[role]
        for role in ROLES
    }
    passthrough = {
        f"CRA_{role.upper()}_{key}": env[f"CRA_{role.upper()}_{key}"]
        for role in ROLES
        for key in ("API_KEY", "CONTEXT_WINDOW")
        if env.get(f"CRA_{role.upper()}_{key}")
    }
    return ModelChoice(url, provider, names, passthrough)


# --- processes -------------------------------------------------------------------------------


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the demo dies, even by SIGKILL (Linux only)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


@dataclass
class Started:
    """A process the demo started, in its own process group, and its log."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path


class Processes:
    """Starts children in their own sessions; stops each whole tree, newest first."""

    def __init__(self, tmp: Path, env: dict[str, str]) -> None:
        self.tmp, self.env, self.started = tmp, env, list[Started]()

    def start(
        self,
        name: str,
        argv: list[str],
        *,
        env: Mapping[str, str] | None = None,
        stdin: int | None = subprocess.DEVNULL,
        stdout: int | IO[bytes] | None = None,
    ) -> Started:
        log = self.tmp / f"{name}.log"
        with log.open("ab") as sink:
            proc = subprocess.Popen(
                argv,
                cwd=self.tmp,
                env={**self.env, **(env or {})},
                stdin=stdin,
                stdout=sink if stdout is None else stdout,
                stderr=sink,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        started = Started(name, proc, log)
        self.started.append(started)
        return started

    def stop_all(self) -> None:
        while self.started:
            stop_tree(self.started.pop().proc)


def _stat(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name: state, ppid, …; [] if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return []


def _descendants(pid: int) -> list[tuple[int, str]]:
    """Every descendant of `pid` as (pid, start time), from /proc (none without /proc)."""
    children: dict[int, list[tuple[int, str]]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        fields = _stat(int(entry.name))
        if len(fields) > 19:
            children.setdefault(int(fields[1]), []).append((int(entry.name), fields[19]))
    found, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += [kid for kid, _ in kids]
    return found


def _alive(proc: tuple[int, str]) -> bool:
    """Whether this very process (not a later one with its pid) still runs; zombies do not."""
    fields = _stat(proc[0])
    return len(fields) > 19 and fields[19] == proc[1] and fields[0] not in ("Z", "X")


def _signal_tree(leader: int | None, tree: list[tuple[int, str]], sig: int) -> None:
    """Send `sig` to the live processes of `tree`, their process groups and the leader's."""
    live = [pid for pid, start in tree if _alive((pid, start))]
    groups = set() if leader is None else {leader}
    for pid in live:
        with contextlib.suppress(OSError):
            groups.add(os.getpgid(pid))
    groups.discard(os.getpgrp())
    for group in groups:
        with contextlib.suppress(OSError):
            os.killpg(group, sig)
    for pid in live:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)


def _wait_gone(tree: list[tuple[int, str]], deadline: float) -> None:
    while any(_alive(p) for p in tree) and time.monotonic() < deadline:
        time.sleep(0.05)


def stop_tree(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM a child's whole tree, SIGKILL what is left after a grace period, reap it."""
    tree = _descendants(proc.pid)  # the child is not reaped yet, so its pid is still its own
    _signal_tree(None if proc.poll() is not None else proc.pid, tree, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=STOP_GRACE_S)
    _wait_gone(tree, deadline)
    if proc.poll() is None:
        tree += _descendants(proc.pid)
        _signal_tree(proc.pid, tree, signal.SIGKILL)
        proc.wait()
    else:
        _signal_tree(None, tree, signal.SIGKILL)
    _wait_gone(tree, time.monotonic() + STOP_GRACE_S)


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tail(path: Path, lines: int = 25) -> str:
    """The last lines of a log file."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


# --- the stand-ins and the bot ---------------------------------------------------------------


def start_fakes(procs: Processes, choice: ModelChoice, pace: float) -> dict[str, Any]:
    """examples/fake_services.py as a process; the JSON line it prints once it listens."""
    argv = [
        sys.executable,
        str(EXAMPLES / "fake_services.py"),
        "--state-dir",
        str(procs.tmp / "fakes"),
        "--pace",
        str(pace),
    ]
    if choice.scripted:
        argv += ["--answers", str(EXAMPLES / "answers.json")]
    started = procs.start("fake-services", argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert started.proc.stdout is not None
    line = _read_line(started.proc.stdout, START_TIMEOUT_S)
    if not line:
        raise DemoError("the fake GitHub did not start:\n" + tail(started.log))
    info: dict[str, Any] = json.loads(line)
    return info


def _read_line(stream: IO[bytes], timeout: float) -> str:
    """One line from a child's pipe, or "" when it closes or `timeout` passes."""
    import selectors

    with selectors.DefaultSelector() as sel:
        sel.register(stream, selectors.EVENT_READ)
        if not sel.select(timeout):
            return ""
    return stream.readline().decode().strip()


def bot_env(tmp: Path, info: Mapping[str, Any], choice: ModelChoice, secret: str) -> dict[str, str]:
    """The bot's CRA_* settings: the fake GitHub, the model, a data dir in the temp dir."""
    model_url = choice.url or info["model_url"]
    env = {
        "CRA_WEBHOOK_SECRET": secret,
        "CRA_DATA_DIR": str(tmp / "bot"),
        "CRA_GITHUB_API_URL": info["api_url"],
        "CRA_GITHUB_URL": info["git_url"],
        "CRA_APP_ID": str(info["app_id"]),
        "CRA_PRIVATE_KEY_PATH": info["private_key_path"],
        "CRA_BOT_LOGIN": info["bot_login"],
        "CRA_LABEL": "cra",
        "CRA_COMMENT_INTERVAL": "0",
        "CRA_SANDBOX": sandbox_choice(os.environ),
        **choice.passthrough,
        "CRA_RUN_PAGES": "public",  # everything is on loopback; no sign-in for the demo
    }
    for role in ROLES:
        env[f"CRA_{role.upper()}_BASE_URL"] = model_url
        env[f"CRA_{role.upper()}_PROVIDER"] = choice.provider
        env[f"CRA_{role.upper()}_MODEL"] = choice.names.get(role) or info["model_name"]
    return env


def sandbox_choice(env: Mapping[str, str]) -> str:
    """bwrap (the bot's default), unless CRA_SANDBOX=none; DemoError when bwrap is missing."""
    kind = env.get("CRA_SANDBOX", "").strip() or "bwrap"
    if kind == "bwrap" and shutil.which("bwrap") is None:
        raise DemoError(
            "the bot runs the sample project's tests in a bubblewrap sandbox, and "
            "bubblewrap is not installed: apt-get install bubblewrap (or run "
            "`CRA_SANDBOX=none make demo` to run them unsandboxed)"
        )
    return kind


def sandbox_line(tmp: Path) -> str:
    """What the bot's start-up sandbox check proved, from its log."""
    for log in sorted(tmp.glob("cra-bot*.log")):
        for line in tail(log, 400).splitlines():
            if " sandbox: " in line:
                return line.split(" sandbox: ", 1)[1]
    return "the bot logged no sandbox check"


def cra_bot() -> list[str]:
    """The `cra-bot` command of this environment."""
    script = Path(sys.executable).parent / "cra-bot"
    return [str(script)] if script.exists() else [sys.executable, "-m", "bot.cli.main"]


def start_bot(procs: Processes, env: dict[str, str]) -> tuple[str, str]:
    """`cra-bot serve` (waitress), else --dev; (its URL, how it is served) once healthy."""
    for dev in (False, True):
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        argv = [*cra_bot(), "serve", "--host", "127.0.0.1", "--port", str(port)]
        started = procs.start(
            "cra-bot-dev" if dev else "cra-bot",
            argv + (["--dev"] if dev else []),
            env={**env, "CRA_PUBLIC_URL": url},
        )
        if wait_healthy(url, started.proc):
            return url, "Flask's development server" if dev else "waitress"
        stop_tree(started.proc)
        procs.started.remove(started)
        if dev:
            raise DemoError("cra-bot serve did not start:\n" + tail(started.log))
        print("  (waitress did not come up; trying `cra-bot serve --dev`)")
    raise AssertionError("unreachable")


def wait_healthy(url: str, proc: subprocess.Popen[bytes]) -> bool:
    """Whether /healthz answers 200 before the process exits or the start timeout passes."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and proc.poll() is None:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/healthz", timeout=2.0).status_code == 200:
                return True
        time.sleep(0.1)
    return False


def deliver_label(bot_url: str, info: Mapping[str, Any], secret: str) -> int:
    """POST the recorded `issues.labeled` payload, made ours and signed; the run's id."""
    payload = json.loads(PAYLOAD.read_bytes())
    owner, _, name = info["repo"].partition("/")
    payload["label"]["name"] = "cra"
    payload["issue"].update(
        number=info["issue"]["number"], title=info["issue"]["title"], body=info["issue"]["body"]
    )
    payload["repository"].update(full_name=info["repo"], name=name)
    payload["repository"]["owner"]["login"] = payload["sender"]["login"] = owner
    payload["installation"] = {"id": info["installation_id"]}
    body = json.dumps(payload).encode()
    response = httpx.post(
        f"{bot_url}/webhook",
        content=body,
        timeout=10.0,
        headers={
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": sign(body, secret),
            "Content-Type": "application/json",
        },
    )
    if response.status_code != 202:
        raise DemoError(
            f"the bot answered the webhook with {response.status_code}: {response.text[:300]}"
        )
    return int(response.json()["run_id"])


# --- watching the run ------------------------------------------------------------------------


class GitHubView:
    """Reads the fake GitHub through its REST API, as any client would, with a viewer token."""

    def __init__(self, info: Mapping[str, Any]) -> None:
        self.repo, self.number = info["repo"], info["issue"]["number"]
        self.bot_login = info["bot_login"]
        self.client = httpx.Client(
            base_url=info["api_url"],
            timeout=5.0,
            headers={
                "Authorization": f"token {info['inspect_token']}",
                "Accept": "application/vnd.github+json",
            },
        )

    def bot_comment(self) -> str:
        """The body of the bot's latest comment on the issue (its checklist), or ""."""
        found = self.client.get(f"/repos/{self.repo}/issues/{self.number}/comments").json()
        ours = [c.get("body") or "" for c in found if c["user"]["login"] == self.bot_login]
        return ours[-1] if ours else ""

    def pulls(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.client.get(
            f"/repos/{self.repo}/pulls", params={"state": "all"}
        ).json()
        return found

    def close(self) -> None:
        self.client.close()


def run_status(bot_url: str) -> str | None:
    """The finished status of the (only) run, from the bot's /metrics; None while it runs."""
    text = httpx.get(f"{bot_url}/metrics", timeout=5.0).text
    for status in FINISHED:
        match = re.search(rf'^cra_runs{{status="{status}"}} (\d+)', text, re.MULTILINE)
        if match and int(match.group(1)) > 0:
            return status
    return None


_STEP = re.compile(r"^- \[(?P<mark>[ x])\] (?P<text>.*)$")
_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")


def parse_checklist(body: str) -> tuple[list[tuple[str, str]], str]:
    """(label, state) of each step line of a progress comment, and its "working: …" note."""
    steps, note = [], ""
    for line in body.splitlines():
        if line.startswith("working: "):
            note = line
        match = _STEP.match(line)
        if match is None:
            continue
        text = match["text"]
        state = (
            "passed"
            if match["mark"] == "x"
            else "running"
            if "⏳" in text
            else "failed"
            if "❌" in text
            else "skipped"
            if text.startswith("~~")
            else "pending"
        )
        label = _ESCAPED.sub(r"\1", text.split(" — ")[0].strip("~ "))
        steps.append((label, state))
    return steps, note


class Display:
    """The step checklist with a progress bar: redrawn in place on a TTY, else appended."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        fancy = (getattr(stream, "encoding", "") or "").lower().startswith("utf")
        self.full, self.empty = ("█", "░") if fancy else ("#", "-")
        self.marks = (
            {"passed": "✔", "running": "▸", "failed": "✘", "skipped": "–", "pending": "·"}
            if fancy
            else {"passed": "x", "running": ">", "failed": "!", "skipped": "-", "pending": " "}
        )
        self.drawn: list[str] = []

    def frame(self, steps: list[tuple[str, str]], status: str, note: str) -> list[str]:
        done = sum(state in ("passed", "failed", "skipped") for _, state in steps)
        width = 24
        filled = round(width * done / len(steps)) if steps else 0
        bar = self.full * filled + self.empty * (width - filled)
        count = f"{done}/{len(steps)} steps" if steps else "planning"
        head = f"  [{bar}] {count} · {status}" + (f" · {note}" if note else "")
        return [head] + [f"     {self.marks[state]} {label}" for label, state in steps]

    def show(self, steps: list[tuple[str, str]], status: str, note: str) -> None:
        lines = self.frame(steps, status, note)
        if self.tty:  # a wrapped line would break the redraw
            width = shutil.get_terminal_size().columns - 1
            lines = [line[:width] for line in lines]
        if lines == self.drawn:
            return
        if self.tty:
            if self.drawn:
                self.stream.write(f"\x1b[{len(self.drawn)}F\x1b[J")
            self.stream.write("\n".join(lines) + "\n")
        else:
            old = set(self.drawn)
            self.stream.write("".join(line + "\n" for line in lines if line not in old))
        self.stream.flush()
        self.drawn = lines


def watch(bot_url: str, view: GitHubView, display: Display, timeout: float) -> str:
    """Draw the checklist until the run finishes; its status. DemoError after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = run_status(bot_url)
        steps, note = parse_checklist(view.bot_comment())
        display.show(steps, status or "running", "" if status else note)
        if status is not None:
            return status
        time.sleep(POLL_S)
    raise DemoError(f"the run did not finish within {timeout:.0f} s")


# --- the demo --------------------------------------------------------------------------------


def say(text: str = "") -> None:
    print(text, flush=True)


def rule(title: str = "") -> str:
    return f"── {title} ".ljust(78, "─") if title else "─" * 78


def child_env(tmp: Path) -> dict[str, str]:
    """The children's environment: ours without any CRA_* setting, git's user config kept out."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRA_")}
    path = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return {
        **env,
        "PATH": path,
        "PYTHONDONTWRITEBYTECODE": "1",
        "TMPDIR": str(tmp),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "PYTHONUNBUFFERED": "1",
    }


def demo(tmp: Path, args: argparse.Namespace) -> int:
    choice = model_choice(os.environ)
    procs = Processes(tmp, child_env(tmp))
    try:
        return _run(procs, choice, args)
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)  # a second Ctrl-C must not stop the cleanup
        say(f"\nStopping the {len(procs.started)} processes the demo started …")
        procs.stop_all()


def _run(procs: Processes, choice: ModelChoice, args: argparse.Namespace) -> int:
    say("cra demo: a labeled issue becomes a tested pull request, all on this machine.\n")
    info = start_fakes(procs, choice, args.pace)
    say(
        f"  GitHub  a LOCAL STAND-IN (the project's fake GitHub), not github.com: {info['git_url']}"
    )
    say(f"  model   {choice.describe(info.get('model_url'))}")
    secret = "demo-" + uuid.uuid4().hex
    env = bot_env(procs.tmp, info, choice, secret)
    bot_url, served = start_bot(procs, env)
    say(
        f"  bot     cra-bot serve ({served}) at {bot_url}; SQLite and worker threads in {procs.tmp}"
    )
    say(f"  sandbox {sandbox_line(procs.tmp)}")
    issue = info["issue"]
    say(f"\nIssue #{issue['number']} of {info['repo']}: {issue['title']}")
    run_id = deliver_label(bot_url, info, secret)
    say(f'Delivered a signed issues.labeled webhook (label "cra") → run {run_id}\n')
    view = GitHubView(info)
    try:
        status = watch(bot_url, view, Display(sys.stdout), args.timeout)
        pulls, comment = view.pulls(), view.bot_comment()
    finally:
        view.close()
    run_url = f"{bot_url}/runs/{run_id}"
    if not pulls:
        return no_pull(status, comment, run_url, procs.tmp / "cra-bot.log")
    code = report(status, pulls[-1], run_url, choice)
    keep(args.output, pulls[-1], run_url)
    if not args.no_wait:
        wait_for_ctrl_c(run_url, pulls[-1]["html_url"])
    return code


def keep(output: Path, pull: dict[str, Any], run_url: str) -> None:
    """Write the pull request (Markdown) and the run page (HTML, as one file that opens from
    disk) where they outlive the demo."""
    output.mkdir(parents=True, exist_ok=True)
    pr_file = output / f"pull-{pull['number']}.md"
    pr_file.write_text(
        f"# {pull['title']}\n\n{pull['html_url']}\n\n{pull.get('body') or ''}\n", encoding="utf-8"
    )
    run_file = output / f"run-{run_url.rsplit('/', 1)[-1]}.html"
    kept = httpx.get(run_url, params={"format": "file"}, timeout=10.0)
    run_file.write_bytes(kept.raise_for_status().content)
    say(f"\nKept for after the demo: {pr_file}\n                         {run_file}")


def wait_for_ctrl_c(run_url: str, pull_url: str) -> None:
    """Keep the bot and the stand-in serving the run page and the PR until Ctrl-C."""
    say(
        f"\nStill serving until you press Ctrl-C (--no-wait ends the demo here):\n"
        f"  run page      {run_url}\n  pull request  {pull_url} (the stand-in's page)"
    )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        say("\nCtrl-C: stopping.")


def no_pull(status: str, comment: str, run_url: str, log: Path) -> int:
    """Say why there is no pull request: the bot's comment on the issue, its log's warnings."""
    say(f"\ncra demo failed: the run ended {status} without a pull request.")
    say(rule("the bot's comment on the issue"))
    say(comment.rstrip() or "(none)")
    say(rule())
    problems = [
        line
        for line in tail(log, 400).splitlines()
        if any(word in line for word in (" WARNING ", " ERROR ", "Traceback", "Error:"))
    ]
    if problems:
        say("The bot's log says:\n" + "\n".join(problems[-15:]))
    say(f"Run page: {run_url}")
    return EXIT_FAILED


def report(status: str, pull: dict[str, Any], run_url: str, choice: ModelChoice) -> int:
    """Print the pull request, its body and the run page."""
    kind = "draft pull request (partial)" if pull.get("draft") else "pull request"
    say(f"\nThe run {status}. It opened a {kind} on the local GitHub stand-in:")
    say(f"  {pull['html_url']}\n")
    say(rule(f"PR #{pull['number']}: {pull['title']}"))
    say((pull.get("body") or "").rstrip())
    say(rule())
    say(f"\nRun page: {run_url}")
    who = "the scripted answers" if choice.scripted else f"the real model at {choice.url}"
    say(f"(GitHub was a local stand-in; {who} did the model's part.)")
    return EXIT_OK


def _interrupt(signum: int, frame: FrameType | None) -> NoReturn:
    """SIGTERM and SIGHUP end the demo like Ctrl-C: through the cleanup."""
    raise KeyboardInterrupt


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--timeout",
        type=float,
        default=180.0,
        help="seconds the run may take before the demo gives up (default 180)",
    )
    parser.add_argument(
        "--pace",
        type=float,
        default=0.0,
        help="seconds each scripted answer waits, to watch the progress",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument(
        "--no-wait",
        action="store_true",
        help="end at once instead of serving the run page and the PR until Ctrl-C",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=Path(tempfile.gettempdir()) / "cra-demo-output",
        help="where the PR and the run page are written (default: $TMPDIR/cra-demo-output)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # Ctrl-C must reach the cleanup even where the shell started us with SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)
    tmp = Path(tempfile.mkdtemp(prefix="cra-demo-"))
    try:
        return demo(tmp, args)
    except DemoError as exc:
        say(f"\ncra demo failed: {exc}")
        return EXIT_FAILED
    except httpx.HTTPError as exc:
        say(f"\ncra demo failed: lost touch with a process it started: {exc!r}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        say("\ncra demo interrupted; every process it started is stopped.")
        return EXIT_INTERRUPTED
    finally:
        if args.keep:
            say(f"Kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
