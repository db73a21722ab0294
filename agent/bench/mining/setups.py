"""The setup steps of one mine: a failed one remembered by its cache key, and the fixes that
change the setup's inputs.

A setup step that fails for one commit fails the same way for every commit with the same
dependency files (the same key of the environment cache): those are left out without running it
again, with the first one's explanation and its commit's name (`set_up`). The failure is kept in
memory only, for the mine that met it — never in the cache, never in a resumed mine: a network
glitch must not outlive the mine it hit. The first commit of a key sets it up while the others of
that key wait for it (the cache's own lock makes them wait anyway), so that a failure is met once
however many jobs run; once a key has worked, nobody waits for it and no later failure of it is
remembered (a key that worked is not one that fails).

A fix whose patch changes a setup input (`changed_inputs`: package.json, a requirements file…)
is tested after the fix in an environment set up from the fixed tree (agent.bench.mining.testruns).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from dataclasses import dataclass
from pathlib import Path

from agent.bench.trees import Prepared, TestBed, prepared
from agent.config.files import TestingConfig
from agent.errors import SetupError
from agent.models import SetupFailure
from agent.run.environment import environment_key
from agent.sandbox.envcache import matches_input


@dataclass(frozen=True)
class FailedSetup:
    """A setup step that failed in this mine: the commit whose replay ran it, and how."""

    commit: str
    failure: SetupFailure


def changed_inputs(paths: Iterable[str], testing: TestingConfig) -> list[str]:
    """The setup's inputs among `paths` (none when there is no setup step)."""
    if not testing.setup_command:
        return []
    return [path for path in paths if matches_input(path, testing.setup_inputs)]


def remembered(failed: Mapping[str, FailedSetup], worked: Set[str], key: str) -> FailedSetup | None:
    """The failure this mine met setting `key` up, unless the key worked too."""
    return None if key in worked else failed.get(key)


class SetupMemo:
    """The setups of one mine by cache key: those that failed and those that worked."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failed: dict[str, FailedSetup] = {}
        self._worked: set[str] = set()
        self._turns: dict[str, threading.Lock] = {}

    @contextlib.contextmanager
    def turn(self, key: str) -> Iterator[FailedSetup | None]:
        """The right to set `key` up: at once when it has worked, else once no other commit is
        setting it up; yields the failure met setting it up before, if any."""
        with self._lock:
            worked = key in self._worked
            turn = self._turns.setdefault(key, threading.Lock())
        if worked:
            yield None
            return
        with turn:
            with self._lock:
                earlier = remembered(self._failed, self._worked, key)
            yield earlier

    def failed(self, key: str, setup: FailedSetup) -> None:
        """`key`'s setup failed (the first failure is the one told)."""
        with self._lock:
            self._failed.setdefault(key, setup)

    def worked(self, key: str) -> None:
        """`key`'s setup worked (or was restored from the cache)."""
        with self._lock:
            self._worked.add(key)


@contextlib.contextmanager
def set_up(
    tree: Path,
    repo: Path,
    bed: TestBed,
    memo: SetupMemo,
    commit: str,
    announce: Callable[[str], None] | None = None,
) -> Iterator[Prepared]:
    """`prepared(tree, …)` for the replay of `commit`, unless this mine met the same setup (its
    key) failing: then SetupError naming the commit that met it, the setup not run again.
    SetupError too when it fails now, remembered for the rest of the mine."""
    if not bed.testing.setup_command:
        with prepared(tree, repo, bed, announce) as ready:
            yield ready
        return
    key = environment_key(tree, bed.testing, bed.environ)
    with contextlib.ExitStack() as stack:
        with memo.turn(key) as earlier:
            if earlier is not None:
                raise SetupError(earlier.failure, first=earlier.commit)
            try:
                ready = stack.enter_context(prepared(tree, repo, bed, announce))
            except SetupError as exc:
                memo.failed(key, FailedSetup(commit, exc.failure))
                raise
            memo.worked(key)
        yield ready
