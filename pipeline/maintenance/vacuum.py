"""A VACUUM run by a maintenance service, with what PostgreSQL warned of while it ran.

VACUUM says what it did not do in warnings, not errors: a table passed over under SKIP_LOCKED,
another vacuum holding its lock (SQLSTATE 55P03), or one this role may not vacuum (a bare
WARNING, SQLSTATE 01000). Retention's closing vacuum and the hot table's vacuum read them here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.abc import Query

#: The SQLSTATE of PostgreSQL's warning that VACUUM (SKIP_LOCKED) passed a table over.
LOCK_NOT_AVAILABLE = "55P03"


@dataclass(frozen=True)
class Vacuumed:
    """The warnings of one VACUUM statement, by kind (their texts)."""

    skipped: tuple[str, ...]  #: tables passed over, their lock held by another vacuum
    warned: tuple[str, ...]  #: any other warning (a permission refused among them)


def vacuum(conn: psycopg.Connection[Any], statement: Query) -> Vacuumed:
    """Run `statement`, a VACUUM, on `conn` (autocommit: VACUUM cannot run in a transaction)."""
    skipped: list[str] = []
    warned: list[str] = []

    def note(diag: psycopg.errors.Diagnostic) -> None:
        if diag.sqlstate == LOCK_NOT_AVAILABLE:
            skipped.append(diag.message_primary or "")
        elif diag.severity_nonlocalized == "WARNING":
            warned.append(diag.message_primary or "")

    conn.add_notice_handler(note)
    try:
        # Not prepared: psycopg prepares a statement on its fifth run, and a VACUUM has no plan.
        conn.execute(statement, prepare=False)
    finally:
        conn.remove_notice_handler(note)
    return Vacuumed(tuple(skipped), tuple(warned))
