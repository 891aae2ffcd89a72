"""Tenants as operators see them and set their caps and weights: `pipeline tenants` and the
dashboard's tenants page. Every read takes `tenant`: None for every tenant, else that tenant's
rows alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from pg_pipeline import inputs
from pg_pipeline.admin.status import TenantCapUse, TenantWeight, read_weights
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


def set_weight(
    conn: psycopg.Connection[Any], tenant_id: str, weight: float, stage: str | None = None
) -> None:
    """The tenant's weight for `stage`, or for every stage without one of its own (None): it
    counts from the next claim (docs/fairness.md). ValueError unless 1e-6 <= weight <= 1e6."""
    params = {"tenant_id": tenant_id, "stage": stage, "weight": inputs.weight(weight)}
    with conn.transaction():
        conn.execute(Q["set_tenant_weight"], params)
        conn.execute(Q["apply_tenant_weights"], params)


def clear_weight(conn: psycopg.Connection[Any], tenant_id: str, stage: str | None = None) -> bool:
    """False when there was no such weight to clear. The tenant's pairs weigh what is left: its
    weight for every stage, else 1."""
    params = {"tenant_id": tenant_id, "stage": stage}
    with conn.transaction():
        if conn.execute(Q["clear_tenant_weight"], params).fetchone() is None:
            return False
        conn.execute(Q["apply_tenant_weights"], params)
    return True


def tenant_weights(
    conn: psycopg.Connection[Any], tenant: str | None = None, limit: int = LIST_LIMIT
) -> list[TenantWeight]:
    """The weights operators set, by tenant (every tenant without one weighs 1)."""
    return read_weights(conn, limit, tenant)[0]


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
