"""Shared by the bench tests: git isolated from the machine's configuration, and a mined
history's repository built once per module."""

from __future__ import annotations

import os

import pytest

from tests.bench.history import History, build_history
from tests.fakes.repos import ISOLATED_GIT_ENV


@pytest.fixture
def isolated_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """Git without the machine's own config (a module asks for it with `usefixtures`)."""
    for key, value in ISOLATED_GIT_ENV.items():
        monkeypatch.setenv(key, value)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    """The fix history of tests/bench/history.py, as a repository."""
    os.environ.update(ISOLATED_GIT_ENV)
    return build_history(tmp_path_factory.mktemp("history") / "repo")
