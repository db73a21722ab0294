"""Statements compiled once per dialect and run on a raw DB-API connection, for hot paths."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, NamedTuple

from sqlalchemy import Dialect, Table, bindparam, insert, update
from sqlalchemy.exc import DBAPIError, StatementError
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
        self.defaults = {
            name: bind.effective_value
            for name, bind in compiled.binds.items()
            if bind.value is not None
        }
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

    def bind(self, dialect: Dialect, values: Mapping[str, Any]) -> Bound:
        """The statement's SQL for `dialect` with the DB-API parameters of `values`: work that
        can be done before a writer takes its turn, so that the turn holds only the database's."""
        compiled = self._compiled.get(dialect.name)
        if compiled is None:
            compiled = self._compiled[dialect.name] = _Compiled(self._build(dialect.name), dialect)
        try:
            parameters = compiled.parameters(values)
        except Exception as exc:  # a value its column's type refuses, as SQLAlchemy says it
            raise StatementError(str(exc), compiled.sql, dict(values), exc) from exc
        return Bound(compiled.sql, parameters, dialect)

    def first(self, connection: Any, dialect: Dialect, values: Mapping[str, Any]) -> Any | None:
        """Run the statement with `values` on a DB-API connection (in its transaction); the
        first row it returns, or None."""
        return self.bind(dialect, values).execute(connection)[1]

    def execute(
        self, connection: Any, dialect: Dialect, values: Mapping[str, Any]
    ) -> tuple[int, Any | None]:
        """Run the statement with `values` on a DB-API connection (in its transaction); the
        rows it matched (-1 when the driver cannot tell) and the first row it returns, or None."""
        return self.bind(dialect, values).execute(connection)


class Bound(NamedTuple):
    """A prepared statement's SQL with the DB-API parameters of one execution."""

    sql: str
    parameters: list[Any] | dict[str, Any]
    dialect: Dialect

    def execute(self, connection: Any, *, rowid: bool = False) -> tuple[int, Any | None]:
        """Run it on a DB-API connection (in its transaction): the rows it matched (-1 when
        the driver cannot tell) and the first row it returns, or None — with `rowid`, the id
        of the row it inserted (SQLite's lastrowid) instead, and no row is read."""
        cursor = connection.cursor()
        try:
            cursor.execute(self.sql, self.parameters)
            if rowid:
                return cursor.rowcount, cursor.lastrowid
            return cursor.rowcount, cursor.fetchone() if cursor.description else None
        except self.dialect.loaded_dbapi.Error as exc:  # as SQLAlchemy raises it: IntegrityError …
            raise DBAPIError.instance(
                self.sql,
                self.parameters,
                exc,
                self.dialect.loaded_dbapi.Error,
                dialect=self.dialect,
            ) from exc
        finally:
            cursor.close()


# --- one row by its id -----------------------------------------------------------------------


@cache
def insert_row(table: Table, columns: frozenset[str]) -> Prepared:
    """INSERT of these columns into `table`, RETURNING its `id`; the values go by column name."""
    return Prepared(
        lambda _: (
            insert(table)
            .values({name: bindparam(name, type_=table.c[name].type) for name in sorted(columns)})
            .returning(table.c.id)
        )
    )


@cache
def update_row(table: Table, columns: frozenset[str]) -> Prepared:
    """UPDATE of these columns of the row of `table` whose `id` is `row_id`; the values go by
    column name."""
    return Prepared(
        lambda _: (
            update(table)
            .where(table.c.id == bindparam("row_id"))
            .values({name: bindparam(name, type_=table.c[name].type) for name in sorted(columns)})
        )
    )
