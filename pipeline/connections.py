"""The caller's connection, whatever holds it, as the psycopg connection underneath.

pg-pipeline enqueues in the caller's transaction, so it must run its statements on the very
connection that transaction is open on. Applications hold it in a psycopg `Connection` or
`AsyncConnection`; this module is the one place that knows how to reach it from anything else,
and the one place that says, when it cannot, what it was given and what it takes.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import psycopg

if TYPE_CHECKING:  # optional: imported only where the caller has them
    from sqlalchemy.engine import Connection as SAConnection
    from sqlalchemy.ext.asyncio import AsyncConnection as SAAsyncConnection
    from sqlalchemy.ext.asyncio import AsyncSession, async_scoped_session
    from sqlalchemy.orm import Session, scoped_session


class DjangoConnection(Protocol):
    """What pg-pipeline uses of a Django database connection (`django.db.connection`,
    `connections[alias]`)."""

    vendor: str

    @property
    def connection(self) -> Any: ...

    def ensure_connection(self) -> None: ...


#: What the sync API (enqueue, run_progress, ...) takes.
Connectable: TypeAlias = (
    "psycopg.Connection[Any] | SAConnection | Session | scoped_session[Any] | DjangoConnection"
)
#: What the async API (aenqueue, arun_progress, ...) takes.
AsyncConnectable: TypeAlias = (
    "psycopg.AsyncConnection[Any] | SAAsyncConnection | AsyncSession | async_scoped_session[Any]"
)

_SYNC_TAKES = (
    "a psycopg Connection, a SQLAlchemy Connection or Session, or a Django connection"
    " (django.db.connection, connections[alias])"
)
_ASYNC_TAKES = "a psycopg AsyncConnection, or a SQLAlchemy AsyncConnection or AsyncSession"
_PSYCOPG = "pg-pipeline runs on psycopg 3"


class NotAConnection(TypeError):
    """The API was given something it cannot run its statements on."""


def sync_connection(target: object, *, api: str) -> psycopg.Connection[Any]:
    """The psycopg connection `target` is or holds, for pipeline.`api`(): opened if the ORM
    has not connected yet, in the ORM's transaction if it has one open."""
    if isinstance(target, psycopg.Connection):
        return target
    found = _sqlalchemy(target, api) or _django(target, api)
    if found is not None:
        return found
    if isinstance(target, psycopg.AsyncConnection) or _is_sqlalchemy_async(target):
        raise NotAConnection(
            f"pg_pipeline.{api}() was given {_described(target)}, which needs await: "
            f"use `await pg_pipeline.a{api}(...)`; pg_pipeline.{api}() takes {_SYNC_TAKES}"
        )
    raise NotAConnection(
        f"pg_pipeline.{api}() was given {_described(target)}; it takes {_SYNC_TAKES}"
    )


async def async_connection(target: object, *, api: str) -> psycopg.AsyncConnection[Any]:
    """The psycopg async connection `target` is or holds, for pipeline.`api`()."""
    if isinstance(target, psycopg.AsyncConnection):
        return target
    found = await _sqlalchemy_async(target, api)
    if found is not None:
        return found
    sync_name = api.removeprefix("a")
    if isinstance(target, psycopg.Connection) or _is_sqlalchemy_sync(target):
        raise NotAConnection(
            f"pg_pipeline.{api}() was given {_described(target)}, which is not async: "
            f"use pg_pipeline.{sync_name}(...); pg_pipeline.{api}() takes {_ASYNC_TAKES}"
        )
    if _is_django(target):
        raise NotAConnection(
            f"pg_pipeline.{api}() was given {_described(target)}: Django's connections are not "
            f"async: use pg_pipeline.{sync_name}(...) (in an async view, through "
            f"asgiref's sync_to_async); pg_pipeline.{api}() takes {_ASYNC_TAKES}"
        )
    raise NotAConnection(
        f"pg_pipeline.{api}() was given {_described(target)}; it takes {_ASYNC_TAKES}"
    )


# -- SQLAlchemy 2 -------------------------------------------------------------------------------
#
# Nothing here imports SQLAlchemy: an object of it can only exist once the caller has imported
# it. A Session's connection() begins the session's transaction (as any statement through it
# would), and a Connection not in a transaction begins one, so that the job commits or rolls
# back with the caller's `commit()`/`rollback()`: SQLAlchemy sees no statement of ours, and
# without the begin it would think there is nothing to commit.


def _is_sqlalchemy_sync(target: object) -> bool:
    if "sqlalchemy" not in sys.modules:
        return False
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session, scoped_session

    return isinstance(target, Connection | Session | scoped_session)


def _is_sqlalchemy_async(target: object) -> bool:
    if "sqlalchemy.ext.asyncio" not in sys.modules:
        return False
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession, async_scoped_session

    return isinstance(target, AsyncConnection | AsyncSession | async_scoped_session)


def _sqlalchemy(target: object, api: str) -> psycopg.Connection[Any] | None:
    if not _is_sqlalchemy_sync(target):
        return None
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session, scoped_session

    if isinstance(target, scoped_session):
        target = target()
    if isinstance(target, Session):
        target = target.connection()
    assert isinstance(target, Connection)
    if not target.in_transaction():
        target.begin()
    raw = target.connection.driver_connection
    if not isinstance(raw, psycopg.Connection):
        raise NotAConnection(_sqlalchemy_driver(api, target.dialect.driver, raw, "psycopg"))
    return raw


async def _sqlalchemy_async(target: object, api: str) -> psycopg.AsyncConnection[Any] | None:
    if not _is_sqlalchemy_async(target):
        return None
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession, async_scoped_session

    if isinstance(target, async_scoped_session):
        target = target()
    if isinstance(target, AsyncSession):
        target = await target.connection()
    assert isinstance(target, AsyncConnection)
    if not target.in_transaction():
        await target.begin()
    raw = (await target.get_raw_connection()).driver_connection
    if not isinstance(raw, psycopg.AsyncConnection):
        driver = target.dialect.driver
        raise NotAConnection(_sqlalchemy_driver(api, driver, raw, "psycopg_async"))
    return raw


def _sqlalchemy_driver(api: str, driver: str, raw: object, url: str) -> str:
    return (
        f"pg_pipeline.{api}() was given a SQLAlchemy connection whose driver is {driver} "
        f"({_described(raw)}); {_PSYCOPG}: create the engine with a "
        f"postgresql+{url}:// URL"
    )


# -- Django ----------------------------------------------------------------------------------


def _is_django(target: object) -> bool:
    if "django.db" not in sys.modules:
        return False
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.utils.connection import ConnectionProxy

    # django.db.connection is a proxy to connections["default"], not a wrapper itself.
    return isinstance(target, BaseDatabaseWrapper | ConnectionProxy)


def _django(target: Any, api: str) -> psycopg.Connection[Any] | None:
    if not _is_django(target):
        return None
    if target.vendor != "postgresql":
        raise NotAConnection(
            f"pg_pipeline.{api}() was given a Django connection to {target.vendor} "
            f"({target.alias!r}); pg-pipeline needs a PostgreSQL database"
        )
    target.ensure_connection()  # Django connects lazily: before its first query, it has not
    raw = target.connection
    if not isinstance(raw, psycopg.Connection):
        raise NotAConnection(
            f"pg_pipeline.{api}() was given a Django connection through {_described(raw)}; "
            f"{_PSYCOPG}: install psycopg (Django 4.2+ uses it when both are installed)"
        )
    return raw


def _described(target: object) -> str:
    kind = type(target)
    return f"a {kind.__module__}.{kind.__qualname__}"
