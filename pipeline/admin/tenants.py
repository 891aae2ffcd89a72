"""Tenants as operators see them and set their caps: `pipeline tenants` and the dashboard's
tenants page. Every read takes `tenant`: None for every tenant, else that tenant's rows alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from pg_pipeline.admin.status import TenantCapUse
from pg_pipeline.queries import Q

LIST_LIMIT = 1000  #: (tenant, stage) rows `tenants list` shows at most


@dataclass(frozen=True)
class NoisyTenant:
    tenant_id: str
    enqueued_1h: int
    failed_1h: int  #: of those enqueued in the last hour
    pending: int  #: of those enqueued in the last hour, queued or running still


def set_cap(conn: psycopg.Connection[Any], tenant_id: str, stage: str, cap: int) -> None:
    conn.execute(Q["set_tenant_cap"], {"tenant_id": tenant_id, "stage": stage, "cap": cap})


def clear_cap(conn: psycopg.Connection[Any], tenant_id: str, stage: str) -> bool:
    """False when there was no cap to clear."""
    row = conn.execute(Q["clear_tenant_cap"], {"tenant_id": tenant_id, "stage": stage})
    return row.fetchone() is not None


def tenant_loads(
    conn: psycopg.Connection[Any], tenant: str | None = None, limit: int = LIST_LIMIT
) -> list[TenantCapUse]:
    """Every (tenant, stage) with a cap or with slots in use, by tenant and stage. The same
    rows as Status.tenants, which lists them closest to their cap first."""
    rows = conn.execute(Q["tenant_caps"], {"tenant": tenant, "limit": limit}).fetchall()
    return [TenantCapUse(*row) for row in rows]


def queued_per_tenant(
    conn: psycopg.Connection[Any], tenant: str | None, limit: int
) -> list[tuple[str, int]]:
    """(tenant, queued jobs), the longest backlog first."""
    rows = conn.execute(Q["tenants_queued"], {"tenant": tenant, "limit": limit}).fetchall()
    return [(str(t), int(n)) for t, n in rows]


def noisiest_tenants(
    conn: psycopg.Connection[Any], tenant: str | None, limit: int
) -> list[NoisyTenant]:
    """The tenants that enqueued most in the last hour, most first."""
    rows = conn.execute(Q["tenants_noisiest"], {"tenant": tenant, "limit": limit}).fetchall()
    return [NoisyTenant(*row) for row in rows]
