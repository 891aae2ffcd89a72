"""/tenants: caps and their use, weights, budgets, the backlog per tenant, the noisiest."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from starlette.requests import Request
from starlette.responses import Response

from pg_pipeline.admin.budgets import budgets
from pg_pipeline.admin.status import BudgetUse, TenantCapUse, TenantWeight
from pg_pipeline.admin.tenants import (
    NoisyTenant,
    noisiest_tenants,
    queued_per_tenant,
    tenant_loads,
    tenant_weights,
)
from pg_pipeline.admin.usage import TenantCost, currency_of, prices, tenants_by_cost
from pg_pipeline.dashboard.handler import Handler
from pg_pipeline.inputs import since_day

TENANTS_SHOWN = 50
#: how far back the tenants' costs reach
COST_SINCE = "7d"


@dataclass(frozen=True)
class Tenants:
    loads: list[TenantCapUse]
    queued: list[tuple[str, int]]
    noisy: list[NoisyTenant]
    weights: list[TenantWeight]
    budgets: list[BudgetUse]
    costs: list[TenantCost]  #: since COST_SINCE, the costliest first (docs/usage.md)
    currency: str | None


def read_tenants(conn: psycopg.Connection[Any], tenant: str | None) -> Tenants:
    return Tenants(
        tenant_loads(conn, tenant, limit=TENANTS_SHOWN),
        queued_per_tenant(conn, tenant, TENANTS_SHOWN),
        noisiest_tenants(conn, tenant, TENANTS_SHOWN),
        tenant_weights(conn, tenant, limit=TENANTS_SHOWN),
        budgets(conn, tenant, limit=TENANTS_SHOWN),
        tenants_by_cost(conn, since_day(COST_SINCE), tenant, TENANTS_SHOWN),
        currency_of(prices(conn)),
    )


class TenantsPage(Handler):
    async def show(self, request: Request) -> Response:
        page = self.page(request)
        found = await self.read(lambda c: read_tenants(c, page.tenant))
        return self.html(page, "tenants.html", t=found)
