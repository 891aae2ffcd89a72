"""pg_pipeline.db.outage: one reading of a database error for every loop that talks to Postgres.
An outage is waited out and the jobs kept; a refusal fails what asked for it at once."""

from __future__ import annotations

import threading

import psycopg
import psycopg.errors
import pytest
from psycopg_pool import PoolTimeout

from pg_pipeline.db import outage, unavailable
from pg_pipeline.errors import DatabaseUnavailable
from pg_pipeline.reconnecting import retry_db

OUTAGES = [
    "08006",  # connection_failure
    "08P01",  # protocol_violation
    "25006",  # read_only_sql_transaction: failover, default_transaction_read_only
    "25P03",  # idle_in_transaction_session_timeout
    "40001",  # serialization_failure
    "40P01",  # deadlock_detected
    "53100",  # disk_full
    "53300",  # too_many_connections
    "55P03",  # lock_not_available
    "57014",  # query_canceled
    "57P01",  # admin_shutdown
    "57P02",  # crash_shutdown
    "57P03",  # cannot_connect_now
    "58030",  # io_error
]
REFUSALS = [
    "54000",  # program_limit_exceeded: index row size, jsonb object size
    "54001",  # statement_too_complex: stack depth limit exceeded
    "54011",  # too_many_columns
    "22001",  # string_data_right_truncation
    "22P05",  # untranslatable_character
    "23505",  # unique_violation
    "25P02",  # in_failed_sql_transaction: our bug, not the server's state
    "42501",  # insufficient_privilege
    "P0001",  # raise_exception: a user's trigger
    "XX000",  # internal_error
]


@pytest.mark.parametrize("sqlstate", OUTAGES)
def test_a_state_of_the_server_is_an_outage(sqlstate: str) -> None:
    assert outage(psycopg.errors.lookup(sqlstate)("from the server"))


@pytest.mark.parametrize("sqlstate", REFUSALS)
def test_an_answer_the_server_would_give_again_is_a_refusal(sqlstate: str) -> None:
    assert not outage(psycopg.errors.lookup(sqlstate)("from the server"))


def test_class_54_is_a_refusal_though_psycopg_calls_it_an_operational_error() -> None:
    error = psycopg.errors.ProgramLimitExceeded("index row size exceeds btree maximum")
    assert isinstance(error, psycopg.OperationalError)
    assert not outage(error)


def test_the_read_only_state_is_an_outage_though_psycopg_calls_it_an_internal_error() -> None:
    error = psycopg.errors.ReadOnlySqlTransaction("cannot execute UPDATE in a read-only txn")
    assert isinstance(error, psycopg.InternalError)
    assert outage(error)


def test_without_a_sqlstate_only_connection_errors_are_outages() -> None:
    assert outage(psycopg.OperationalError("server closed the connection unexpectedly"))
    assert outage(psycopg.InterfaceError("the connection is closed"))
    assert outage(PoolTimeout("couldn't get a connection after 10.00 sec"))
    # psycopg's own refusal to send a value: the same value is refused every time
    assert not outage(psycopg.DataError("PostgreSQL text fields cannot contain NUL bytes"))
    assert not outage(ValueError("not a database error at all"))


def test_unavailable_adds_a_connect_that_failed() -> None:
    assert unavailable(DatabaseUnavailable("cannot connect to PostgreSQL at db:5432/app"))
    assert unavailable(psycopg.errors.AdminShutdown("terminating connection"))
    assert not unavailable(psycopg.errors.ProgramLimitExceeded("index row too large"))


def test_retry_db_waits_an_outage_out_and_hands_a_refusal_back_at_once() -> None:
    halt = threading.Event()
    calls: list[str] = []

    def read_only_twice() -> str:
        calls.append("try")
        if len(calls) < 3:
            raise psycopg.errors.ReadOnlySqlTransaction("read-only")
        return "written"

    assert retry_db("write", read_only_twice, halt=halt, max_delay_s=0.01) == "written"
    assert len(calls) == 3

    def too_large() -> str:
        calls.append("refused")
        raise psycopg.errors.ProgramLimitExceeded("index row size exceeds btree maximum")

    with pytest.raises(psycopg.errors.ProgramLimitExceeded):
        retry_db("write", too_large, halt=halt, max_delay_s=0.01)
    assert calls.count("refused") == 1
