"""The setup step while mining: a failed one is explained (its command, how it ended, its
output's last lines) in the journal and the summary."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from agent.bench.mining.journal import Outcome, journal_path
from agent.bench.mining.mine import SETUP_FAILED, MineOptions, failed_setups, mine
from agent.bench.trees import TestBed
from tests.bench.history import History, bed

pytestmark = pytest.mark.usefixtures("isolated_git")

FAILING = "echo 'added 3 packages'; echo 'npm ERR! git dep: no route to git.example' >&2; exit 128"


def with_setup(test_bed: TestBed, command: str, **testing: object) -> TestBed:
    update = {"setup_command": command, **testing}
    return replace(test_bed, testing=test_bed.testing.model_copy(update=update))


def test_a_failed_setup_is_explained_in_the_journal(history: History, tmp_path: Path) -> None:
    journal = journal_path(tmp_path / "tasks.jsonl")
    test_bed = with_setup(bed(history.repo, tmp_path), FAILING)
    mine(history.repo, test_bed, MineOptions(), journal=journal)

    lines = journal.read_text(encoding="utf-8").splitlines()[1:]  # after the settings
    failed = [o for o in map(Outcome.model_validate_json, lines) if o.reason == SETUP_FAILED]
    assert failed and all(o.kind == "skipped" for o in failed)
    detail = failed[0].detail
    assert detail.startswith(f"the setup step ({FAILING}) exited with status 128")
    assert "    added 3 packages\n    npm ERR! git dep: no route to git.example" in detail


def test_the_summary_says_once_what_the_failed_setups_said(
    history: History, tmp_path: Path
) -> None:
    mined = mine(history.repo, with_setup(bed(history.repo, tmp_path), FAILING), MineOptions())
    [said] = failed_setups(mined)
    count = mined.skipped[SETUP_FAILED]
    assert said.startswith(f"the setup step failed at {count} commit(s) (")
    assert "exited with status 128; its output ended:\n    added 3 packages\n" in said
