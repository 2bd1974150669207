"""Statements compiled to SQL once per process, for the few selects and writes that every claim, submit
and API call runs.

Django builds and compiles a queryset's SQL on every evaluation. For the hot path's selects (the token
lookup with the user's roles, the project with the worker's standing, the claim's and the submit's row
locks) that was about 6 ms of CPU per claim + submit cycle, measured in-process: more than PostgreSQL
spends running them. `compiled_rows(build, *shape, **arguments)` builds the queryset once per shape with
marker values in place of the arguments, keeps its SQL and what Django's compiler found for turning rows into
model instances (column converters, related-object populators, annotation columns), and on every later call
only puts the arguments in place of the markers in the parameter list. The rows become model instances as
Django's ModelIterable makes them, so select_related and annotations come back exactly as from the queryset;
the replay does ModelIterable's per-row work alone, since its per-call set-up (populators, column lists,
composite-field checks over 50-70 columns) cost more CPU than the rows themselves. On PostgreSQL the
statement is sent with server-side binding, so a pooled connection keeps it prepared and the database plans
it once per connection, not on every call (planning these selects cost PostgreSQL more than running them). (Libraries such as django-cachalot cache
results, not SQL; none caches compiled statements, so this small module does.)

The writes (`insert_rows`, `update_row`) are what bulk_create() and a queryset's update() by primary key
send, with the statement's text kept per model and columns; Django's fields still turn each value into its
database form (get_db_prep_save), so the rows stored are the same. Like those two, they send no model
signals. Building the INSERT or UPDATE through the ORM cost ~0.1 ms of CPU per statement, more than
sending it. `inserting` and `updating` give the same statements unsent, for `write_together`, which sends a
request's last writes as one statement on PostgreSQL: a claim's claims and item counters, a submit's answers,
item counters and page, however many items the page has.

Rules for a `build` function: it takes the shape positionally (values that change the SQL text: flags,
a LIMIT) and the arguments by keyword (ints and strings that Django passes as query parameters, never
booleans), compares the arguments for equality only, and returns a queryset whose SQL depends on nothing
else. An int argument beyond a 64-bit column's range matches no row, as Django's own lookups answer it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import psycopg
from django.db import NotSupportedError, connections, router
from django.db.backends.postgresql.base import CursorDebugWrapper
from django.db.backends.utils import CursorWrapper
from django.db.models import Field, Model, QuerySet
from django.db.models.query import get_related_populators
from django.db.transaction import TransactionManagementError

# Markers: far from any id or count a query compares with, yet inside a 32-bit column's range (Django
# compiles a comparison with a value out of the column's range to "no rows", with no parameter).
_MARKER_INT_BASE = -2_147_000_000
_BIGINT_MIN, _BIGINT_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class _Statement:
    sql: str
    params: tuple
    slots: tuple[tuple[int, str], ...]  # (position in params, argument name)
    model: type[Model]
    db: str
    for_update: bool
    # What ModelIterable finds per call, found once: (position, converters, expression) of each column that
    # needs converting, the model's columns and field names, its select_related populators, its annotations.
    converters: tuple[tuple[int, list, Any], ...]
    col_count: int
    fields: slice
    init_list: tuple[str, ...]
    populators: tuple
    annotations: tuple[tuple[str, int], ...]


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
    return [_instance(statement, connection, row) for row in _run(statement, connection, params)]


def _run(statement: _Statement, connection, params: list) -> list[tuple]:
    with _cursor(connection) as cursor:
        cursor.execute(statement.sql, params)  # through Django's wrapper: its error types, logging, query counts
        return cursor.fetchall()


def _instance(statement: _Statement, connection, row: tuple) -> Model:
    """A row as ModelIterable turns it into a model instance (compiler.apply_converters, then from_db, the
    populators and the annotations), with this thread's connection given to the converters."""
    values = list(row[: statement.col_count])  # extra select columns (ordering) are not the model's
    for position, converters, expression in statement.converters:
        value = values[position]
        for converter in converters:
            value = converter(value, expression, connection)
        values[position] = value
    instance = statement.model.from_db(statement.db, statement.init_list, values[statement.fields])
    for populator in statement.populators:
        populator.populate(values, instance)
    for name, position in statement.annotations:
        setattr(instance, name, values[position])
    return instance


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
    columns = [column[0] for column in compiler.select[: compiler.col_count]]
    if compiler.has_composite_fields(columns):
        raise NotSupportedError(f"{build.__qualname__}: composite primary keys are not replayed")
    klass_info = compiler.klass_info
    model_columns = slice(klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1)
    return _Statement(
        sql,
        tuple(params),
        slots,
        klass_info["model"],
        queryset.db,
        bool(queryset.query.select_for_update),
        converters=tuple(
            (position, converters, expression)
            for position, (converters, expression) in compiler.get_converters(columns).items()
        ),
        col_count=compiler.col_count,
        fields=model_columns,
        init_list=tuple(column[0].target.attname for column in compiler.select[model_columns]),
        # django-stubs type the next Django's signature (a fetch_mode argument); the installed one takes three.
        populators=tuple(get_related_populators(klass_info, compiler.select, queryset.db)),  # type: ignore[call-arg]
        annotations=tuple(compiler.annotation_col_map.items()),
    )


def _marker(name: str, value, index: int):
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"compiled query argument {name!r} must be an int or a str, not {type(value).__name__}")
    return _MARKER_INT_BASE - index if isinstance(value, int) else f"\x1fcompiled-query-argument-{index}\x1f"


# ---------------------------------------------------------------------------------------------- writes
_write_texts: dict[tuple, str] = {}


@dataclass(frozen=True)
class Write:
    """One INSERT or UPDATE, ready to send: its text (kept per shape in _write_texts) and its parameters."""

    key: tuple
    sql: str
    params: list
    db: str
    instances: tuple[Model, ...]  # what the write stores, marked saved once it is sent
    returns_rows: bool = False
    updated: tuple | None = None  # (model, primary key) of the row an UPDATE writes


def insert_rows(instances: list[Model], *, returning_pk: bool = False) -> None:
    """Model.objects.bulk_create(instances) for a few new rows of one model (primary keys not set): each
    field's pre_save (auto_now_add) and database form as Django prepares them. With `returning_pk`, the
    new rows' primary keys are set on the instances."""
    if not instances:
        return
    write = inserting(instances, returning_pk=returning_pk)
    connection = connections[write.db]
    with _cursor(connection) as cursor:
        cursor.execute(write.sql, write.params)
        new_pks = cursor.fetchall() if returning_pk else None
    if new_pks is not None:
        for instance, (pk,) in zip(instances, new_pks, strict=True):
            instance.pk = pk
    _mark_saved(write)


def inserting(instances: list[Model], *, returning_pk: bool = False) -> Write:
    """The INSERT that insert_rows() sends, to send with others (write_together)."""
    model = type(instances[0])
    meta = model._meta
    connection = connections[router.db_for_write(model)]
    fields = [field for field in meta.concrete_fields if field is not meta.auto_field and not field.generated]
    key = ("insert", model, len(instances), returning_pk, connection.alias)
    sql = _write_texts.get(key)
    if sql is None:
        sql = _write_texts[key] = _insert_text(connection, meta, fields, len(instances), returning_pk)
    params = []
    for instance in instances:
        instance._prepare_related_fields_for_save(operation_name="insert_rows")  # type: ignore[attr-defined]  # what save() calls
        params += [field.get_db_prep_save(field.pre_save(instance, True), connection) for field in fields]
    return Write(key, sql, params, connection.alias, tuple(instances), returns_rows=returning_pk)


def _insert_text(connection, meta, fields, rows: int, returning_pk: bool) -> str:
    for field in fields:
        # A placeholder that depends on the value, or a database default (DEFAULT in place of a value): not
        # one text for every row.
        if hasattr(field, "get_placeholder") or field.has_db_default():
            raise NotSupportedError(f"insert_rows: {meta.label}.{field.name} needs SQL of its own per value")
    quote = connection.ops.quote_name
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(field.column) for field in fields)}) "
        f"VALUES {', '.join([row] * rows)}"
    )
    if returning_pk:
        if not connection.features.can_return_rows_from_bulk_insert:
            raise NotSupportedError("insert_rows: this database cannot return the new rows' keys")
        returning, _ = connection.ops.return_insert_columns([meta.pk])
        sql += " " + returning
    return sql


def update_row(instance: Model, fields: list[str]) -> int:
    """Model.objects.filter(pk=instance.pk).update(field=instance's value, ...) for the named fields, each
    value in its database form as Django prepares it; returns how many rows changed (0 or 1)."""
    write = updating(instance, fields)
    with _cursor(connections[write.db]) as cursor:
        cursor.execute(write.sql, write.params)
        return cursor.rowcount


def updating(instance: Model, fields: list[str]) -> Write:
    """The UPDATE that update_row() sends, to send with others (write_together)."""
    model = type(instance)
    meta = model._meta
    connection = connections[router.db_for_write(model, instance=instance)]
    primary_key = meta.pk
    columns = [cast(Field, meta.get_field(name)) for name in fields]  # concrete fields: update_fields names them
    key = ("update", model, tuple(fields), connection.alias)
    sql = _write_texts.get(key)
    if sql is None:

        def quote(field: Field) -> str:
            return connection.ops.quote_name(cast(str, field.column))  # a concrete field has its column

        table = connection.ops.quote_name(meta.db_table)
        assignments = ", ".join(f"{quote(field)} = %s" for field in columns)
        sql = _write_texts[key] = f"UPDATE {table} SET {assignments} WHERE {table}.{quote(primary_key)} = %s"
    params = [field.get_db_prep_save(field.pre_save(instance, False), connection) for field in columns]
    params.append(primary_key.get_db_prep_value(instance.pk, connection))
    return Write(key, sql, params, connection.alias, (), updated=(model, instance.pk))


def write_together(writes: list[Write]) -> None:
    """Send the writes in one statement on PostgreSQL (all but the last as data-modifying WITH queries): a
    round trip and a statement's overhead saved per write, which on the claim and submit path cost about as
    much as the writes themselves. Elsewhere (SQLite cannot put an INSERT or UPDATE in a WITH), one after
    another. PostgreSQL runs the parts on one snapshot, in no set order: the writes must touch different
    rows and need nothing from each other (no RETURNING)."""
    if not writes:
        return
    connection = connections[writes[0].db]
    if any(write.db != connection.alias or write.returns_rows for write in writes):
        raise NotSupportedError("write_together: writes to one database, none returning rows")
    updated = [write.updated for write in writes if write.updated is not None]
    if len(set(updated)) < len(updated):  # PostgreSQL would keep one of two updates of a row, either
        raise NotSupportedError("write_together: a row updated twice")
    if connection.vendor != "postgresql" or len(writes) == 1:
        with _cursor(connection) as cursor:
            for write in writes:
                cursor.execute(write.sql, write.params)
    else:
        key = ("together", *(write.key for write in writes))
        sql = _write_texts.get(key)
        if sql is None:
            parts = [f"w{index} AS ({write.sql})" for index, write in enumerate(writes[:-1])]
            sql = _write_texts[key] = f"WITH {', '.join(parts)} {writes[-1].sql}"
        with _cursor(connection) as cursor:
            cursor.execute(sql, [param for write in writes for param in write.params])
    for write in writes:
        _mark_saved(write)


def _mark_saved(write: Write) -> None:
    for instance in write.instances:
        instance._state.adding, instance._state.db = False, write.db
