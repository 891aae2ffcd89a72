"""Changes to jobs: retry or cancel one (/jobs/{id}/retry, /jobs/{id}/cancel) and retry every
failed one (/actions/retry-failed). A GET asks for confirmation, the POST (with its CSRF
token: security.py) does it, scoped to the page's tenant like every read."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import psycopg
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from pg_pipeline.admin import jobs as admin_jobs
from pg_pipeline.dashboard.handler import Handler, Page, text_param
from pg_pipeline.dashboard.problem import Problem

CANCEL_REASON = "cancelled from the dashboard"


class JobActions(Handler):
    async def retry(self, request: Request) -> Response:
        return await self._one(
            request,
            "Retry",
            "It goes back in the queue.",
            lambda c, job_id, tenant: admin_jobs.retry_job(c, job_id, tenant=tenant),
            done="retried",
            refused="only a failed or cancelled job",
        )

    async def cancel(self, request: Request) -> Response:
        return await self._one(
            request,
            "Cancel",
            "A queued job will not run; a running one is told to stop; a waiting one stops "
            "waiting.",
            lambda c, job_id, tenant: admin_jobs.cancel_job(
                c, job_id, tenant=tenant, reason=CANCEL_REASON
            ),
            done="cancelled",
            refused="only a queued, running or waiting job",
        )

    async def _one(
        self,
        request: Request,
        verb: str,
        text: str,
        change: Callable[[psycopg.Connection[Any], int, str | None], admin_jobs.Change],
        *,
        done: str,
        refused: str,
    ) -> Response:
        """A change to the job of the URL: its confirmation (GET), or the change (POST)."""
        page = self.page(request)
        job_id = self.path_id(request, "job_id", "job id")
        if request.method == "GET":
            await self._visible(page, job_id)
            return self.confirm(page, f"{verb} job {job_id}?", text, page.link(f"/jobs/{job_id}"))
        await self.gate.change_form(request, page)
        result = await self.write(lambda c: change(c, job_id, page.tenant))
        if result is admin_jobs.Change.MISSING:
            raise Problem(404, "Not found", f"there is no job {job_id}")
        if result is admin_jobs.Change.PRUNED:
            raise Problem(410, "Gone", f"job {job_id} was deleted with its run by retention")
        if result is admin_jobs.Change.REFUSED:
            raise Problem(409, "Not possible", f"job {job_id} was not {done}: {refused} can be")
        return RedirectResponse(page.link(f"/jobs/{job_id}", done=done), status_code=303)

    async def retry_failed(self, request: Request) -> Response:
        page = self.page(request)
        params: Mapping[str, str] = request.query_params
        if request.method == "POST":
            form = await self.gate.change_form(request, page)
            params = {k: v for k, v in form.items() if isinstance(v, str)}
        stage = text_param(params, "stage")
        which = " ".join(
            part
            for part in (
                "every failed job",
                f"of stage {stage!r}" if stage else "",
                f"of tenant {page.tenant!r}" if page.tenant else "",
            )
            if part
        )
        back = page.link("/jobs", status="failed", stage=stage)
        if request.method == "GET":
            return self.confirm(
                page, "Retry failed jobs?", f"Retry {which}.", back, {"stage": stage or ""}
            )
        count = await self.run(
            lambda c: admin_jobs.retry_failed(
                c, stage=stage, tenant=page.tenant, timeout_ms=self.timeout_ms
            ),
            slow="the jobs retried so far stay retried: try again for the rest",
        )
        return RedirectResponse(
            page.link("/jobs", status="queued", stage=stage, retried=count), status_code=303
        )

    async def _visible(self, page: Page, job_id: int) -> None:
        """A 404 before the confirmation, for a job that is not there (for this page's
        tenant), as its page and the POST give: no "Yes, retry" that can only fail."""
        if not await self.read(lambda c: admin_jobs.job_exists(c, job_id, tenant=page.tenant)):
            raise Problem(404, "Not found", f"there is no job {job_id}")
