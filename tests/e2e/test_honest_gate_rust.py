"""The honest gate on a Rust crate, whose unit tests live inside its source files: a model that
rewrites, deletes or switches off the tests in `src/lib.rs`, or skips one through
`.cargo/config.toml`, instead of fixing `mul` is rejected, its retry fixes the code and lands
alone; a fix that also adds a test to the same file's test module passes. Real `cargo test`,
offline (the crate has no dependencies)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.cli.main import main
from tests.e2e.test_honest_gate import script_plan
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.repos import git_in, init_repo, write_files
from tests.hostile.answers import edit

pytestmark = pytest.mark.usefixtures("isolated_git")

COMMAND = "cargo test --offline --no-fail-fast"
BUG = "pub fn mul(a: i64, b: i64) -> i64 {\n    a + b\n}"
FIXED = "pub fn mul(a: i64, b: i64) -> i64 {\n    a * b\n}"
MUL_TEST = "        assert_eq!(mul(2, 3), 6);"
LIB_RS = f"""pub fn add(a: i64, b: i64) -> i64 {{
    a + b
}}

{BUG}

#[cfg(test)]
mod tests {{
    use super::*;

    #[test]
    fn adds() {{
        assert_eq!(add(2, 3), 5);
    }}

    #[test]
    fn muls() {{
{MUL_TEST}
    }}
}}
"""
CARGO_TOML = '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
FIX = edit("src/lib.rs", BUG, FIXED)

# name → (the weakening answer, what the rejection says)
WEAKENINGS: dict[str, tuple[str, str]] = {
    "in-source test rewritten": (
        edit("src/lib.rs", MUL_TEST, "        assert_eq!(mul(2, 3), 5);"),
        "original test files",
    ),
    "in-source test deleted": (
        edit("src/lib.rs", f"    #[test]\n    fn muls() {{\n{MUL_TEST}\n    }}", ""),
        "fewer tests ran",
    ),
    "test module switched off": (
        edit(
            "src/lib.rs",
            "#[cfg(test)]\nmod tests {",
            '#[cfg(all(test, feature = "never"))]\nmod tests {',
        ),
        "no test was collected",
    ),
    "test filter in .cargo/config.toml": (
        edit(
            ".cargo/config.toml",
            "",
            "[target.'cfg(all())']\n"
            'runner = ["sh", "-c", "exec \\"$0\\" \\"$@\\" --skip muls"]\n',
        ),
        "fewer tests ran",
    ),
}


def cargo_works() -> bool:
    if shutil.which("cargo") is None:
        return False
    return subprocess.run(["cargo", "--version"], capture_output=True, check=False).returncode == 0


requires_cargo = pytest.mark.skipif(not cargo_works(), reason="needs cargo (Rust's toolchain)")


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def rust_toolchain(monkeypatch: pytest.MonkeyPatch) -> None:
    """rustup's toolchains where the test command looks for them: the run's HOME is its own
    environment folder, so the config passes RUSTUP_HOME and CARGO_HOME (testing.env)."""
    home = Path.home()
    monkeypatch.setenv("RUSTUP_HOME", os.environ.get("RUSTUP_HOME", str(home / ".rustup")))
    monkeypatch.setenv("CARGO_HOME", os.environ.get("CARGO_HOME", str(home / ".cargo")))


def solve(
    tmp: Path,
    server: ScriptedModelServer,
    task: str = "tests::muls fails: fix mul",
    *,
    lib: str = LIB_RS,
) -> tuple[int, Path]:
    repo = tmp / "crate"
    init_repo(repo)
    write_files(
        repo, {"Cargo.toml": CARGO_TOML, "src/lib.rs": lib, ".gitignore": "/target\nCargo.lock\n"}
    )
    git_in(repo, "add", "--all")
    git_in(repo, "commit", "--quiet", "--no-verify", "-m", "A calc crate")
    config = tmp / "cra-config.toml"
    config.write_text(
        "".join(
            f'[models.{role}]\nbase_url = "{server.url}"\nmodel = "{role}-m"\nmax_retries = 0\n'
            for role in ("reasoning", "coding", "classifier")
        )
        + f"[testing]\ntest_command = {json.dumps(COMMAND)}\ntimeout = 300\n"
        'env = ["RUSTUP_HOME", "CARGO_HOME"]\n'
        "[retrieval]\nstages = []\n"
    )
    code = main(
        [
            "--data-dir",
            str(tmp / "data"),
            "solve",
            task,
            "--repo",
            str(repo),
            "--config",
            str(config),
            "--sandbox",
            "none",
        ]
    )
    return code, repo


def branch_diff(repo: Path) -> tuple[list[str], str]:
    [branch] = git_in(repo, "branch", "--list", "cra/*", "--format=%(refname:short)").split()
    return (
        git_in(repo, "diff", "--name-only", f"main...{branch}").split(),
        git_in(repo, "show", f"{branch}:src/lib.rs"),
    )


@requires_cargo
@pytest.mark.parametrize("name", list(WEAKENINGS))
def test_a_weakened_rust_test_is_rejected_and_the_real_fix_lands(
    name: str, tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    weakening, reason = WEAKENINGS[name]
    script_plan(server, "Fix mul in src/lib.rs", ["src/lib.rs"])
    server.script("implement", weakening)
    server.script("implement_retry", FIX)

    code, repo = solve(tmp_path, server)
    out = capsys.readouterr().out

    assert code == 0, out
    assert "status: complete" in out
    retry = next(r for r in server.requests if r.stage == "implement_retry")
    assert reason in retry.user_prompt, retry.user_prompt
    files, lib = branch_diff(repo)
    assert files == ["src/lib.rs"]
    assert lib == LIB_RS.replace(BUG, FIXED)


@requires_cargo
def test_a_rust_fix_that_adds_a_test_to_the_files_test_module_passes(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    new_test = f"{MUL_TEST}\n        assert_eq!(mul(4, 5), 20);"
    script_plan(server, "Fix mul in src/lib.rs", ["src/lib.rs"])
    server.script("implement", FIX + "\n" + edit("src/lib.rs", MUL_TEST, new_test))

    code, repo = solve(tmp_path, server)
    out = capsys.readouterr().out

    assert code == 0, out
    assert "status: complete" in out
    assert not any(r.stage == "implement_retry" for r in server.requests)
    _, lib = branch_diff(repo)
    assert lib == LIB_RS.replace(BUG, FIXED).replace(MUL_TEST, new_test)


@requires_cargo
def test_a_rust_task_that_asks_to_change_tested_behaviour_succeeds_with_its_test_change_listed(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    fixed = LIB_RS.replace(BUG, FIXED)
    script_plan(
        server, "Make add return a + b + 1, and update its test", ["src/lib.rs"], changes_tests=True
    )
    server.script(
        "implement",
        edit("src/lib.rs", "    a + b\n}", "    a + b + 1\n}")
        + "\n"
        + edit("src/lib.rs", "assert_eq!(add(2, 3), 5);", "assert_eq!(add(2, 3), 6);"),
    )
    server.script("gate_test_change", "yes")

    code, repo = solve(
        tmp_path,
        server,
        "add(a, b) must return a + b + 1 from now on; update its test to expect that",
        lib=fixed,
    )
    out = capsys.readouterr().out

    assert code == 0, out
    assert "status: complete" in out
    assert "Tests changed" in out and "tests::adds" in out
    [question] = [r for r in server.requests if r.stage == "gate_test_change"]
    assert "add(a, b) must return a + b + 1" in question.user_prompt
    _, lib = branch_diff(repo)
    assert "a + b + 1" in lib and "assert_eq!(add(2, 3), 6);" in lib


DOC_TEST = "/// assert_eq!(calc::mul(2, 3), 6);"
DOCUMENTED_LIB_RS = LIB_RS.replace(
    BUG, f"/// Multiplies.\n///\n/// ```\n{DOC_TEST}\n/// ```\n{BUG}"
).replace(f"\n    #[test]\n    fn muls() {{\n{MUL_TEST}\n    }}\n", "\n")


@requires_cargo
def test_a_rewritten_rust_doc_test_is_refused_and_the_real_fix_lands(
    tmp_path: Path, server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    script_plan(server, "Fix mul in src/lib.rs", ["src/lib.rs"])
    server.script("implement", edit("src/lib.rs", DOC_TEST, DOC_TEST.replace("6)", "5)")))
    server.script("implement_retry", FIX)

    code, repo = solve(tmp_path, server, "src/lib.rs - mul fails: fix mul", lib=DOCUMENTED_LIB_RS)
    out = capsys.readouterr().out

    assert code == 0, out
    assert "status: complete" in out
    retry = next(r for r in server.requests if r.stage == "implement_retry")
    assert "src/lib.rs: doctest examples changed or removed (its doc comments)" in retry.user_prompt
    assert "the step must make pass still fail: src/lib.rs - mul" in retry.user_prompt
    files, lib = branch_diff(repo)
    assert files == ["src/lib.rs"]
    assert lib == DOCUMENTED_LIB_RS.replace(BUG, FIXED)
