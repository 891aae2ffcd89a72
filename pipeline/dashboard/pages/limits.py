"""/limits: rate limits, what each key's window holds now and the jobs it holds back
(docs/limits.md)."""

from __future__ import annotations

from typing import Any

import psycopg
from starlette.requests import Request
from starlette.responses import Response

from pg_pipeline.admin.limits import LimitUse, limit_rows
from pg_pipeline.dashboard.handler import Handler

LIMITS_SHOWN = 200


def read_limits(conn: psycopg.Connection[Any], tenant: str | None) -> list[LimitUse]:
    """Every (limit, key); a view scoped to a tenant sees the keys named after it alone (a
    limit keyed by tenant), never another tenant's, nor a shared key's traffic."""
    rows = limit_rows(conn, limit=LIMITS_SHOWN)
    return rows if tenant is None else [r for r in rows if r.key == tenant]


class LimitsPage(Handler):
    async def show(self, request: Request) -> Response:
        page = self.page(request)
        found = await self.read(lambda c: read_limits(c, page.tenant))
        return self.html(page, "limits.html", limits=found)
