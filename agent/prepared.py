"""Statements compiled once per dialect and run on a raw DB-API connection, for hot paths."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import Dialect
from sqlalchemy.sql.expression import Executable

Processor = Callable[[Any], Any]


class _Compiled:
    """One statement's SQL for a dialect: the text, its parameters and their processing."""

    def __init__(self, statement: Executable, dialect: Dialect) -> None:
        compiled = statement.compile(dialect=dialect)  # type: ignore[attr-defined]
        self.sql: str = compiled.string
        self.order: list[str] | None = list(compiled.positiontup) if dialect.positional else None
        # parameters the statement carries itself (LIMIT 1 and the like)
        self.defaults = {name: bind.effective_value for name, bind in compiled.binds.items()
                         if bind.value is not None}  # fmt: skip
        self.processors: dict[str, Processor] = {}
        for name, bind in compiled.binds.items():
            processor = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if processor is not None:
                self.processors[name] = processor

    def parameters(self, values: Mapping[str, Any]) -> list[Any] | dict[str, Any]:
        """The DB-API parameters for `values`, each through its column type's processor."""
        given = {**self.defaults, **values}
        bound = {name: self.processors[name](value) if name in self.processors else value
                 for name, value in given.items()}  # fmt: skip
        return [bound[name] for name in self.order] if self.order is not None else bound


class Prepared:
    """A statement built and compiled once per dialect, executed on a DB-API connection.

    For the few statements every webhook delivery runs: SQLAlchemy's per-execution work (the
    Connection, cache key, parameter processing, result wrapping) costs more there than the
    write itself. Values still go through each column type's bind processor, as SQLAlchemy
    would send them.
    """

    def __init__(self, build: Callable[[str], Executable]) -> None:
        self._build = build  # dialect name → the statement (upserts differ by dialect)
        self._compiled: dict[str, _Compiled] = {}

    def first(self, connection: Any, dialect: Dialect, values: Mapping[str, Any]) -> Any | None:
        """Run the statement with `values` on a DB-API connection (in its transaction); the
        first row it returns, or None."""
        compiled = self._compiled.get(dialect.name)
        if compiled is None:
            compiled = self._compiled[dialect.name] = _Compiled(self._build(dialect.name), dialect)
        cursor = connection.cursor()
        try:
            cursor.execute(compiled.sql, compiled.parameters(values))
            return cursor.fetchone() if cursor.description else None
        finally:
            cursor.close()
