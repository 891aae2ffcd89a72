"""The web dashboard: `pipeline dashboard`, or `app()` mounted in your own ASGI app.

Starlette, Jinja2 and uvicorn load when the dashboard is made, not when this package is
imported: the CLI imports it for its command, and its other commands need none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pg_pipeline.extras import needs_extra

__all__ = ["app"]

if TYPE_CHECKING:
    # What type checkers and editors see: web.app itself, whose parameters and defaults are
    # spelled there alone (the defaults are settings of the modules that import Starlette).
    from pg_pipeline.dashboard.web import app
else:

    def app(*args: Any, **kwargs: Any) -> Any:
        """The dashboard as an ASGI app; see pg_pipeline.dashboard.web.app, which this calls
        with the same arguments once the dashboard extra is found."""
        with needs_extra("dashboard", "pg_pipeline.dashboard.app()"):
            from pg_pipeline.dashboard import web

        return web.app(*args, **kwargs)
