"""What every page's handler shares: the request's admission (pipeline/dashboard/security.py
decides it), rendering a template, and database work off the event loop.

Database work runs in Starlette's thread pool on the sync psycopg core, through the dashboard's
capped pool of connections, every statement bounded (pipeline/dashboard/database.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlencode

import psycopg
from jinja2 import Environment
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from pg_pipeline.dashboard import forms, render
from pg_pipeline.dashboard.database import POOL_SIZE, STATEMENT_TIMEOUT_S, Database
from pg_pipeline.dashboard.problem import Problem
from pg_pipeline.dashboard.security import SESSION_MAX_AGE_S, Admission, Gate, Guard, Hosts

T = TypeVar("T")

#: Seconds between the self-refreshes of the overview and of a run that is not finished.
POLL_S = 2.0
#: Seconds after which the "database unreachable" page tries again.
RETRY_S = 5


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
    #: host names served besides loopback ones (security.py says when)
    hosts: Sequence[str] = ()
    #: addresses or networks of reverse proxies whose X-Forwarded-* headers are believed
    trusted_proxies: Sequence[str] = ()
    session_max_age_s: float = SESSION_MAX_AGE_S
    #: database connections held at most
    pool_size: int = POOL_SIZE
    #: seconds any one statement may take
    statement_timeout_s: float = STATEMENT_TIMEOUT_S


@dataclass(frozen=True)
class Page(Admission):
    """What one request knows about itself, for the templates."""

    request: Request
    base: str  #: where the dashboard is mounted ("" at the root)
    where: str  #: the database's host, port and name
    poll_s: float

    def link(self, path: str, **params: Any) -> str:
        query = {k: v for k, v in params.items() if v is not None and v != ""}
        if self.tenant_in_url and self.tenant is not None:
            query.setdefault("tenant", self.tenant)
        return self.base + path + (f"?{urlencode(query)}" if query else "")


class Dashboard:
    """What the handlers of one app share: its settings, its gate, its templates, its
    database connections."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        guard = Guard(
            settings.token, settings.tenant_tokens, session_max_age_s=settings.session_max_age_s
        )
        self.gate = Gate(
            guard,
            tenant=settings.tenant,
            read_only=settings.read_only,
            hosts=Hosts(settings.hosts, settings.trusted_proxies, any_host=guard.required),
        )
        self.templates: Environment = render.environment()
        self.database = Database(
            settings.dsn,
            pool_size=settings.pool_size,
            statement_timeout_s=settings.statement_timeout_s,
        )
        self.where = self.database.where


class Handler:
    """A page or a small group of pages; subclasses add the handlers the routes name."""

    def __init__(self, dashboard: Dashboard) -> None:
        self.dashboard = dashboard
        self.settings = dashboard.settings
        self.gate = dashboard.gate

    def page(self, request: Request) -> Page:
        """The request, admitted (or a Problem): the tenant it sees, what it may do."""
        return Page(
            **asdict(self.gate.admit(request)),
            request=request,
            base=base_of(request),
            where=self.dashboard.where,
            poll_s=self.settings.poll_s,
        )

    def html(self, page: Page | None, template: str, status: int = 200, **values: Any) -> Response:
        body = self.dashboard.templates.get_template(template).render(page=page, **values)
        response = HTMLResponse(body, status_code=status)
        response.headers["cache-control"] = "no-store"
        if page is not None:
            self.gate.set_csrf_nonce(response, page, path=page.base or "/")
        return response

    async def read(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """`work` in one read-only snapshot, each of its statements bounded."""
        return await run_in_threadpool(self.dashboard.database.read, work)

    async def write(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """`work` in one transaction, each of its statements bounded."""
        return await run_in_threadpool(self.dashboard.database.write, work)

    async def run(self, work: Callable[[psycopg.Connection[Any]], T], *, slow: str) -> T:
        """`work` on an autocommit connection: it bounds its own statements with
        `self.timeout_ms` (for transactions of its own). `slow`: what to do after a timeout."""
        return await run_in_threadpool(self.dashboard.database.run, work, slow=slow)

    @property
    def timeout_ms(self) -> int:
        return self.dashboard.database.timeout_ms

    def confirm(
        self,
        page: Page,
        title: str,
        text: str,
        back: str,
        fields: dict[str, str] | None = None,
    ) -> Response:
        """The page that asks before a change; its form posts back to the same URL."""
        self.gate.allow_changes(page)
        return self.html(
            page,
            "confirm.html",
            title=title,
            text=text,
            action=page.link(page.request.url.path[len(page.base) :]),
            back=back,
            fields=fields or {},
        )

    def path_id(self, request: Request, name: str, what: str) -> int:
        return parse_id(str(request.path_params[name]), what)

    def problem(self, request: Request, exc: Exception) -> Response:
        """A Problem as its page (a fragment for htmx); a GET that needs a token signs in."""
        assert isinstance(exc, Problem)
        if exc.status == 401 and request.method == "GET":
            return RedirectResponse(base_of(request) + "/login", status_code=303)
        response = self.html(
            None,
            "error.html",
            exc.status,
            problem=exc,
            base=base_of(request),
            retry_s=RETRY_S,
            fragment=bool(request.headers.get("hx-request")),
        )
        if exc.retry:
            response.headers["retry-after"] = str(RETRY_S)
        return response


def parse_id(raw: str, what: str) -> int:
    try:
        return forms.job_id(raw, what)
    except forms.BadInput as exc:
        raise Problem(400, "Bad request", str(exc)) from None


def text_param(params: Mapping[str, str], name: str) -> str | None:
    try:
        return forms.text(params, name)
    except forms.BadInput as exc:
        raise Problem(400, "Bad request", str(exc)) from None


def base_of(request: Request) -> str:
    """Where the dashboard is mounted: "" at the root."""
    return str(request.scope.get("root_path", "")).rstrip("/")
