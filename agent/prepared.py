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
        names = list(compiled.positiontup) if dialect.positional else list(compiled.binds)
        self.positional = bool(dialect.positional)
        # parameters the statement carries itself (LIMIT 1 and the like)
        self.defaults = {name: bind.effective_value for name, bind in compiled.binds.items()
                         if bind.value is not None}  # fmt: skip
        self.steps: list[tuple[str, Processor | None]] = [
            (name, compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect))
            for name in names
        ]

    def parameters(self, values: Mapping[str, Any]) -> list[Any] | dict[str, Any]:
        """The DB-API parameters for `values`, each through its column type's processor."""
        bound = []
        for name, processor in self.steps:
            value = values[name] if name in values else self.defaults[name]
            bound.append(value if processor is None else processor(value))
        if self.positional:
            return bound
        return {name: value for (name, _), value in zip(self.steps, bound, strict=True)}


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
