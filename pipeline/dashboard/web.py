"""The dashboard as an ASGI app: Starlette routes to the pages' handlers (pipeline/dashboard/
pages/), which render Jinja2 templates, with htmx for the parts that refresh themselves.
`pipeline dashboard` serves it with uvicorn; `app()` mounts it in yours.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from pg_pipeline.dashboard.database import POOL_SIZE, STATEMENT_TIMEOUT_S
from pg_pipeline.dashboard.handler import POLL_S, Dashboard, Handler, Settings
from pg_pipeline.dashboard.pages.job_actions import JobActions
from pg_pipeline.dashboard.pages.jobs import JobPages
from pg_pipeline.dashboard.pages.limits import LimitsPage
from pg_pipeline.dashboard.pages.login import LoginPage
from pg_pipeline.dashboard.pages.overview import OverviewPage
from pg_pipeline.dashboard.pages.reruns import RunVersions
from pg_pipeline.dashboard.pages.review import ReviewPages
from pg_pipeline.dashboard.pages.runs import RunPages
from pg_pipeline.dashboard.pages.schedules import ScheduleActions, SchedulesPage
from pg_pipeline.dashboard.pages.tenants import TenantsPage
from pg_pipeline.dashboard.pages.workers import WorkersPage
from pg_pipeline.dashboard.problem import Problem
from pg_pipeline.dashboard.security import (
    HOSTS_ENV,
    SESSION_MAX_AGE_S,
    TENANT_TOKENS_ENV,
    TOKEN_ENV,
    TRUSTED_PROXIES_ENV,
    HostCheck,
    SecurityHeaders,
    parse_list,
    parse_tenant_tokens,
)
from pg_pipeline.db import database_url
from pg_pipeline.stage import REGISTRY, Registry


def output_fields(registry: Registry, stage: str) -> list[str] | None:
    """The field names of a stage's output model in their declared order, or None when the
    registry has no such stage (the dashboard was started without its app) or no model."""
    spec = registry.get_or_none(stage)
    if spec is None or spec.output_model is None:
        return None
    return list(spec.output_model.model_fields)


def app(
    dsn: str | None = None,
    *,
    read_only: bool = False,
    token: str | None = None,
    tenant: str | None = None,
    tenant_tokens: Mapping[str, str] | None = None,
    registry: Registry | None = None,
    poll_s: float = POLL_S,
    hosts: Sequence[str] | None = None,
    trusted_proxies: Sequence[str] | None = None,
    session_max_age_s: float | None = None,
    pool_size: int = POOL_SIZE,
    statement_timeout_s: float = STATEMENT_TIMEOUT_S,
) -> Starlette:
    """The dashboard as an ASGI app, to serve or to mount in yours:

        Mount("/queue", app=pg_pipeline.dashboard.app(dsn=DATABASE_URL))

    dsn: DATABASE_URL, or the embedded server, when None. token: PIPELINE_DASHBOARD_TOKEN when
    None; it sees every tenant. tenant_tokens: {tenant: token}, from
    PIPELINE_DASHBOARD_TENANT_TOKENS when None; a request with one of them sees that tenant
    alone. With any token, every request must carry one. tenant: every page and action limited
    to that tenant, whoever asks. read_only: no retry, cancel, pause or resume. registry: where
    the run page finds a stage's output model, to show its fields in the model's order
    (pg_pipeline.REGISTRY by default; fields come in stored order for a stage it does not know).
    hosts: names served besides loopback ones (PIPELINE_DASHBOARD_HOSTS when None);
    trusted_proxies: addresses or networks whose X-Forwarded-Host/-Proto/-Port are believed
    (PIPELINE_DASHBOARD_TRUSTED_PROXIES when None). session_max_age_s: how long a sign-in lasts
    (8 hours when None). pool_size: database connections held at most (requests past it wait
    for one); statement_timeout_s: seconds any one statement of a page or action may take.
    """
    if tenant_tokens is None:
        tenant_tokens = parse_tenant_tokens(os.environ.get(TENANT_TOKENS_ENV, ""))
    if hosts is None:
        hosts = parse_list(os.environ.get(HOSTS_ENV, ""))
    if trusted_proxies is None:
        trusted_proxies = parse_list(os.environ.get(TRUSTED_PROXIES_ENV, ""))
    stages = registry if registry is not None else REGISTRY
    dashboard = Dashboard(
        Settings(
            dsn=dsn or database_url(),
            read_only=read_only,
            token=token if token is not None else os.environ.get(TOKEN_ENV) or None,
            tenant=tenant,
            poll_s=poll_s,
            tenant_tokens=dict(tenant_tokens),
            field_order=lambda name: output_fields(stages, name),
            hosts=tuple(hosts),
            trusted_proxies=tuple(trusted_proxies),
            session_max_age_s=session_max_age_s or SESSION_MAX_AGE_S,
            pool_size=pool_size,
            statement_timeout_s=statement_timeout_s,
        )
    )
    overview, jobs, actions = OverviewPage(dashboard), JobPages(dashboard), JobActions(dashboard)
    runs, tenants = RunPages(dashboard), TenantsPage(dashboard)
    versions = RunVersions(dashboard)
    schedule_list, workers = SchedulesPage(dashboard), WorkersPage(dashboard)
    schedules, login, errors = ScheduleActions(dashboard), LoginPage(dashboard), Handler(dashboard)
    review, limits = ReviewPages(dashboard), LimitsPage(dashboard)
    both = ["GET", "POST"]
    starlette = Starlette(
        routes=[
            Route("/", overview.show),
            Route("/jobs", jobs.list),
            Route("/jobs/{job_id}", jobs.show),
            Route("/jobs/{job_id}/retry", actions.retry, methods=both),
            Route("/jobs/{job_id}/cancel", actions.cancel, methods=both),
            Route("/actions/retry-failed", actions.retry_failed, methods=both),
            Route("/schedules", schedule_list.show),
            Route("/schedules/{verb}", schedules.change, methods=both),
            Route("/runs", runs.list),
            Route("/runs/{run_id}", runs.show),
            Route("/runs/{run_id}/rerun", versions.rerun, methods=both),
            Route("/runs/{run_id}/diff", versions.diff),
            Route("/review", review.queue),
            Route("/review/{job_id}", review.show, methods=["GET"]),
            Route("/review/{job_id}", review.answer, methods=["POST"]),
            Route("/tenants", tenants.show),
            Route("/limits", limits.show),
            Route("/workers", workers.show),
            Route("/login", login.sign_in, methods=both),
            Route("/logout", login.sign_out, methods=["POST"]),
            Mount("/static", StaticFiles(packages=[("pg_pipeline.dashboard", "static")])),
        ],
        exception_handlers={Problem: errors.problem, 404: _not_found(errors)},
        # Outermost first: a refused Host's 421 carries the security headers too.
        middleware=[Middleware(SecurityHeaders), Middleware(HostCheck, gate=dashboard.gate)],
        lifespan=_closing(dashboard),
    )
    starlette.state.dashboard = dashboard
    return starlette


def _closing(dashboard: Dashboard) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """The app's lifespan: its database connections close when it stops. (Mounted in another
    app, which runs no lifespan of a mounted one, they last as long as the process.)"""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await run_in_threadpool(dashboard.database.close)

    return lifespan


def _not_found(errors: Handler) -> Callable[[Request, Exception], Response]:
    def handle(request: Request, exc: Exception) -> Response:
        return errors.problem(request, Problem(404, "Not found", "there is no such page"))

    return handle
