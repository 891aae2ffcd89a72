"""Per-tenant caps as operators see and set them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from pipeline.queries import Q

LIST_LIMIT = 1000  #: (tenant, stage) rows `tenants list` shows at most


@dataclass(frozen=True)
class TenantLoad:
    tenant_id: str
    stage: str
    cap: int | None  # the operator's cap; None when only the stage's default applies
    running: int
    queued: int


def set_cap(conn: psycopg.Connection[Any], tenant_id: str, stage: str, cap: int) -> None:
    conn.execute(Q["set_tenant_cap"], {"tenant_id": tenant_id, "stage": stage, "cap": cap})


def clear_cap(conn: psycopg.Connection[Any], tenant_id: str, stage: str) -> bool:
    """False when there was no cap to clear."""
    row = conn.execute(Q["clear_tenant_cap"], {"tenant_id": tenant_id, "stage": stage})
    return row.fetchone() is not None


def tenant_loads(
    conn: psycopg.Connection[Any], tenant_id: str | None = None, limit: int = LIST_LIMIT
) -> list[TenantLoad]:
    rows = conn.execute(Q["tenant_caps"], {"tenant_id": tenant_id, "limit": limit}).fetchall()
    return [TenantLoad(*row) for row in rows]
