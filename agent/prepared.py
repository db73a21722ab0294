"""Statements compiled once per dialect and run on the raw DB-API cursor, for hot paths."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import Connection, Dialect
from sqlalchemy.sql.expression import Executable

Processor = Callable[[Any], Any]


class Prepared:
    """One statement, built and compiled once per dialect, executed on the connection's DB-API
    cursor inside its transaction.

    For the few statements every webhook delivery runs: SQLAlchemy's per-execution work (cache
    key, parameter processing, result wrapping) costs more there than the write itself. Values
    still go through each column type's bind processor, as SQLAlchemy would send them.
    """

    def __init__(self, build: Callable[[str], Executable]) -> None:
        self._build = build  # dialect name → the statement (upserts differ by dialect)
        self._compiled: dict[str, tuple[str, list[str] | None, dict[str, Processor]]] = {}

    def _for(self, dialect: Dialect) -> tuple[str, list[str] | None, dict[str, Processor]]:
        """The SQL text, the order of positional parameters, and the bind processors."""
        found = self._compiled.get(dialect.name)
        if found is None:
            compiled = self._build(dialect.name).compile(dialect=dialect)  # type: ignore[attr-defined]
            processors = {}
            for name, bind in compiled.binds.items():
                processor = bind.type.dialect_impl(dialect).bind_processor(dialect)
                if processor is not None:
                    processors[name] = processor
            order = list(compiled.positiontup) if dialect.positional else None
            found = (compiled.string, order, processors)
            self._compiled[dialect.name] = found
        return found

    def first(self, connection: Connection, values: Mapping[str, Any]) -> Any | None:
        """Run the statement with `values` in the connection's transaction; the first row it
        returns (RETURNING), or None."""
        sql, order, processors = self._for(connection.dialect)
        bound = {name: processors[name](value) if name in processors else value
                 for name, value in values.items()}  # fmt: skip
        cursor = connection.connection.cursor()
        try:
            cursor.execute(sql, [bound[name] for name in order] if order is not None else bound)
            return cursor.fetchone() if cursor.description else None
        finally:
            cursor.close()
