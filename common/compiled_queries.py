"""Querysets compiled to SQL once per process, for the few selects that every claim, submit and API call
runs.

Django builds and compiles a queryset's SQL on every evaluation. For the hot path's selects (the token
lookup with the user's roles, the project with the worker's standing, the claim's and the submit's row
locks) that was about 6 ms of CPU per claim + submit cycle, measured in-process: more than PostgreSQL
spends running them. `compiled_rows(build, *shape, **arguments)` builds the queryset once per shape with
marker values in place of the arguments, keeps Django's compiler (its SQL, column layout and related-object
populators), and on every later call only puts the arguments in place of the markers in the parameter
list. The rows become model instances through Django's own ModelIterable, so select_related and annotations
come back exactly as from the queryset. On PostgreSQL the statement is sent with server-side binding, so a
pooled connection keeps it prepared and the database plans it once per connection, not on every call
(planning these selects cost PostgreSQL more than running them). (Libraries such as django-cachalot cache
results, not SQL; none caches compiled statements, so this small module does.)

Rules for a `build` function: it takes the shape positionally (values that change the SQL text: flags,
a LIMIT) and the arguments by keyword (ints and strings that Django passes as query parameters, never
booleans), compares the arguments for equality only, and returns a queryset whose SQL depends on nothing
else. An int argument beyond a 64-bit column's range matches no row, as Django's own lookups answer it.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable

import psycopg
from django.db import connections
from django.db.backends.postgresql.base import CursorDebugWrapper
from django.db.backends.utils import CursorWrapper
from django.db.models import Model, QuerySet
from django.db.models.query import ModelIterable
from django.db.transaction import TransactionManagementError

# Markers: far from any id or count a query compares with, yet inside a 32-bit column's range (Django
# compiles a comparison with a value out of the column's range to "no rows", with no parameter).
_MARKER_INT_BASE = -2_147_000_000
_BIGINT_MIN, _BIGINT_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class _Statement:
    compiler: Any  # Django's SQLCompiler after as_sql(): select, klass_info, annotation_col_map filled
    sql: str
    params: tuple
    slots: tuple[tuple[int, str], ...]  # (position in params, argument name)
    model: type[Model]
    db: str
    for_update: bool


class _Replay:
    """What ModelIterable reads of a queryset, answering with the compiled statement."""

    _known_related_objects: dict = {}

    def __init__(self, statement: _Statement, compiler):
        self.model, self.db, self.query, self._compiler = statement.model, statement.db, self, compiler

    def get_compiler(self, using=None, connection=None, elide_empty=True):
        return self._compiler


_statements: dict[tuple, _Statement] = {}


def compiled_rows(build: Callable[..., QuerySet], *shape, **arguments) -> list[Model]:
    """The rows of `build(*shape, **arguments)`, compiled once per (build, shape) in this process."""
    key = (build, shape)
    statement = _statements.get(key)
    if statement is None:
        statement = _statements[key] = _compile(build, shape, arguments)
    if any(isinstance(value, int) and not _BIGINT_MIN <= value <= _BIGINT_MAX for value in arguments.values()):
        return []
    connection = connections[statement.db]
    if statement.for_update and not connection.in_atomic_block:
        raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
    params = list(statement.params)
    for position, name in statement.slots:
        params[position] = arguments[name]
    compiler = copy.copy(statement.compiler)
    compiler.connection = connection  # this thread's connection, not the one that compiled it
    # Run in place of compiling again; answers as execute_sql() does: a list of chunks of rows.
    compiler.execute_sql = lambda *args, **kwargs: [_run(statement, connection, params)]
    return list(ModelIterable(_Replay(statement, compiler)))


def _run(statement: _Statement, connection, params: list) -> list[tuple]:
    with _cursor(connection) as cursor:
        cursor.execute(statement.sql, params)  # through Django's wrapper: its error types, logging, query counts
        rows = cursor.fetchall()
    if statement.compiler.has_extra_select:
        rows = [row[: statement.compiler.col_count] for row in rows]
    return rows


def _cursor(connection):
    """On PostgreSQL, a cursor that binds the parameters on the server, so that the connection keeps the
    statement prepared (config/settings.py sets prepare_threshold for pooled connections): planning one of
    the hot path's selects took 0.3-0.8 ms, more than running it. Elsewhere, Django's usual cursor."""
    if connection.vendor != "postgresql":
        return connection.cursor()
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    raw = psycopg.Cursor(connection.connection)
    return _LoggedServerBoundCursor(raw, connection) if connection.queries_logged else connection.make_cursor(raw)


class _LoggedServerBoundCursor(CursorDebugWrapper):
    """Django's query log for a server-bound cursor: psycopg keeps no client-side text of the statement, so
    the logged SQL is composed from the parameters, as Django does when server_side_binding is on."""

    def execute(self, sql, params=None):
        with self.debug_sql(self.db.ops.compose_sql(sql, params)):
            return CursorWrapper.execute(self, sql, params)


def compiled_first(build: Callable[..., QuerySet], *shape, **arguments) -> Model | None:
    """The first row of compiled_rows(), or None (the queryset should be sliced to one row)."""
    rows = compiled_rows(build, *shape, **arguments)
    return rows[0] if rows else None


def _compile(build: Callable[..., QuerySet], shape: tuple, arguments: dict) -> _Statement:
    markers = {name: _marker(name, value, index) for index, (name, value) in enumerate(sorted(arguments.items()))}
    queryset = build(*shape, **markers)
    compiler = queryset.query.get_compiler(using=queryset.db)
    sql, params = compiler.as_sql()
    slots = tuple(
        (position, name)
        for position, value in enumerate(params)
        for name, marker in markers.items()
        if type(value) is type(marker) and value == marker
    )
    for name, marker in markers.items():
        if name not in {slot_name for _, slot_name in slots} or str(marker) in sql:
            raise ValueError(f"{build.__qualname__}: argument {name!r} is not a plain query parameter of its SQL")
    return _Statement(compiler, sql, tuple(params), slots, queryset.model, queryset.db,
                      bool(queryset.query.select_for_update))


def _marker(name: str, value, index: int):
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"compiled query argument {name!r} must be an int or a str, not {type(value).__name__}")
    return _MARKER_INT_BASE - index if isinstance(value, int) else f"\x1fcompiled-query-argument-{index}\x1f"
