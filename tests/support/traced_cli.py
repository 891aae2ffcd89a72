"""`python -m tests.support.traced_cli ARGS...`: the `pipeline` CLI, every connection it makes
writing what it sends and receives to the file named by $PIPELINE_TEST_TRACE (libpq's trace),
so that a test can count the statements and round trips of a command without timing it."""

from __future__ import annotations

import os
import re
import sys
from typing import Any

import psycopg
from psycopg import pq

TRACE_ENV = "PIPELINE_TEST_TRACE"
#: The command that runs it, in place of `pipeline`.
TRACED_CLI = [sys.executable, "-m", "tests.support.traced_cli"]

#: A message begins a line with who sent it (F the client, B the server), its length and its type;
#: a statement's text may go on over the lines that follow.
_MESSAGE = re.compile(r"^(?=[FB]\t\d+\t[A-Za-z]+\t?)", re.MULTILINE)
#: A simple-protocol statement, or an extended-protocol one's Parse (statement name, then text).
_SQL = re.compile(r'F\t\d+\t(?:Query\t "|Parse\t "[^"]*" ")(?P<sql>.*)"(?: \w+)*\s*\Z', re.DOTALL)


def messages(trace: str) -> list[str]:
    """The messages of a trace, each as the text the trace shows of it."""
    return [m for m in _MESSAGE.split(trace) if m.strip()]


def statements(trace: str) -> list[str]:
    """The statements a trace shows sent, in order, each as its SQL text."""
    found: list[str] = []
    for message in messages(trace):
        match = _SQL.match(message)
        if match:
            # Some libpq versions write a character they cannot print as \xNN (a newline).
            found.append(re.sub(r"\\x([0-9a-f]{2})", lambda m: chr(int(m[1], 16)), match["sql"]))
    return found


def round_trips(trace: str) -> int:
    """How many times the client sent and then waited for the server: each run of messages
    it sent (F) that the server answered (B), the connection's last goodbye (Terminate) aside."""
    sides = [m[0] for m in messages(trace) if not m.startswith("F\t4\tTerminate")]
    return sum(1 for i, side in enumerate(sides) if side == "F" and (i == 0 or sides[i - 1] == "B"))


def main() -> int:
    out = open(os.environ[TRACE_ENV], "w")  # noqa: SIM115  (open until the process ends)
    connect = psycopg.connect

    def traced(*args: Any, **kwargs: Any) -> psycopg.Connection[Any]:
        conn = connect(*args, **kwargs)
        conn.pgconn.trace(out.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        return conn

    psycopg.connect = traced  # type: ignore[assignment]
    from pg_pipeline.cli import main as cli

    return cli(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
