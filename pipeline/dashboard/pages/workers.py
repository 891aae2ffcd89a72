"""/workers: the live workers, what each runs now and when it last beat."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import psycopg
from starlette.requests import Request
from starlette.responses import Response

from pg_pipeline.admin.status import WorkerStatus, read_worker_stages, read_workers
from pg_pipeline.dashboard.handler import Handler


@dataclass(frozen=True)
class Workers:
    workers: list[WorkerStatus]
    #: worker id -> (stage, running jobs) of what it runs now
    stages: dict[UUID, list[tuple[str, int]]]


def read_live_workers(conn: psycopg.Connection[Any]) -> Workers:
    workers = read_workers(conn)
    return Workers(workers, read_worker_stages(conn, [w.id for w in workers]))


class WorkersPage(Handler):
    async def show(self, request: Request) -> Response:
        page = self.page(request)
        # Workers serve every tenant: a page scoped to one lists none, as the overview does.
        found = None if page.tenant is not None else await self.read(read_live_workers)
        return self.html(page, "workers.html", w=found)
