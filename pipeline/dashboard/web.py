"""The dashboard as an ASGI app: Starlette routes rendering Jinja2 templates, htmx for the
parts that refresh themselves. `pipeline dashboard` serves it with uvicorn; `app()` mounts it in
yours.

Database work runs in Starlette's thread pool on the sync psycopg core, one short connection
per request: a dashboard is a handful of requests a second at most, and a connection made
afresh needs no reconnect logic after a database restart (a pool would hand out dead
connections first, or back off its reconnects for a minute).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlencode

import psycopg
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pipeline.admin import jobs as admin_jobs
from pipeline.admin import runs as admin_runs
from pipeline.admin import schedules as admin_schedules
from pipeline.dashboard import data, forms, render
from pipeline.dashboard.security import (
    CSRF_COOKIE,
    CSRF_FIELD,
    SESSION_COOKIE,
    TENANT_TOKENS_ENV,
    TOKEN_ENV,
    Guard,
    is_loopback,
    parse_tenant_tokens,
    same_origin,
)
from pipeline.db import DB_DOWN, connect, database_url, describe, scrub
from pipeline.errors import DatabaseUnavailable
from pipeline.runs import TERMINAL, job_output
from pipeline.stage import REGISTRY, Registry
from pipeline.vocabulary import JOB_STATUSES

T = TypeVar("T")

#: Errors that mean the database is not there right now: the page says so and retries.
DB_DOWN_OR_UNAVAILABLE: tuple[type[Exception], ...] = (DatabaseUnavailable, *DB_DOWN)

#: Seconds between the self-refreshes of the overview and of a run that is not finished.
POLL_S = 2.0
#: Seconds after which the "database unreachable" page tries again.
RETRY_S = 5
CANCEL_REASON = "cancelled from the dashboard"

#: Every response: no inline script or style may run (htmx is a file of ours), no framing,
#: no referrer leaking job ids to other sites. same-origin, not no-referrer: with no-referrer a
#: browser sends `Origin: null` on the dashboard's own form posts, which the CSRF check refuses.
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
]


class Problem(Exception):
    """A page that says what went wrong, with its status: never a traceback."""

    def __init__(self, status: int, title: str, detail: str, *, retry: bool = False) -> None:
        super().__init__(detail)
        self.status, self.title, self.detail, self.retry = status, title, detail, retry


@dataclass(frozen=True)
class Settings:
    dsn: str
    read_only: bool = False
    token: str | None = None
    #: every page and action limited to this tenant, whatever the URL asks
    tenant: str | None = None
    poll_s: float = POLL_S
    #: tenant to its token: a request with one sees that tenant alone
    tenant_tokens: Mapping[str, str] = field(default_factory=dict)
    #: stage name to its output model's field names, for the run page's field order
    field_order: Callable[[str], Sequence[str] | None] = lambda stage: None


@dataclass
class Page:
    """What one request knows about itself, for the templates."""

    request: Request
    base: str  #: where the dashboard is mounted ("" at the root)
    tenant: str | None
    #: the tenant came from ?tenant=: links carry it on
    tenant_in_url: bool
    pinned: bool
    actions: bool  #: retry, cancel, pause and resume are offered and accepted
    csrf_nonce: str
    csrf_new: bool
    csrf: str
    where: str
    poll_s: float

    def link(self, path: str, **params: Any) -> str:
        query = {k: v for k, v in params.items() if v is not None and v != ""}
        if self.tenant_in_url and self.tenant is not None:
            query.setdefault("tenant", self.tenant)
        return self.base + path + (f"?{urlencode(query)}" if query else "")


class Dashboard:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.guard = Guard(settings.token, settings.tenant_tokens)
        others = self.guard.tenants - {settings.tenant}
        if settings.tenant is not None and others:
            raise ValueError(
                f"a dashboard opened for tenant {settings.tenant!r} has tokens for other "
                f"tenants ({', '.join(sorted(others))}), which would see nothing"
            )
        self.templates = render.environment()
        self.where = describe(settings.dsn)  # host, port and database: never the password

    # -- plumbing ----------------------------------------------------------------------------

    def _page(self, request: Request) -> Page:
        access = self.guard.access(request.cookies, request.headers.get("authorization"))
        if access is None:
            raise Problem(401, "Sign in", "this dashboard needs its token")
        try:
            asked = forms.text(request.query_params, "tenant")
        except forms.BadInput as exc:
            raise Problem(400, "Bad request", str(exc)) from None
        # The app's tenant, or the token's: every read and change of this request is then
        # filtered to it, whatever the URL or the form asks.
        pinned = self.settings.tenant or access.tenant
        if pinned is not None and asked is not None and asked != pinned:
            raise Problem(403, "Forbidden", f"this dashboard is opened for tenant {pinned!r} alone")
        server = request.scope.get("server")
        bound_loopback = is_loopback(server[0] if server else None)
        nonce = request.cookies.get(CSRF_COOKIE) or ""
        new = not (16 <= len(nonce) <= 64)
        if new:
            nonce = self.guard.new_nonce()
        return Page(
            request=request,
            base=str(request.scope.get("root_path", "")).rstrip("/"),
            tenant=pinned or asked,
            tenant_in_url=pinned is None and asked is not None,
            pinned=pinned is not None,
            actions=not self.settings.read_only and (self.guard.required or bound_loopback),
            csrf_nonce=nonce,
            csrf_new=new,
            csrf=self.guard.csrf_token(nonce),
            where=self.where,
            poll_s=self.settings.poll_s,
        )

    def _html(self, page: Page | None, template: str, status: int = 200, **values: Any) -> Response:
        body = self.templates.get_template(template).render(page=page, **values)
        response = HTMLResponse(body, status_code=status)
        response.headers["cache-control"] = "no-store"
        if page is not None and page.csrf_new:
            response.set_cookie(
                CSRF_COOKIE,
                page.csrf_nonce,
                httponly=True,
                samesite="strict",
                path=page.base or "/",
            )
        return response

    async def _db(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        return await run_in_threadpool(self._run_db, work)

    async def _read(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """`work` in one read-only snapshot, each of its statements bounded."""

        def read(conn: psycopg.Connection[Any]) -> T:
            with conn.transaction():
                data.begin_read(conn)
                return work(conn)

        return await self._db(read)

    def _run_db(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        try:
            with connect(self.settings.dsn) as conn:
                return work(conn)
        except psycopg.errors.QueryCanceled:
            # Before DB_DOWN, which it belongs to (an OperationalError). Not retried by itself:
            # the same filter would be as slow again.
            raise Problem(
                503,
                "Too slow",
                f"the database did not answer within {data.PAGE_TIMEOUT_MS / 1000:.0f} s: "
                "narrow the filters, or try again when it is less busy",
            ) from None
        except DB_DOWN_OR_UNAVAILABLE as exc:
            raise Problem(
                503,
                "Database unreachable",
                f"cannot reach the database at {self.where}: "
                f"{scrub(_first_line(exc), self.settings.dsn)}",
                retry=True,
            ) from None
        except psycopg.Error as exc:
            raise Problem(
                500, "Database error", scrub(_first_line(exc), self.settings.dsn)
            ) from None

    def problem(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, Problem)
        if exc.status == 401 and request.method == "GET":
            return RedirectResponse(self._base(request) + "/login", status_code=303)
        response = self._html(
            None,
            "error.html",
            exc.status,
            problem=exc,
            base=self._base(request),
            retry_s=RETRY_S,
            fragment=bool(request.headers.get("hx-request")),
        )
        if exc.retry:
            response.headers["retry-after"] = str(RETRY_S)
        return response

    @staticmethod
    def _same_origin(request: Request) -> bool:
        return same_origin(
            request.headers.get("origin"),
            request.headers.get("sec-fetch-site"),
            request.headers.get("host"),
        )

    @staticmethod
    def _base(request: Request) -> str:
        return str(request.scope.get("root_path", "")).rstrip("/")

    async def _form(self, request: Request, page: Page) -> FormData:
        """A POST's form, after the checks every change passes."""
        if not page.actions:
            raise Problem(
                403,
                "Read-only",
                "changes are turned off here: the dashboard runs --read-only, or without "
                f"{TOKEN_ENV} off loopback",
            )
        if not self._same_origin(request):
            raise Problem(403, "Forbidden", "a change must come from the dashboard's own pages")
        form = await request.form()
        given = form.get(CSRF_FIELD)
        if not self.guard.csrf_ok(
            request.cookies.get(CSRF_COOKIE), given if isinstance(given, str) else None
        ):
            raise Problem(
                403, "Forbidden", "the form's CSRF token is missing or stale: reload the page"
            )
        return form

    # -- pages -------------------------------------------------------------------------------

    async def overview(self, request: Request) -> Response:
        page = self._page(request)
        overview = await self._db(lambda c: data.read_overview(c, page.tenant))
        template = "_overview.html" if request.headers.get("hx-request") else "overview.html"
        return self._html(
            page,
            template,
            o=overview,
            chart=render.chart(overview.throughput, overview.status.taken_at),
        )

    async def jobs(self, request: Request) -> Response:
        page = self._page(request)
        try:
            query = forms.job_query(request.query_params, page.tenant)
        except forms.BadInput as exc:
            raise Problem(400, "Bad filter", str(exc)) from None
        found = await self._read(lambda c: admin_jobs.page_jobs(c, query))
        params = {
            k: v
            for k, v in request.query_params.items()
            if k not in ("before", "after", "tenant", "retried")
        }
        return self._html(
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
            page_sizes=forms.PAGE_SIZES,
            form=request.query_params,
        )

    async def job(self, request: Request) -> Response:
        page = self._page(request)
        job_id = self._id(request, "job_id", "job id")

        def read(conn: psycopg.Connection[Any]) -> tuple[Any, Any]:
            detail = admin_jobs.get_job(conn, job_id, tenant=page.tenant)
            return detail, None if detail is None else job_output(conn, job_id)

        detail, output = await self._read(read)
        if detail is None:
            raise Problem(404, "Not found", f"there is no job {job_id}")
        return self._html(
            page, "job.html", job=detail, output=output, flash=request.query_params.get("done")
        )

    async def runs(self, request: Request) -> Response:
        page = self._page(request)
        before_raw = request.query_params.get("before")
        before = self._parse_id(before_raw, "before") if before_raw else None
        rows = await self._read(lambda c: admin_runs.list_runs(c, page.tenant, before))
        return self._html(page, "runs.html", rows=rows, probes=admin_runs.RUN_PROBES)

    async def run(self, request: Request) -> Response:
        page = self._page(request)
        run_id = self._id(request, "run_id", "run id")
        found = await self._read(lambda c: admin_runs.read_run(c, run_id, page.tenant))
        if found is None:
            raise Problem(404, "Not found", f"there is no run {run_id}")
        extractions, outputs = data.outputs(found, self.settings.field_order)
        template = "_run.html" if request.headers.get("hx-request") else "run.html"
        finished = all(j.status in TERMINAL for s in found.stages for j in s.jobs)
        # 286 tells htmx to stop polling: a finished run changes no more (unless retried,
        # which a reload shows).
        status = 286 if finished and template == "_run.html" else 200
        return self._html(
            page,
            template,
            status,
            run=found,
            extractions=extractions,
            outputs=outputs,
            finished=finished,
        )

    async def tenants(self, request: Request) -> Response:
        page = self._page(request)
        found = await self._db(lambda c: data.read_tenants(c, page.tenant))
        return self._html(page, "tenants.html", t=found)

    # -- changes: GET asks for confirmation, POST (with its CSRF token) does it ---------------

    def _confirm(
        self,
        page: Page,
        title: str,
        text: str,
        back: str,
        fields: dict[str, str] | None = None,
    ) -> Response:
        if not page.actions:
            raise Problem(403, "Read-only", "changes are turned off on this dashboard")
        return self._html(
            page,
            "confirm.html",
            title=title,
            text=text,
            action=page.link(page.request.url.path[len(page.base) :]),
            back=back,
            fields=fields or {},
        )

    async def retry(self, request: Request) -> Response:
        page = self._page(request)
        job_id = self._id(request, "job_id", "job id")
        back = page.link(f"/jobs/{job_id}")
        if request.method == "GET":
            await self._visible(page, job_id)
            return self._confirm(page, f"Retry job {job_id}?", "It goes back in the queue.", back)
        await self._form(request, page)
        change = await self._db(lambda c: admin_jobs.retry_job(c, job_id, tenant=page.tenant))
        return self._after(page, change, job_id, "retried", "only a failed or cancelled job")

    async def cancel(self, request: Request) -> Response:
        page = self._page(request)
        job_id = self._id(request, "job_id", "job id")
        back = page.link(f"/jobs/{job_id}")
        if request.method == "GET":
            await self._visible(page, job_id)
            return self._confirm(
                page,
                f"Cancel job {job_id}?",
                "A queued job will not run; a running one is told to stop.",
                back,
            )
        await self._form(request, page)
        change = await self._db(
            lambda c: admin_jobs.cancel_job(c, job_id, tenant=page.tenant, reason=CANCEL_REASON)
        )
        return self._after(page, change, job_id, "cancelled", "only a queued or running job")

    async def _visible(self, page: Page, job_id: int) -> None:
        """A 404 before the confirmation, for a job that is not there (for this page's
        tenant), as its page and the POST give: no "Yes, retry" that can only fail."""
        if not await self._db(lambda c: admin_jobs.job_exists(c, job_id, tenant=page.tenant)):
            raise Problem(404, "Not found", f"there is no job {job_id}")

    def _after(
        self, page: Page, change: admin_jobs.Change, job_id: int, done: str, refused: str
    ) -> Response:
        if change is admin_jobs.Change.MISSING:
            raise Problem(404, "Not found", f"there is no job {job_id}")
        if change is admin_jobs.Change.REFUSED:
            raise Problem(409, "Not possible", f"job {job_id} was not {done}: {refused} can be")
        return RedirectResponse(page.link(f"/jobs/{job_id}", done=done), status_code=303)

    async def retry_failed(self, request: Request) -> Response:
        page = self._page(request)
        params: Mapping[str, str] = request.query_params
        if request.method == "POST":
            form = await self._form(request, page)
            params = {k: v for k, v in form.items() if isinstance(v, str)}
        try:
            stage = forms.text(params, "stage")
        except forms.BadInput as exc:
            raise Problem(400, "Bad request", str(exc)) from None
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
            return self._confirm(
                page, "Retry failed jobs?", f"Retry {which}.", back, {"stage": stage or ""}
            )
        count = await self._db(
            lambda c: admin_jobs.retry_failed(c, stage=stage, tenant=page.tenant)
        )
        return RedirectResponse(
            page.link("/jobs", status="queued", stage=stage, retried=count), status_code=303
        )

    async def schedule(self, request: Request) -> Response:
        page = self._page(request)
        verb = str(request.path_params["verb"])
        if verb not in ("pause", "resume"):
            raise Problem(404, "Not found", "there is no such page")
        params: Mapping[str, str] = request.query_params
        form = await self._form(request, page) if request.method == "POST" else None
        if form is not None:
            params = {k: v for k, v in form.items() if isinstance(v, str)}
        try:
            name = forms.text(params, "name")
        except forms.BadInput as exc:
            raise Problem(400, "Bad request", str(exc)) from None
        if name is None:
            raise Problem(400, "Bad request", "which schedule? name is missing")
        back = page.link("/")
        if request.method == "GET":
            return self._confirm(
                page,
                f"{verb.capitalize()} schedule {name!r}?",
                "Fire times that pass while it is paused are skipped."
                if verb == "pause"
                else "It fires again from its next fire time after now.",
                back,
                fields={"name": name},
            )

        change = admin_schedules.pause if verb == "pause" else admin_schedules.resume
        if not await self._db(lambda c: change(c, name, tenant=page.tenant)):
            raise Problem(404, "Not found", f"there is no schedule {name!r}")
        return RedirectResponse(back, status_code=303)

    # -- signing in ------------------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        base = self._base(request)
        if not self.guard.required:
            return RedirectResponse(base + "/", status_code=303)
        wrong = False
        if request.method == "POST":
            if not self._same_origin(request):
                # Else another site could sign a browser in with a token of its choosing.
                raise Problem(403, "Forbidden", "sign in from the dashboard's own page")
            form = await request.form()
            given = form.get("token")
            access = self.guard.access_for_token(given) if isinstance(given, str) else None
            if access is not None:
                response = RedirectResponse(base + "/", status_code=303)
                response.set_cookie(
                    SESSION_COOKIE,
                    self.guard.session_value(access),
                    httponly=True,
                    samesite="strict",
                    secure=request.url.scheme == "https",
                    path=base or "/",
                )
                return response
            wrong = True
        return self._html(None, "login.html", 401 if wrong else 200, base=base, wrong=wrong)

    # -- helpers -------------------------------------------------------------------------------

    def _id(self, request: Request, name: str, what: str) -> int:
        return self._parse_id(str(request.path_params[name]), what)

    @staticmethod
    def _parse_id(raw: str, what: str) -> int:
        try:
            return forms.job_id(raw, what)
        except forms.BadInput as exc:
            raise Problem(400, "Bad request", str(exc)) from None


def output_fields(registry: Registry, stage: str) -> list[str] | None:
    """The field names of a stage's output model in their declared order, or None when the
    registry has no such stage (the dashboard was started without its app) or no model."""
    spec = registry.get_or_none(stage)
    if spec is None or spec.output_model is None:
        return None
    return list(spec.output_model.model_fields)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)


def app(
    dsn: str | None = None,
    *,
    read_only: bool = False,
    token: str | None = None,
    tenant: str | None = None,
    tenant_tokens: Mapping[str, str] | None = None,
    registry: Registry | None = None,
    poll_s: float = POLL_S,
) -> Starlette:
    """The dashboard as an ASGI app, to serve or to mount in yours:

        Mount("/queue", app=pipeline.dashboard.app(dsn=DATABASE_URL))

    dsn: DATABASE_URL, or the embedded server, when None. token: PIPELINE_DASHBOARD_TOKEN when
    None; it sees every tenant. tenant_tokens: {tenant: token}, from
    PIPELINE_DASHBOARD_TENANT_TOKENS when None; a request with one of them sees that tenant
    alone. With any token, every request must carry one. tenant: every page and action limited
    to that tenant, whoever asks. read_only: no retry, cancel, pause or resume. registry: where
    the run page finds a stage's output model, to show its fields in the model's order
    (pipeline.REGISTRY by default; fields come in stored order for a stage it does not know).
    """
    if tenant_tokens is None:
        tenant_tokens = parse_tenant_tokens(os.environ.get(TENANT_TOKENS_ENV, ""))
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
        )
    )
    both = ["GET", "POST"]
    starlette = Starlette(
        routes=[
            Route("/", dashboard.overview),
            Route("/jobs", dashboard.jobs),
            Route("/jobs/{job_id}", dashboard.job),
            Route("/jobs/{job_id}/retry", dashboard.retry, methods=both),
            Route("/jobs/{job_id}/cancel", dashboard.cancel, methods=both),
            Route("/actions/retry-failed", dashboard.retry_failed, methods=both),
            Route("/schedules/{verb}", dashboard.schedule, methods=both),
            Route("/runs", dashboard.runs),
            Route("/runs/{run_id}", dashboard.run),
            Route("/tenants", dashboard.tenants),
            Route("/login", dashboard.login, methods=both),
            Mount("/static", StaticFiles(packages=[("pipeline.dashboard", "static")])),
        ],
        exception_handlers={Problem: dashboard.problem, 404: _not_found(dashboard)},
        middleware=[Middleware(SecurityHeaders)],
    )
    starlette.state.dashboard = dashboard
    return starlette


def _not_found(dashboard: Dashboard) -> Callable[[Request, Exception], Response]:
    def handle(request: Request, exc: Exception) -> Response:
        return dashboard.problem(request, Problem(404, "Not found", "there is no such page"))

    return handle
