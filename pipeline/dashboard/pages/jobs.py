"""/jobs: the jobs table, filtered and keyset-paged, with a bounded search of their errors;
/jobs/{id}: one job, its timeline, attempts, log lines, payload and output."""

from __future__ import annotations

from typing import Any

import psycopg
from starlette.requests import Request
from starlette.responses import Response

from pg_pipeline.admin import jobs as admin_jobs
from pg_pipeline.attempt_logs import ATTEMPT_LOG_CAP
from pg_pipeline.dashboard import forms
from pg_pipeline.dashboard.handler import Handler
from pg_pipeline.dashboard.problem import Problem
from pg_pipeline.runs import job_output
from pg_pipeline.vocabulary import JOB_STATUSES


class JobPages(Handler):
    async def list(self, request: Request) -> Response:
        page = self.page(request)
        try:
            query = forms.job_query(request.query_params, page.tenant)
        except forms.BadInput as exc:
            raise Problem(400, "Bad filter", str(exc)) from None

        def read(conn: psycopg.Connection[Any]) -> tuple[admin_jobs.JobsPage, list[str]]:
            return admin_jobs.page_jobs(conn, query), admin_jobs.stage_names(
                conn, tenant=page.tenant
            )

        found, stages = await self.read(read)
        params = {
            k: v
            for k, v in request.query_params.items()
            if k not in ("before", "after", "tenant", "retried")
        }
        return self.html(
            page,
            "jobs.html",
            q=query,
            rows=found.rows,
            searched=found.searched,
            window=admin_jobs.SEARCH_WINDOW,
            older=None if found.older is None else page.link("/jobs", **params, before=found.older),
            newer=None if found.newer is None else page.link("/jobs", **params, after=found.newer),
            first=None if found.newer is None else page.link("/jobs", **params),
            # "older" leads past the search's window rather than past this page's last match
            search_on=found.searched is not None
            and found.searched.full
            and found.older == found.searched.low,
            statuses=JOB_STATUSES,
            stages=stages,
            page_sizes=forms.PAGE_SIZES,
            form=request.query_params,
        )

    async def show(self, request: Request) -> Response:
        page = self.page(request)
        job_id = self.path_id(request, "job_id", "job id")

        def read(conn: psycopg.Connection[Any]) -> tuple[Any, Any, Any]:
            detail = admin_jobs.get_job(conn, job_id, tenant=page.tenant)
            if detail is None:
                return None, None, None
            logs = admin_jobs.job_logs(conn, job_id, tenant=page.tenant)
            return detail, job_output(conn, job_id), logs

        detail, output, logs = await self.read(read)
        if detail is None:
            raise Problem(404, "Not found", f"there is no job {job_id}")
        return self.html(
            page,
            "job.html",
            job=detail,
            output=output,
            job_logs=logs or [],
            log_cap_kib=ATTEMPT_LOG_CAP // 1024,
            flash=request.query_params.get("done"),
        )
