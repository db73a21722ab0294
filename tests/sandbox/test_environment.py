"""agent.run.environment and agent.sandbox.envcache: the setup step and the cache that skips
it."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent.config.files import TestingConfig
from agent.gate.validation import run_validation
from agent.models import EnvironmentReport
from agent.run.environment import Environment, prepare_environment
from agent.sandbox.base import NoSandbox, Sandbox
from agent.sandbox.bwrap import BwrapSandbox
from agent.sandbox.envcache import (
    Entry,
    EnvCache,
    _remove_if_free,
    install_advice,
    matches_input,
    repo_id,
    setup_key,
)
from tests.fakes.package_index import PackageIndex, build_wheel
from tests.fakes.repos import commit_file, git_in, make_python_project

pytestmark = pytest.mark.usefixtures("isolated_git")

MakeBwrap = Callable[..., BwrapSandbox]
PY = shlex.quote(sys.executable)
HELPER_TEST = "import helperpkg\n\n\ndef test_helper():\n    assert helperpkg.VALUE == 42\n"


@pytest.fixture
def index(tmp_path: Path) -> Iterator[PackageIndex]:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    build_wheel(wheels, "helperpkg", "1.0", {"helperpkg/__init__.py": "VALUE = 42\n"})
    with PackageIndex(wheels) as served:
        yield served


def config_for(index: PackageIndex, **extra: object) -> TestingConfig:
    """pip installs helperpkg from the local index into $CRA_ENV; the tests import it."""
    setup = (
        f"{PY} -m pip install --quiet --disable-pip-version-check --no-input "
        f'{index.pip_args} --target "$CRA_ENV/site" helperpkg'
    )
    return TestingConfig.model_validate(
        {
            "setup_command": setup,
            "test_command": f'PYTHONPATH="$CRA_ENV/site" {PY} -m pytest -q -p no:cacheprovider',
            **extra,
        }
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_python_project(tmp_path / "repo", bug=False, config=None)
    commit_file(root, "tests/test_helper.py", HELPER_TEST, "Test the helper package")
    commit_file(root, "requirements.txt", "helperpkg==1.0\n", "Require helperpkg")
    return root


def prepare(
    repo: Path, testing: TestingConfig, sandbox: Sandbox, cache: EnvCache | None, env_dir: Path
) -> Environment:
    return prepare_environment(
        repo, repo, testing, sandbox=sandbox, environ=dict(os.environ), env_dir=env_dir, cache=cache
    )


# --- keys ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("package.json", True),
        ("web/app/package.json", True),
        ("requirements-dev.txt", True),
        ("requirements/test.txt", True),
        ("src/calc/ops.py", False),
        ("docs/requirements.md", False),
    ],
)
def test_setup_inputs_name_files_at_any_depth_or_by_path(path: str, expected: bool) -> None:
    patterns = TestingConfig().setup_inputs
    assert matches_input(path, patterns) is expected


def test_the_key_follows_the_dependency_files_not_the_code(repo: Path) -> None:
    inputs = TestingConfig().setup_inputs
    first = setup_key(repo, "pip install -r requirements.txt", inputs, {"PATH": "/usr/bin"})
    commit_file(repo, "calc/ops.py", "# changed\n", "Change code")
    assert setup_key(repo, "pip install -r requirements.txt", inputs, {"PATH": "/usr/bin"}) == first
    assert setup_key(repo, "pip install .", inputs, {"PATH": "/usr/bin"}) != first
    commit_file(repo, "requirements.txt", "helperpkg==2.0\n", "Bump helperpkg")
    assert setup_key(repo, "pip install -r requirements.txt", inputs, {"PATH": "/usr/bin"}) != first


def test_repo_ids_differ_by_path_and_read_as_the_name(tmp_path: Path) -> None:
    a, b = repo_id(tmp_path / "a" / "calc.git"), repo_id(tmp_path / "b" / "calc.git")
    assert a != b and a.startswith("calc-") and b.startswith("calc-")


# --- the setup step and its cache ----------------------------------------------------------------


def test_setup_installs_what_the_tests_need_and_the_next_run_reuses_it(
    bwrap: MakeBwrap, repo: Path, index: PackageIndex, tmp_path: Path
) -> None:
    testing = config_for(index)
    sandbox = bwrap(allow_addresses=index.allowed)
    cache = EnvCache(tmp_path / "cache", max_bytes=1 << 30)
    (tmp_path / "empty").mkdir()
    without = run_validation(
        repo, testing, environ=dict(os.environ), sandbox=sandbox.with_env(tmp_path / "empty")
    )
    assert not without.success and "No module named 'helperpkg'" in (without.test_output or "")

    first = prepare(repo, testing, sandbox, cache, tmp_path / "env1")
    assert first.report.setup == "ran", first.setup
    tests = run_validation(
        repo, testing, environ=dict(os.environ), sandbox=sandbox.with_env(first.path)
    )
    assert tests.success, tests.test_output

    second = prepare(repo, testing, sandbox, cache, tmp_path / "env2")
    assert second.report.setup == "cached" and second.report.cache_key == first.report.cache_key
    assert index.downloads == ["helperpkg-1.0-py3-none-any.whl"]  # fetched once
    again = run_validation(
        repo, testing, environ=dict(os.environ), sandbox=sandbox.with_env(second.path)
    )
    assert again.success, again.test_output


def test_tests_run_without_network_while_the_setup_had_it(
    bwrap: MakeBwrap, repo: Path, index: PackageIndex, tmp_path: Path
) -> None:
    page = index.url + "helperpkg/"
    code = f"import urllib.request; urllib.request.urlopen({page!r}, timeout=5)"
    testing = config_for(index, test_command=f"{PY} -c {shlex.quote(code)}")
    sandbox = bwrap(allow_addresses=index.allowed)  # the index: the operator's private mirror
    env = prepare(repo, testing, sandbox, None, tmp_path / "env")
    assert env.report.setup == "ran"
    result = run_validation(
        repo, testing, environ=dict(os.environ), sandbox=sandbox.with_env(env.path)
    )
    assert not result.success and "Network is unreachable" in (result.test_output or "")
    online = testing.model_copy(update={"network": True})  # a repository that asks for it
    assert run_validation(
        repo, online, environ=dict(os.environ), sandbox=sandbox.with_env(env.path)
    ).success


def test_a_changed_dependency_file_runs_the_setup_again(
    bwrap: MakeBwrap, repo: Path, index: PackageIndex, tmp_path: Path
) -> None:
    testing, cache = config_for(index), EnvCache(tmp_path / "cache", max_bytes=1 << 30)
    sandbox = bwrap(allow_addresses=index.allowed)
    assert prepare(repo, testing, sandbox, cache, tmp_path / "e1").report.setup == "ran"
    commit_file(repo, "requirements.txt", "helperpkg>=1.0\n", "Loosen the pin")
    assert prepare(repo, testing, sandbox, cache, tmp_path / "e2").report.setup == "ran"
    assert len(index.downloads) == 2


def test_a_failed_setup_is_reported_and_not_cached(
    bwrap: MakeBwrap, repo: Path, tmp_path: Path
) -> None:
    testing = TestingConfig(setup_command="echo installing; exit 7", test_command="true")
    cache = EnvCache(tmp_path / "cache", max_bytes=1 << 30)
    env = prepare(repo, testing, bwrap(), cache, tmp_path / "env")
    assert env.report.setup == "failed"
    assert env.setup is not None and env.setup.exit_code == 7
    assert "installing" in env.setup.output
    assert not list((tmp_path / "cache").glob("*/*/meta.json"))


def test_a_failed_setup_says_its_command_status_and_last_lines_with_secrets_masked(
    bwrap: MakeBwrap, repo: Path, tmp_path: Path
) -> None:
    noisy = "for n in $(seq 1 50); do echo step $n; done"
    command = f"{noisy}; echo 'fetch https://me:pw123456@git.example/dep.git' >&2; exit 128"
    testing = TestingConfig(setup_command=command, test_command="true")
    env = prepare(repo, testing, bwrap(), None, tmp_path / "env")
    failure = env.report.failure
    assert failure is not None
    assert failure.headline().startswith(f"the setup step ({noisy}; echo 'fetch https://")
    assert failure.ended() == "exited with status 128"
    assert failure.last_line() == "fetch https://[redacted]@git.example/dep.git"
    assert "step 50" in failure.tail and "step 1\n" not in failure.tail
    assert "pw123456" not in failure.explained()


def test_a_setup_over_its_time_says_it_timed_out(
    bwrap: MakeBwrap, repo: Path, tmp_path: Path
) -> None:
    testing = TestingConfig(
        setup_command="echo resolving; sleep 30", setup_timeout=1, test_command="true"
    )
    failure = prepare(repo, testing, bwrap(), None, tmp_path / "env").report.failure
    assert failure is not None and failure.ended() == "timed out after 1 s"
    assert "resolving" in failure.tail


def test_setup_files_left_in_the_worktree_are_restored_when_ignored(
    bwrap: MakeBwrap, repo: Path, tmp_path: Path
) -> None:
    commit_file(repo, ".gitignore", "node_modules/\n__pycache__/\n", "Ignore node_modules")
    testing = TestingConfig(
        setup_command="mkdir -p node_modules/left && echo pad > node_modules/left/index.js",
        test_command="true",
    )
    cache = EnvCache(tmp_path / "cache", max_bytes=1 << 30)
    first = prepare(repo, testing, bwrap(), cache, tmp_path / "env1")
    assert first.report.setup == "ran" and first.tree_paths == ["node_modules"]
    fresh = tmp_path / "fresh"
    os.rename(repo / "node_modules", tmp_path / "moved")
    second = prepare(repo, testing, bwrap(), cache, tmp_path / "env2")
    assert second.report.setup == "cached"
    assert (repo / "node_modules" / "left" / "index.js").read_text() == "pad\n"
    fresh.mkdir()
    second.attach(repo, fresh)  # a scratch tree of the same commit gets them too
    assert (fresh / "node_modules" / "left" / "index.js").is_file()


@pytest.mark.parametrize("link", ["node_modules", "cfg.local"])
def test_a_cached_setup_is_never_restored_through_a_symlink_of_the_checkout(
    bwrap: MakeBwrap, repo: Path, tmp_path: Path, link: str
) -> None:
    """A later commit (same dependency files, same key) puts a symlink where the cached
    setup's files go, pointing outside the checkout (another repository's mirror, the run
    log): restoring would copy through it as the worker, outside the sandbox. Nothing is
    restored; the setup runs afresh, in the sandbox, and says why."""
    commit_file(repo, ".gitignore", "node_modules/\ncfg.local\n__pycache__/\n", "Ignore")
    testing = TestingConfig(
        setup_command="mkdir -p node_modules && echo pad > node_modules/"
        "config; echo pad > cfg.local; true",
        test_command="true",
    )
    cache = EnvCache(tmp_path / "cache", max_bytes=1 << 30)
    first = prepare(repo, testing, bwrap(), cache, tmp_path / "env1")
    assert first.report.setup == "ran" and sorted(first.tree_paths) == ["cfg.local", "node_modules"]
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("config", "cfg"):
        (outside / name).write_text("kept\n")
    shutil.rmtree(repo / "node_modules")
    (repo / "cfg.local").unlink()
    os.symlink(
        os.path.relpath(outside if link == "node_modules" else outside / "cfg", repo), repo / link
    )
    git_in(repo, "add", "--force", "--", link)
    git_in(repo, "commit", "--quiet", "--no-verify", "-m", "Link")
    second = prepare(repo, testing, bwrap(), cache, tmp_path / "env2")
    assert second.report.cache_key == first.report.cache_key
    assert [(outside / name).read_text() for name in ("config", "cfg")] == ["kept\n"] * 2
    assert second.report.setup == "ran"
    assert any(f"{link} in the checkout is a symlink" in note for note in second.report.notes)


def test_setup_files_are_never_attached_through_a_symlink_of_the_tree(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "node_modules" / "left").mkdir(parents=True)
    (repo / "node_modules" / "left" / "index.js").write_text("pad\n")
    outside, scratch = tmp_path / "outside", tmp_path / "scratch"
    outside.mkdir()
    scratch.mkdir()
    (scratch / "node_modules").symlink_to(outside)  # left by a test command, say
    env = Environment(
        tmp_path / "env",
        EnvironmentReport(sandbox="none", isolated=False),
        tree_paths=["node_modules/left"],
    )
    env.attach(repo, scratch)
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize(
    ("command", "note"),
    [
        ("echo changed >> requirements.txt", "changed tracked files (requirements.txt)"),
        ("echo x > stray.txt", "untracked files that are not git-ignored (stray.txt)"),
    ],
)
def test_a_setup_that_changes_the_repository_is_not_cached(
    bwrap: MakeBwrap, repo: Path, tmp_path: Path, command: str, note: str
) -> None:
    testing = TestingConfig(setup_command=command, test_command="true")
    cache = EnvCache(tmp_path / "cache", max_bytes=1 << 30)
    env = prepare(repo, testing, bwrap(), cache, tmp_path / "env")
    assert env.report.setup == "ran" and any(note in n for n in env.report.notes)
    assert env.setup is not None and note in env.setup.output
    assert not list((tmp_path / "cache").glob("*/*/meta.json"))


def test_a_setup_writing_a_lock_file_the_repository_lacks_is_never_told_npm_ci(
    bwrap: MakeBwrap, repo: Path, tmp_path: Path
) -> None:
    commit_file(repo, "package.json", '{"name": "calc"}\n', "Add a manifest, no lock file")
    testing = TestingConfig(setup_command="echo {} > package-lock.json", test_command="true")
    env = prepare(repo, testing, bwrap(), None, tmp_path / "env")
    [note] = env.report.notes
    assert "(package-lock.json)" in note and "npm ci" not in note
    assert "npm install --no-package-lock" in note


def test_a_setup_rewriting_the_lock_file_the_repository_holds_is_told_npm_ci(
    bwrap: MakeBwrap, repo: Path, tmp_path: Path
) -> None:
    commit_file(repo, "web/package-lock.json", "{}\n", "Add a lock file")
    testing = TestingConfig(
        setup_command="echo '{\"v\": 3}' > web/package-lock.json", test_command="true"
    )
    env = prepare(repo, testing, bwrap(), None, tmp_path / "env")
    [note] = env.report.notes
    assert "changed tracked files (web/package-lock.json)" in note
    assert "npm ci installs from package-lock.json without rewriting it" in note


@pytest.mark.parametrize(
    ("written", "tracked", "advice"),
    [
        (["yarn.lock"], ["yarn.lock"], "yarn install --frozen-lockfile"),
        (["Cargo.lock"], ["Cargo.toml"], "the repository has no Cargo.lock"),
        (["src/generated.py"], ["src/generated.py"], "leaves the repository as it is"),
    ],
)
def test_the_advice_follows_the_lock_files_the_repository_holds(
    written: list[str], tracked: list[str], advice: str
) -> None:
    assert advice in install_advice(written, tracked)


def test_unsandboxed_the_setup_runs_every_time(repo: Path, tmp_path: Path) -> None:
    testing = TestingConfig(setup_command='echo ran >> "$CRA_ENV/log"', test_command="true")
    cache = EnvCache(tmp_path / "cache", max_bytes=1 << 30)
    for n in (1, 2):
        env = prepare(repo, testing, NoSandbox(), cache, tmp_path / f"env{n}")
        assert env.report.setup == "ran"
        assert "the environment cache needs the bwrap sandbox" in env.report.notes
        assert (env.path / "log").read_text() == "ran\n"


@pytest.mark.timeout(120)
def test_two_runs_of_one_repository_starting_together_build_once(
    bwrap: MakeBwrap, repo: Path, tmp_path: Path
) -> None:
    """Run a builds (held in its setup by a fifo) while run b starts: b waits, then reuses."""
    testing = TestingConfig(
        setup_command='cat "$CRA_ENV/gate" > /dev/null; rm "$CRA_ENV/gate"; '
        'echo built > "$CRA_ENV/made"',
        test_command="true",
    )
    cache = EnvCache(tmp_path / "cache", max_bytes=1 << 30)
    results: dict[str, Environment] = {}

    def run(name: str) -> None:
        results[name] = prepare(repo, testing, bwrap(), cache, tmp_path / name)

    (tmp_path / "a").mkdir()
    os.mkfifo(tmp_path / "a" / "gate")
    first = threading.Thread(target=run, args=("a",))
    first.start()
    with open(tmp_path / "a" / "gate", "w") as gate:  # opens once a's setup reads it
        second = threading.Thread(target=run, args=("b",))
        second.start()
        gate.write("go\n")
    first.join(60)
    second.join(60)
    assert (results["a"].report.setup, results["b"].report.setup) == ("ran", "cached")
    assert all((r.path / "made").read_text() == "built\n" for r in results.values())
    assert len(list((tmp_path / "cache").glob("*/*/meta.json"))) == 1


# --- eviction ------------------------------------------------------------------------------------


def saved(cache: EnvCache, tmp_path: Path, name: str, size: int, used: float) -> Path:
    env = tmp_path / f"src-{name}"
    env.mkdir()
    (env / "blob").write_bytes(b"x" * size)
    entry = cache.entry("repo", name)
    with cache.building(entry):
        cache.save(entry, env, tmp_path, [], {"command": "x"})
    os.utime(entry.path / "used", (used, used))
    return entry.path


def test_eviction_drops_the_least_recently_used_entries_beyond_the_bound(
    tmp_path: Path,
) -> None:
    cache = EnvCache(tmp_path / "cache", max_bytes=10_000_000)
    old = saved(cache, tmp_path, "old", 400, used=1_000)
    recent = saved(cache, tmp_path, "recent", 400, used=3_000)
    middle = saved(cache, tmp_path, "middle", 400, used=2_000)
    cache.max_bytes = 900
    assert cache.evict() == [old]
    assert not old.exists() and recent.exists() and middle.exists()


def test_an_entry_being_restored_is_never_evicted(tmp_path: Path) -> None:
    cache = EnvCache(tmp_path / "cache", max_bytes=10_000_000)
    busy = saved(cache, tmp_path, "busy", 400, used=1_000)
    idle = saved(cache, tmp_path, "idle", 400, used=2_000)
    cache.max_bytes = 500
    with cache.reading(cache.entry("repo", "busy")) as exists:
        assert exists
        assert cache.evict() == [idle]
    assert busy.exists() and not idle.exists()


def test_an_entry_another_eviction_removed_first_is_passed_over(tmp_path: Path) -> None:
    # two runs saving at once (`cra bench mine --jobs 2`) both evict; the one that listed the
    # entry before the other removed it must pass it over, not crash its run
    cache = EnvCache(tmp_path / "cache", max_bytes=10_000_000)
    path = saved(cache, tmp_path, "old", 400, used=1_000)
    assert _remove_if_free(Entry(path)) is True
    assert _remove_if_free(Entry(path)) is False
    assert not path.exists()


def test_an_entry_being_saved_is_never_counted_or_evicted(tmp_path: Path) -> None:
    cache = EnvCache(tmp_path / "cache", max_bytes=0)
    staging = tmp_path / "cache" / "repo" / ".staging-abc"
    staging.mkdir(parents=True)
    (staging / "meta.json").write_text('{"bytes": 999}')
    (staging / "used").touch()
    assert cache.evict() == []
    assert staging.exists()
