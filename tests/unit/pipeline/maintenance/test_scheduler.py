"""The scheduler's tick, as the statements it sends: no database. What it fires, and that two
schedulers fire each time once, is tested against Postgres
(tests/integration/pipeline/maintenance/test_scheduler.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

from psycopg_pool import ConnectionPool

from pg_pipeline.maintenance import Scheduler
from pg_pipeline.queries import Q
from pg_pipeline.stage import Registry


class Answer:
    def __init__(self, row: tuple[Any, ...] | None) -> None:
        self.row = row

    def fetchone(self) -> tuple[Any, ...] | None:
        return self.row

    def fetchall(self) -> list[tuple[Any, ...]]:
        return []  # no row due: what take_due finds when another scheduler was first


class Connection:
    """Records what a tick sends; schedule_any_due answers `due`."""

    def __init__(self, due: bool) -> None:
        self.due = due
        self.sent: list[str] = []
        self.transactions = 0

    def execute(self, query: str, params: Any = None) -> Answer:
        self.sent.append(query)
        return Answer((self.due,) if query == Q["schedule_any_due"] else None)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.transactions += 1
        yield


class Pool:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        yield self.conn


class Stages:
    def names(self) -> list[str]:
        return ["noop"]


def tick(due: bool) -> Connection:
    conn = Connection(due)
    scheduler = Scheduler(cast(ConnectionPool, Pool(conn)), cast(Registry, Stages()))
    assert scheduler.run_once() == []
    return conn


def test_a_tick_with_nothing_due_is_one_statement_and_opens_no_transaction() -> None:
    conn = tick(due=False)
    assert conn.sent == [Q["schedule_any_due"]]
    assert conn.transactions == 0


def test_a_tick_with_a_schedule_due_takes_it_in_a_transaction() -> None:
    conn = tick(due=True)
    assert conn.sent == [Q["schedule_any_due"], Q["schedule_due"]]
    assert conn.transactions == 1
