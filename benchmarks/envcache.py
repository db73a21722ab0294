"""The environment cache: the second run of a repository skips its setup step.

A real repository (the calc project) whose tests import packages it does not have; its
`testing.setup_command` makes a virtualenv in $CRA_ENV and pip-installs them from a local package
index (PEP 503 on loopback, wheels built here: no internet). `prepare_environment` runs twice in
the bwrap sandbox with one environment cache: the first run executes the setup, the second
restores the cached environment. Both environments then run the repository's tests. Prints the
time of both runs and their ratio, measured in the same process (`--repeat` times, medians), and
the sandbox's own cost per command (bwrap against none, running `true`).

Run: .venv/bin/python benchmarks/envcache.py [--packages 30] [--modules 40] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the package index and repo builders live in tests/fakes

from agent.config.files import TestingConfig  # noqa: E402
from agent.gate.validation import run_validation  # noqa: E402
from agent.run.environment import prepare_environment  # noqa: E402
from agent.sandbox.base import NoSandbox, Sandbox  # noqa: E402
from agent.sandbox.bwrap import build_sandbox  # noqa: E402
from agent.sandbox.commands import run_command  # noqa: E402
from agent.sandbox.envcache import EnvCache  # noqa: E402
from tests.fakes.package_index import PackageIndex, build_wheel  # noqa: E402
from tests.fakes.repos import ISOLATED_GIT_ENV, commit_file, make_python_project  # noqa: E402

MODULE = "def f{n}(x):\n    return x + {n}\n" * 20


def build_index(wheels: Path, packages: int, modules: int) -> list[str]:
    """`packages` wheels of `modules` modules each; their names."""
    names = [f"benchpkg{i:03d}" for i in range(packages)]
    for name in names:
        files = {f"{name}/m{j}.py": MODULE.format(n=j) for j in range(modules)}
        files[f"{name}/__init__.py"] = "VALUE = 42\n"
        build_wheel(wheels, name, "1.0", files)
    return names


def project(root: Path, names: list[str]) -> Path:
    """The calc project, requiring the packages and testing that they import."""
    repo = make_python_project(root, bug=False, config=None)
    commit_file(repo, "requirements.txt", "".join(f"{n}==1.0\n" for n in names), "Require")
    test = "".join(f"import {n}\n" for n in names) + "\n\ndef test_all():\n    assert True\n"
    commit_file(repo, "tests/test_deps.py", test, "Import every requirement")
    return repo


def testing(index: PackageIndex) -> TestingConfig:
    python = shlex.quote(sys.executable)
    setup = (
        f'{python} -m venv "$CRA_ENV" && "$CRA_ENV/bin/pip" install --quiet '
        f"--disable-pip-version-check {index.pip_args} -r requirements.txt"
    )
    # pytest comes from this interpreter (no wheel of it here); the packages from the venv
    site = '$(echo "$CRA_ENV"/lib/python3*/site-packages)'
    tests = f'PYTHONPATH="{site}" {python} -m pytest -q -p no:cacheprovider'
    return TestingConfig(setup_command=setup, test_command=tests, timeout=300)


def one_round(
    tmp: Path, repo: Path, config: TestingConfig, sandbox: Sandbox
) -> tuple[float, float]:
    """Seconds of the first (setup) and the second (cached) preparation; both must pass."""
    cache = EnvCache(tmp / "cache", max_bytes=1 << 34)
    seconds = []
    for name, expected in (("first", "ran"), ("second", "cached")):
        started = time.perf_counter()
        env = prepare_environment(
            repo,
            repo,
            config,
            sandbox=sandbox,
            environ=dict(os.environ),
            env_dir=tmp / name,
            cache=cache,
        )
        seconds.append(time.perf_counter() - started)
        assert env.report.setup == expected, (env.report, env.setup)
        result = run_validation(
            repo, config, environ=dict(os.environ), sandbox=sandbox.with_env(env.path)
        )
        assert result.success, result.test_output
        env.close()
    return seconds[0], seconds[1]


def command_cost(tmp: Path, sandbox: Sandbox, n: int = 20) -> float:
    """Median seconds to run `true` in `sandbox`."""
    times = []
    for _ in range(n):
        started = time.perf_counter()
        run_command(
            "true",
            tmp,
            sandbox=sandbox,
            timeout=30,
            env={"PATH": "/usr/bin:/bin"},
            max_output_chars=1000,
        )
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    """Run and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", type=int, default=30)
    parser.add_argument("--modules", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ.update(ISOLATED_GIT_ENV)
    sandbox = build_sandbox("bwrap")
    with tempfile.TemporaryDirectory(prefix="cra-bench-envcache-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "wheels").mkdir()
        names = build_index(tmp / "wheels", args.packages, args.modules)
        repo = project(tmp / "repo", names)
        firsts, seconds = [], []
        with PackageIndex(tmp / "wheels") as index:
            for n in range(args.repeat):
                first, second = one_round(tmp / f"round{n}", repo, testing(index), sandbox)
                firsts.append(first)
                seconds.append(second)
        bwrap_cost, none_cost = command_cost(tmp, sandbox), command_cost(tmp, NoSandbox())
    first, second = statistics.median(firsts), statistics.median(seconds)
    print(
        f"setup: venv + pip install of {args.packages} packages × {args.modules} modules "
        f"from a local index; {args.repeat} rounds, medians"
    )
    print(f"  first run (setup runs)        {first:7.2f} s")
    print(f"  second run (cache restored)   {second:7.2f} s")
    print(f"  ratio first / second          {first / second:7.1f} ×")
    print(
        f"sandbox cost per command (true): bwrap {bwrap_cost * 1000:.0f} ms, "
        f"none {none_cost * 1000:.0f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
