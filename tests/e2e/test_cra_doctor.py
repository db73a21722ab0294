"""`cra doctor` as a process: a good set-up passes, and each broken part is one ✗ line with the
fix (and a row of the troubleshooting table, docs/troubleshooting.md); --json says the same for
scripts."""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.first_hour import Done, clean_env, closed_port, models_toml, run
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.repos import TEST_COMMAND, git_in, make_python_project
from tests.fakes.sandboxes import bwrap_installed, slirp_installed

TROUBLESHOOTING = Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md"


def troubleshooting_rows() -> list[re.Pattern[str]]:
    """The doctor lines of the troubleshooting table, `…` standing for anything."""
    section = TROUBLESHOOTING.read_text(encoding="utf-8")
    shown = re.findall(r"^\| `([✗!] [^`]+)` \|", section, re.M)
    return [re.compile(".*".join(re.escape(part) for part in line.split("…"))) for line in shown]


def assert_documented(line: str) -> None:
    """A ✗ or ! line the doctor printed matches a row of the troubleshooting table."""
    assert any(row.match(line) for row in troubleshooting_rows()), (
        f"the troubleshooting table has no row for: {line}"
    )


def lines_of(done: Done, mark: str) -> list[str]:
    return [line for line in done.out.splitlines() if line.startswith(mark + " ")]


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(windows={"scripted-model": 32768}) as srv:
        yield srv


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_python_project(tmp_path / "repo", config=None)


def doctor(
    tmp: Path, repo: Path, config_text: str, *extra: str, env: dict[str, str] | None = None
) -> Done:
    config = tmp / "cra.toml"
    config.write_text(config_text, encoding="utf-8")
    return run(
        "cra",
        "doctor",
        "--repo",
        str(repo),
        "--config",
        str(config),
        "--data-dir",
        str(tmp / "data"),
        *extra,
        env=env or clean_env(tmp),
    )


def good_config(url: str, **models: object) -> str:
    return f"[testing]\ntest_command = {json.dumps(TEST_COMMAND)}\n" + models_toml(url, **models)


def test_a_good_set_up_passes_every_check(
    tmp_path: Path, repo: Path, server: ScriptedModelServer
) -> None:
    done = doctor(tmp_path, repo, good_config(server.url))
    assert done.code == 0, done.text
    checks = [line.split(":")[0] for line in done.out.splitlines() if line[:2] in ("✓ ", "✗ ")]
    assert checks == [
        "✓ git",
        "✓ variables",
        "✓ data dir",
        "✓ sandbox",
        "✓ config",
        "✓ test command",
        "✓ reasoning model",
        "✓ coding model",
        "✓ classifier model",
    ]
    assert "scripted-model on " + server.url + ": present; window 32768, cra uses 16384" in done.out
    assert "✓ sandbox: repository commands run in the bwrap sandbox" in done.out
    assert "the data directory is hidden" in done.out
    assert done.out.rstrip().endswith("cra doctor: all 9 checks passed")
    assert server.chat_requests == []


def test_the_operators_config_opens_an_address_to_the_setup_step_and_the_doctor_proves_it(
    tmp_path: Path, repo: Path, server: ScriptedModelServer
) -> None:
    if not (bwrap_installed() and slirp_installed()):
        pytest.skip("needs bubblewrap and slirp4netns; .ci/run installs them")
    allow = '[sandbox]\nallow_addresses = ["10.1.2.3"]\n'
    done = doctor(tmp_path, repo, good_config(server.url) + allow)
    assert done.code == 0, done.text
    [line] = [line for line in done.out.splitlines() if line.startswith("✓ sandbox")]
    assert line.endswith("nor IPv6; the operator opened 10.1.2.3/32"), line


def test_a_failing_setup_step_is_tried_once_and_shows_its_status_and_last_lines(
    tmp_path: Path, repo: Path, server: ScriptedModelServer
) -> None:
    setup = "echo resolving; echo 'npm ERR! could not reach git.example' >&2; exit 128"
    config = good_config(server.url).replace(
        "[testing]\n", f"[testing]\nsetup_command = {json.dumps(setup)}\n", 1
    )
    done = doctor(tmp_path, repo, config)
    assert done.code == 1
    [line] = lines_of(done, "✗")
    assert (
        line == f"✗ setup step: the setup step ({setup}) exited with status 128; its output ended:"
    )
    assert "    resolving\n    npm ERR! could not reach git.example → run it by hand" in done.out
    assert_documented(line)
    assert not list((tmp_path / "data" / "doctor").iterdir())  # its checkout and env removed


def test_a_setup_step_that_works_passes_and_leaves_the_checkout_as_it_was(
    tmp_path: Path, repo: Path, server: ScriptedModelServer
) -> None:
    setup = 'echo installed > "$CRA_ENV/done"'
    config = good_config(server.url).replace(
        "[testing]\n", f"[testing]\nsetup_command = {json.dumps(setup)}\n", 1
    )
    done = doctor(tmp_path, repo, config)
    assert done.code == 0, done.text
    assert f"✓ setup step: {setup!r} ran in the " in done.out
    assert git_in(repo, "status", "--porcelain").strip() == ""
    assert git_in(repo, "worktree", "list").count("\n") == 1


def test_json_gives_the_same_findings(
    tmp_path: Path, repo: Path, server: ScriptedModelServer
) -> None:
    done = doctor(tmp_path, repo, good_config(f"http://127.0.0.1:{closed_port()}"), "--json")
    report = json.loads(done.out)
    assert done.code == 1 and report["passed"] is False
    by_check = {c["check"]: c for c in report["checks"]}
    assert by_check["git"]["status"] == "ok"
    assert by_check["coding model"]["status"] == "fail"
    assert "ollama serve" in by_check["coding model"]["fix"]


def test_a_server_that_is_down_fails_each_role_with_its_setting(tmp_path: Path, repo: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    done = doctor(tmp_path, repo, good_config(url))
    assert done.code == 1
    failed = lines_of(done, "✗")
    assert len(failed) == 3 and all("refused the connection" in line for line in failed)
    assert "models.coding.base_url in " in failed[1]
    assert_documented(failed[0])


def test_a_model_the_server_lacks_is_named_with_what_it_has(tmp_path: Path, repo: Path) -> None:
    with ScriptedModelServer(models=("qwen3:4b", "llama3:latest")) as other:
        done = doctor(tmp_path, repo, good_config(other.url, name="qwen2.5-coder:3b"))
    assert done.code == 1
    [first, *_] = lines_of(done, "✗")
    assert "qwen2.5-coder:3b is not on" in first and "(it has: llama3:latest, qwen3:4b)" in first
    assert first.endswith("→ ollama pull qwen2.5-coder:3b")
    assert_documented(first.replace("reasoning", "coding"))


def test_an_ollama_model_without_a_tag_is_its_latest(tmp_path: Path, repo: Path) -> None:
    with ScriptedModelServer(models=("llama3:latest",)) as other:
        done = doctor(tmp_path, repo, good_config(other.url, name="llama3"))
    assert done.code == 0, done.text


def test_a_window_larger_than_an_ollama_model_was_trained_on_is_a_warning(
    tmp_path: Path,
    repo: Path,
) -> None:
    with ScriptedModelServer(windows={"scripted-model": 8192}) as small:
        done = doctor(tmp_path, repo, good_config(small.url, window=16384))
    assert done.code == 0, done.text  # Ollama runs it, with a window it was not made for
    [warning, *_] = lines_of(done, "!")
    assert "cra uses a 16384-token window but the model was trained on 8192" in warning
    assert warning.endswith(
        f"→ set models.reasoning.context_window in {tmp_path / 'cra.toml'} to 8192 or less"
    )
    assert_documented(warning.replace("reasoning", "coding"))


def test_a_window_larger_than_an_openai_server_allows_fails(tmp_path: Path, repo: Path) -> None:
    with ScriptedModelServer(windows={"scripted-model": 4096}) as small:
        done = doctor(tmp_path, repo, good_config(small.url, provider="openai", window=16384))
    assert done.code == 1
    assert all("but the server allows 4096" in line for line in lines_of(done, "✗"))


def test_a_test_command_that_is_not_found_fails(
    tmp_path: Path, repo: Path, server: ScriptedModelServer
) -> None:
    text = good_config(server.url).replace(json.dumps(TEST_COMMAND), '"pytst -q"')
    done = doctor(tmp_path, repo, text)
    assert done.code == 1
    [line] = lines_of(done, "✗")
    assert line.startswith("✗ test command: 'pytst -q': pytst is not found on PATH")
    assert_documented(line)


def test_no_test_command_fails_with_what_to_add(
    tmp_path: Path, repo: Path, server: ScriptedModelServer
) -> None:
    done = doctor(tmp_path, repo, models_toml(server.url))
    [line] = lines_of(done, "✗")
    assert "no [testing] test_command" in line and 'add test_command = "pytest -q"' in line


def test_an_invalid_config_fails_and_names_the_key(
    tmp_path: Path, repo: Path, server: ScriptedModelServer
) -> None:
    text = good_config(server.url).replace("test_command", "test_comand")
    done = doctor(tmp_path, repo, text)
    assert done.code == 1
    [line] = lines_of(done, "✗")
    assert "unknown key testing.test_comand; did you mean testing.test_command?" in line
    assert_documented(line)


def test_a_misspelt_variable_fails_the_variables_check(
    tmp_path: Path, repo: Path, server: ScriptedModelServer
) -> None:
    env = clean_env(tmp_path, {"CRA_DATABASE_ULR": "sqlite:///x.db"})
    done = doctor(tmp_path, repo, good_config(server.url), env=env)
    [line] = lines_of(done, "✗")
    assert line == (
        "✗ variables: cra reads no setting CRA_DATABASE_ULR; did you mean "
        "CRA_DATABASE_URL? → rename it CRA_DATABASE_URL"
    )


def test_outside_a_repository_the_doctor_says_so(
    tmp_path: Path, server: ScriptedModelServer
) -> None:
    done = doctor(tmp_path, tmp_path, good_config(server.url))
    assert done.code == 1 and "✗ repository: " in done.out and "Traceback" not in done.text


def test_a_repository_without_commits_fails_as_cra_solve_would(
    tmp_path: Path, server: ScriptedModelServer
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git_in(empty, "init", "-q")
    done = doctor(tmp_path, empty, good_config(server.url))
    assert done.code == 1 and "Traceback" not in done.text
    assert (
        f"✗ repository: {empty} has no commits yet: cra works from a commit → commit the "
        "code and its tests first"
    ) in done.out


def test_no_sandbox_is_said_out_loud_but_passes(
    tmp_path: Path, repo: Path, server: ScriptedModelServer
) -> None:
    env = clean_env(tmp_path, {"CRA_SANDBOX": "none"})
    done = doctor(tmp_path, repo, good_config(server.url), env=env)
    assert done.code == 0, done.text
    [line] = lines_of(done, "!")
    assert line.startswith(
        "! sandbox: repository commands run UNSANDBOXED (sandbox none: "
        "chosen explicitly) → install bubblewrap"
    )
    assert_documented(line)


def test_a_sandbox_asked_for_and_missing_fails_with_the_install_hint(
    tmp_path: Path,
    repo: Path,
    server: ScriptedModelServer,
) -> None:
    tools = tmp_path / "bin"  # a PATH with git and a shell, without bubblewrap
    tools.mkdir()
    for name in ("git", "sh"):
        (tools / name).symlink_to(shutil.which(name) or f"/usr/bin/{name}")
    env = clean_env(tmp_path, {"CRA_SANDBOX": "bwrap"})
    env["PATH"] = f"{Path(sys.executable).parent}:{tools}"
    done = doctor(tmp_path, repo, good_config(server.url), env=env)
    assert done.code == 1
    [line] = [line for line in lines_of(done, "✗") if line.startswith("✗ sandbox")]
    assert "bubblewrap (bwrap) is not installed: install bubblewrap" in line
    assert_documented(line)
