"""Migration 0005 on a database that already holds repeated "busy" replies (one per delivery,
as before it): the first per active run stays, the others are renamed, the index builds."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import text

from agent.runlog.database import build_engine
from agent.runlog.migrate import migrations_location


def test_repeated_busy_replies_are_kept_as_busy_repeat(tmp_path: Path) -> None:
    engine = build_engine(f"sqlite:///{tmp_path / 'old.db'}")
    config = Config()
    config.set_main_option("script_location", migrations_location())
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "0002")
            for run_id, command_name, related in (
                (1, "solve", None),
                (2, "busy", 1),
                (3, "busy", 1),
                (4, "busy", 1),
            ):
                connection.execute(
                    text(
                        "INSERT INTO runs (id, status, command, source, actor, repository, "
                        "issue_number, is_pull_request, instructions, related_run_id, "
                        "cancel_requested, created_at) VALUES (:id, 'succeeded', :command, "
                        "'label', 'a', 'o/r', 1, false, '', :related, false, "
                        "'2026-01-01 00:00:00')"
                    ),
                    {"id": run_id, "command": command_name, "related": related},
                )
            command.upgrade(config, "head")
            rows = connection.execute(text("SELECT id, command FROM runs ORDER BY id")).all()
        assert [tuple(r) for r in rows] == [
            (1, "solve"),
            (2, "busy"),
            (3, "busy_repeat"),
            (4, "busy_repeat"),
        ]
    finally:
        engine.dispose()
