"""The dashboard's database work: a capped pool of connections, every statement bounded by the
statement timeout, and each failure turned into a page that says what happened (a Problem).

The cap is what keeps a visitor from tying up the database: without one, each request opened a
connection of its own, and forty slow filters held forty backends. psycopg_pool's
NullConnectionPool holds at most `pool_size` connections; a request past that waits for one
(as long as a statement may take, then a 503), and a connection given back while others wait
goes straight to the next of them. It keeps none idle: a connection is made for a request that
finds none free, so after a database restart there is no dead connection to hand out first, and
a refused connection shows its reason on the page at once instead of after a pool's timeout.

The bound is set per transaction (`set_config(..., true)`), never on the session, so that
through a transaction-mode pooler it cannot leak to another client's statements.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from psycopg_pool import NullConnectionPool, PoolTimeout, TooManyRequests

from pg_pipeline.admin.jobs import bound_transaction
from pg_pipeline.admin.status import begin_snapshot
from pg_pipeline.dashboard.problem import Problem
from pg_pipeline.db import PoolerAwareCursor, describe, fit_to_pooler, scrub, unavailable
from pg_pipeline.errors import DatabaseUnavailable

T = TypeVar("T")
Conn = psycopg.Connection[Any]

#: Connections (so backends) one dashboard holds at most, whoever asks for what.
POOL_SIZE = 4
#: Seconds any one statement of a page or an action may take before the server cancels it: a
#: dashboard gives up rather than pile onto a database that is already struggling.
STATEMENT_TIMEOUT_S = 5.0
#: How the dashboard's connections show in pg_stat_activity.
APPLICATION_NAME = "pg-pipeline dashboard"
#: Requests that may wait for a connection, per connection: past that, a 503 at once, rather
#: than a queue that holds the server's threads.
WAITING_PER_CONNECTION = 4

#: What a page that ran out of time says to do next.
NARROW = "narrow the filters, or try again when it is less busy"
UNCHANGED = (
    "nothing was changed (a row may be locked by another transaction): try again in a moment"
)


class Database:
    """The connections of one dashboard, opened on first use."""

    def __init__(
        self,
        dsn: str,
        *,
        pool_size: int = POOL_SIZE,
        statement_timeout_s: float = STATEMENT_TIMEOUT_S,
    ) -> None:
        if pool_size < 1:
            raise ValueError(f"the dashboard's pool size must be 1 or more, not {pool_size}")
        if not statement_timeout_s > 0:
            raise ValueError("the dashboard's statement timeout must be more than 0 seconds")
        self.dsn = dsn
        self.where = describe(dsn)  # host, port and database: never the password
        self.pool_size = pool_size
        self.statement_timeout_s = statement_timeout_s
        self.timeout_ms = max(1, round(statement_timeout_s * 1000))
        self._pool: NullConnectionPool[Conn] | None = None
        self._lock = threading.Lock()

    def _connections(self) -> NullConnectionPool[Conn]:
        with self._lock:
            if self._pool is None:
                self._pool = NullConnectionPool(
                    self.dsn,
                    max_size=self.pool_size,
                    kwargs={
                        "autocommit": True,
                        "application_name": APPLICATION_NAME,
                        "cursor_factory": PoolerAwareCursor,
                    },
                    configure=_configure,
                    # Waiting longer than a statement may run means the connections are all
                    # held by pages as slow as that: the dashboard is busy.
                    timeout=self.statement_timeout_s,
                    max_waiting=self.pool_size * WAITING_PER_CONNECTION,
                    num_workers=1,
                    name=APPLICATION_NAME,
                    open=True,
                )
            return self._pool

    def close(self) -> None:
        """Close the pool (when the app stops); the next request opens a new one."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def read(self, work: Callable[[Conn], T]) -> T:
        """`work` in one read-only snapshot, each of its statements bounded."""
        return self._transaction(work, begin_snapshot, slow=NARROW)

    def write(self, work: Callable[[Conn], T]) -> T:
        """`work` in one transaction, each of its statements bounded: all of it or nothing."""
        return self._transaction(work, bound_transaction, slow=UNCHANGED)

    def _transaction(
        self, work: Callable[[Conn], T], begin: Callable[[Conn, int], object], *, slow: str
    ) -> T:
        """`work` in one transaction that `begin` (given the bound) opens."""

        def transaction(conn: Conn) -> T:
            with conn.transaction():
                begin(conn, self.timeout_ms)
                return work(conn)

        return self.run(transaction, slow=slow)

    def run(self, work: Callable[[Conn], T], *, slow: str) -> T:
        """`work` on a connection of the pool (autocommit): it bounds its own statements (with
        `timeout_ms`). Every failure is a Problem; `slow` says what to do after a timeout."""
        try:
            with self._connections().connection() as conn:
                return work(conn)
        except psycopg.errors.QueryCanceled:
            # Before the outages, which it belongs to (class 57). Not retried by itself: the
            # same filter would be as slow again.
            raise Problem(
                503,
                "Too slow",
                f"the database did not answer within {self.statement_timeout_s:g} s: {slow}",
            ) from None
        except (PoolTimeout, TooManyRequests):
            # Outages too (OperationalErrors with no SQLSTATE). A connection that cannot be
            # made within the wait ends here as well: psycopg_pool reports both alike.
            raise Problem(
                503,
                "Busy",
                f"none of the dashboard's {self.pool_size} database connections came free "
                f"within {self.statement_timeout_s:g} s (or the database at {self.where} did "
                "not answer): try again in a moment",
                retry=True,
            ) from None
        except (DatabaseUnavailable, psycopg.Error) as exc:
            if unavailable(exc):  # not there right now: the page says so and retries
                raise Problem(
                    503,
                    "Database unreachable",
                    f"cannot reach the database at {self.where}: "
                    f"{scrub(_first_line(exc), self.dsn)}",
                    retry=True,
                ) from None
            raise Problem(500, "Database error", scrub(_first_line(exc), self.dsn)) from None


def _configure(conn: Conn) -> None:
    try:
        fit_to_pooler(conn)
    except BaseException:
        # The pool leaves a connection whose configure failed open, and counts it nowhere.
        conn.close()
        raise


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
