"""The web dashboard: `pipeline dashboard`, or `app()` mounted in your own ASGI app.

Starlette, Jinja2 and uvicorn load when the dashboard is made, not when this package is
imported: the CLI imports it for its command, and its other commands need none of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pg_pipeline.extras import needs_extra

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from pg_pipeline.stage import Registry

__all__ = ["app"]


def app(
    dsn: str | None = None,
    *,
    read_only: bool = False,
    token: str | None = None,
    tenant: str | None = None,
    tenant_tokens: Mapping[str, str] | None = None,
    registry: Registry | None = None,
    poll_s: float = 2.0,
    hosts: Sequence[str] | None = None,
    trusted_proxies: Sequence[str] | None = None,
    session_max_age_s: float | None = None,
    pool_size: int = 4,
    statement_timeout_s: float = 5.0,
) -> Starlette:
    """The dashboard as an ASGI app; see pg_pipeline.dashboard.web.app."""
    with needs_extra("dashboard", "pg_pipeline.dashboard.app()"):
        from pg_pipeline.dashboard import web

    return web.app(
        dsn,
        read_only=read_only,
        token=token,
        tenant=tenant,
        tenant_tokens=tenant_tokens,
        registry=registry,
        poll_s=poll_s,
        hosts=hosts,
        trusted_proxies=trusted_proxies,
        session_max_age_s=session_max_age_s,
        pool_size=pool_size,
        statement_timeout_s=statement_timeout_s,
    )
