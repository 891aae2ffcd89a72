"""/ : the queue at a glance, refreshing itself (htmx swaps in the fragment)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import psycopg
from starlette.requests import Request
from starlette.responses import Response

from pg_pipeline.admin.status import (
    Minute,
    Status,
    begin_snapshot,
    read_throughput,
    read_worker_stages,
    snapshot_status,
)
from pg_pipeline.dashboard import render
from pg_pipeline.dashboard.database import NARROW
from pg_pipeline.dashboard.handler import Handler


@dataclass(frozen=True)
class Overview:
    status: Status
    throughput: list[Minute]
    #: (stage, running jobs) per live worker; None when opened for one tenant: workers serve
    #: every tenant
    worker_stages: dict[UUID, list[tuple[str, int]]] | None


def read_overview(conn: psycopg.Connection[Any], tenant: str | None, timeout_ms: int) -> Overview:
    with conn.transaction():
        status = snapshot_status(conn, begin_snapshot(conn, timeout_ms), tenant=tenant)
        throughput = read_throughput(conn, tenant)
        if tenant is not None:
            return Overview(status, throughput, None)
        return Overview(
            status, throughput, read_worker_stages(conn, [w.id for w in status.workers])
        )


class OverviewPage(Handler):
    async def show(self, request: Request) -> Response:
        page = self.page(request)
        overview = await self.run(
            lambda c: read_overview(c, page.tenant, self.timeout_ms), slow=NARROW
        )
        template = "_overview.html" if request.headers.get("hx-request") else "overview.html"
        return self.html(
            page,
            template,
            o=overview,
            chart=render.chart(overview.throughput, overview.status.taken_at),
        )
