"""Query plans for tests: those of the statements inside a function, which a plain EXPLAIN
of the statement that calls it does not show."""

from __future__ import annotations

from typing import Any

import psycopg


def nested_plans(
    conn: psycopg.Connection[Any], query: Any, params: dict[str, Any], *, runs: int = 1
) -> str:
    """The plans of every statement `query` runs, its functions' and triggers' own included
    (auto_explain, nested statements logged): the claim's PL/pgSQL, say, or a SQL function that
    is not inlined (pipeline.cancel_jobs), whose inner statements a plain EXPLAIN does not show.
    Each run is rolled back."""
    notices: list[str] = []
    conn.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
    conn.execute("LOAD 'auto_explain'")
    for setting in (
        "auto_explain.log_min_duration = 0",
        "auto_explain.log_nested_statements = on",
        "auto_explain.log_level = notice",
    ):
        conn.execute(f"SET {setting}")  # type: ignore[arg-type]
    # PL/pgSQL plans a statement afresh for its first five runs, then may settle on a generic
    # plan: run it past that to see the plans a busy worker gets.
    for _ in range(runs):
        with conn.transaction(force_rollback=True):
            conn.execute(query, params).fetchall()
    conn.execute("RESET auto_explain.log_min_duration")
    return "\n".join(notices)
