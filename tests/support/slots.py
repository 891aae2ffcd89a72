"""What the tenant slot counters say: each pair's counter less the slots given back that no claim
has subtracted yet (pipeline.freed_slots), as the claim counts them."""

from __future__ import annotations

from typing import Any

import psycopg

HELD = """
    SELECT s.tenant_id, s.stage,
           s.running - coalesce((SELECT sum(f.n) FROM pipeline.freed_slots f
                                 WHERE f.tenant_id = s.tenant_id AND f.stage = s.stage), 0)
    FROM pipeline.tenant_slots s
"""


def held_slots(conn: psycopg.Connection[Any]) -> dict[tuple[str, str], int]:
    """Every counter row: (tenant, stage) -> slots held."""
    rows = conn.execute(HELD).fetchall()
    return {(tenant, stage): int(held) for tenant, stage, held in rows}
