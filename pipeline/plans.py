"""What one call of the public API says to the database, written once for sync and async callers.

A call (enqueue, run_progress, ...) is split in two. Its plan checks the arguments, and then
yields the statements to run, one at a time, each time receiving the rows the last one returned,
and at the end returns the call's result: validation, SQL and the reading of rows live there and
only there. An executor runs a plan on a connection: `execute` on a psycopg `Connection`,
`aexecute` on an `AsyncConnection`. They differ only in `await`, so the sync and the async API
cannot drift apart (the twins kept in step by hand that the house avoids).

`sync_api` and `async_api` make the public functions from a plan's function: the plan's
parameters are the function's, after the connection, which pg_pipeline.connections first turns
into a psycopg connection whatever holds it (SQLAlchemy, Django).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Generator, Mapping
from contextlib import AbstractAsyncContextManager, AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, LiteralString, ParamSpec, TypeVar

import psycopg
from psycopg.pq import Format
from psycopg.rows import TupleRow, tuple_row
from psycopg.types.json import JsonbLoader, JsonLoader

from pg_pipeline.connections import AsyncConnectable, Connectable, async_connection, sync_connection
from pg_pipeline.db import PoolerAwareCursor
from pg_pipeline.errors import SchemaMissing

T = TypeVar("T")
U = TypeVar("U")
P = ParamSpec("P")

Rows = list[tuple[Any, ...]]


@dataclass(frozen=True)
class Statement:
    """One named query (pg_pipeline.queries.Q) and its parameters."""

    sql: LiteralString
    params: Mapping[str, Any]


#: Yields statements, receives each one's rows, returns the call's result.
Steps = Generator[Statement, Rows, T]


class Plan(Generic[T]):
    """The statements of one call. `atomic`: several statements that land together or not at
    all; an executor wraps them in a transaction of their own only on an autocommit connection,
    since in the caller's transaction they already share its fate."""

    def __init__(self, steps: Steps[T], *, atomic: bool = False) -> None:
        self.steps = steps
        self.atomic = atomic

    def then(self, result: Callable[[T], U]) -> Plan[U]:
        """The same statements, with `result` applied to what they return."""

        def mapped() -> Steps[U]:
            return result((yield from self.steps))

        return Plan(mapped(), atomic=self.atomic)


def one(statement: Statement) -> Steps[Rows]:
    """The steps of a plan of one statement, returning its rows."""
    return (yield statement)


def execute(conn: psycopg.Connection[Any], plan: Plan[T]) -> T:
    """Run `plan` on `conn`, inside its open transaction if it has one."""
    atomic: AbstractContextManager[Any] = (
        conn.transaction() if plan.atomic and conn.autocommit else nullcontext()
    )
    with atomic, _cursor(conn) as cursor:
        steps = plan.steps
        try:
            statement = next(steps)
            while True:
                cursor.execute(statement.sql, statement.params)
                statement = steps.send(cursor.fetchall() if cursor.description else [])
        except StopIteration as done:
            result: T = done.value
            return result


async def aexecute(conn: psycopg.AsyncConnection[Any], plan: Plan[T]) -> T:
    """Run `plan` on `conn`, inside its open transaction if it has one: execute() with awaits."""
    atomic: AbstractAsyncContextManager[Any] = (
        conn.transaction() if plan.atomic and conn.autocommit else _no_transaction()
    )
    async with atomic, _acursor(conn) as cursor:
        steps = plan.steps
        try:
            statement = next(steps)
            while True:
                await cursor.execute(statement.sql, statement.params)
                statement = steps.send(await cursor.fetchall() if cursor.description else [])
        except StopIteration as done:
            result: T = done.value
            return result


def _no_transaction() -> AbstractAsyncContextManager[None]:
    return nullcontext()


def _cursor(conn: psycopg.Connection[Any]) -> psycopg.Cursor[TupleRow]:
    # Our own connections (pg_pipeline.db) have a cursor class that runs the named queries in the
    # connection's schema: keep it. Anyone else's may bind parameters on the client (Django's
    # does, and the bulk enqueue sends binary arrays) or load jsonb as text (Django again):
    # a plain psycopg cursor with psycopg's JSON loaders reads the same on every connection.
    if issubclass(conn.cursor_factory, PoolerAwareCursor):
        return conn.cursor(row_factory=tuple_row)
    cursor = psycopg.Cursor(conn, row_factory=tuple_row)
    _psycopg_json(cursor)
    return cursor


def _acursor(conn: psycopg.AsyncConnection[Any]) -> psycopg.AsyncCursor[TupleRow]:
    cursor = psycopg.AsyncCursor(conn, row_factory=tuple_row)
    _psycopg_json(cursor)
    return cursor


def _psycopg_json(cursor: psycopg.Cursor[Any] | psycopg.AsyncCursor[Any]) -> None:
    # Only where the connection loads them otherwise: registering copies the cursor's maps,
    # ~30 us, a tenth of an enqueue's round trip on a local server.
    adapters = cursor.adapters
    for name, loader in (("jsonb", JsonbLoader), ("json", JsonLoader)):
        oid = _OIDS[name]
        if not issubclass(adapters.get_loader(oid, Format.TEXT) or object, loader):
            adapters.register_loader(name, loader)


_OIDS = {name: psycopg.postgres.types[name].oid for name in ("jsonb", "json")}


def sync_api(planner: Callable[P, Plan[T]]) -> Callable[Concatenate[Connectable, P], T]:
    """The public sync function of a plan: `fn(conn, *args)` runs `planner(*args)` on `conn`."""
    name = planner.__name__.removesuffix("_plan")

    @functools.wraps(planner)
    def call(conn: Connectable, /, *args: P.args, **kwargs: P.kwargs) -> T:
        plan = planner(*args, **kwargs)  # the arguments are checked before anything connects
        try:
            return execute(sync_connection(conn, api=name), plan)
        except _UNDEFINED as exc:
            raise _schema_missing(exc) from None

    _name(call, planner, name, "Connectable")
    return call


def async_api(
    planner: Callable[P, Plan[T]],
) -> Callable[Concatenate[AsyncConnectable, P], Awaitable[T]]:
    """The public async function of a plan: `await afn(conn, *args)`, on an async connection."""
    name = "a" + planner.__name__.removesuffix("_plan")

    @functools.wraps(planner)
    async def call(conn: AsyncConnectable, /, *args: P.args, **kwargs: P.kwargs) -> T:
        plan = planner(*args, **kwargs)
        try:
            return await aexecute(await async_connection(conn, api=name), plan)
        except _UNDEFINED as exc:
            raise _schema_missing(exc) from None

    _name(call, planner, name, "AsyncConnectable")
    return call


#: What a database without pg-pipeline's schema (or with an older one) answers our statements.
_UNDEFINED = (
    psycopg.errors.UndefinedTable,
    psycopg.errors.UndefinedFunction,
    psycopg.errors.InvalidSchemaName,
)


def _schema_missing(exc: psycopg.Error) -> SchemaMissing:
    # psycopg's own message quotes the statement ("LINE 2: INSERT INTO pipeline.jobs ..."),
    # which tells an application's developer nothing they can act on; this says what to run.
    return SchemaMissing(
        f"this database lacks pg-pipeline's schema or is behind it ({exc.diag.message_primary}):"
        " run `pipeline migrate`, or in Django `manage.py migrate` with"
        " pg_pipeline.contrib.django installed"
    )


def _name(call: Callable[..., Any], planner: Callable[..., Any], name: str, conn: str) -> None:
    # help() and inspect show `name(conn, <the plan's parameters>)`, not the plan's name.
    call.__name__ = call.__qualname__ = name
    signature = inspect.signature(planner)
    first = inspect.Parameter("conn", inspect.Parameter.POSITIONAL_ONLY, annotation=conn)
    returns = signature.return_annotation  # "Plan[X]" (annotations are strings here): X
    if isinstance(returns, str) and returns.startswith("Plan[") and returns.endswith("]"):
        returns = returns[len("Plan[") : -1]
    call.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[first, *signature.parameters.values()], return_annotation=returns
    )
    del call.__wrapped__  # type: ignore[attr-defined]
