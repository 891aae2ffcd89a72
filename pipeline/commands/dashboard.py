"""`pipeline dashboard`: serve the web dashboard with uvicorn.

Kept apart from the app so that the CLI can list the command without importing Starlette,
Jinja2 and uvicorn; they load when the command runs.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from pg_pipeline import inputs
from pg_pipeline.commands.api import (
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    Subcommands,
    add_command,
    argument,
    integer_arg,
    load_apps,
    open_db,
    printable,
    seconds_arg,
    tenant_arg,
    text_arg,
)
from pg_pipeline.dashboard.database import POOL_SIZE, STATEMENT_TIMEOUT_S
from pg_pipeline.dashboard.security import (
    HOSTS_ENV,
    SESSION_MAX_AGE_S,
    TENANT_TOKENS_ENV,
    TOKEN_ENV,
    TRUSTED_PROXIES_ENV,
    is_loopback,
    parse_tenant_tokens,
)
from pg_pipeline.db import describe
from pg_pipeline.extras import needs_extra

log = logging.getLogger("pg_pipeline.dashboard")


def add_commands(sub: Subcommands) -> None:
    p = add_command(
        sub,
        "dashboard",
        run,
        "serve the web dashboard (loopback only unless PIPELINE_DASHBOARD_TOKEN is set)",
    )
    p.add_argument("--host", type=text_arg, default="127.0.0.1", help="address to bind")
    p.add_argument("--port", type=integer_arg(1, 65535), default=8080)
    p.add_argument(
        "--read-only", action="store_true", help="no retry, cancel, pause or resume from it"
    )
    p.add_argument("--tenant", type=tenant_arg, help="show and change this tenant's jobs alone")
    p.add_argument(
        "--app",
        action="append",
        type=text_arg,
        default=[],
        help="module defining stages (as PIPELINE_APP): a run shows their fields in model order",
    )
    p.add_argument(
        "--allowed-host",
        action="append",
        type=text_arg,
        help=f"a host name served besides loopback ones (repeat it; default: {HOSTS_ENV})",
    )
    p.add_argument(
        "--trusted-proxy",
        action="append",
        type=text_arg,
        help="address or network of a reverse proxy whose X-Forwarded-Host/-Proto are believed "
        f"(repeat it; default: {TRUSTED_PROXIES_ENV})",
    )
    p.add_argument(
        "--session-max-age",
        type=argument(inputs.duration),
        default=SESSION_MAX_AGE_S,
        help="how long a sign-in lasts, e.g. 30m or 8h (default 8h)",
    )
    p.add_argument(
        "--pool-size",
        type=integer_arg(1, 100),
        default=POOL_SIZE,
        help=f"database connections held at most (default {POOL_SIZE})",
    )
    p.add_argument(
        "--statement-timeout",
        type=seconds_arg(3_600, above_zero=True),
        default=STATEMENT_TIMEOUT_S,
        help=f"seconds one statement of a page may take (default {STATEMENT_TIMEOUT_S:g})",
    )


def run(args: argparse.Namespace) -> int:
    token = os.environ.get(TOKEN_ENV) or None
    try:
        tenant_tokens = parse_tenant_tokens(os.environ.get(TENANT_TOKENS_ENV, ""))
    except ValueError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    if not is_loopback(args.host) and token is None and not tenant_tokens:
        # Payloads, errors and the power to cancel, open to the network: not without a token.
        raise CliError(
            f"refusing to serve the dashboard on {args.host}, which is not a loopback address, "
            f"without a token: set {TOKEN_ENV} (or {TENANT_TOKENS_ENV}), or bind to 127.0.0.1",
            EXIT_USAGE,
        )
    with needs_extra("dashboard", "pipeline dashboard"):
        import uvicorn

        from pg_pipeline.dashboard.web import app

    try:
        load_apps(args.app)
    except CliError as exc:
        if args.app:
            raise
        # Only to order a run's fields: without the plugin's models they come in stored order.
        log.warning("%s; extracted fields are shown in stored order", exc)
    dsn, conn = open_db()  # migrates, like the other commands, and fails fast when unreachable
    conn.close()

    try:
        served = app(
            dsn,
            read_only=args.read_only,
            token=token,
            tenant=args.tenant,
            tenant_tokens=tenant_tokens,
            hosts=args.allowed_host,
            trusted_proxies=args.trusted_proxy,
            session_max_age_s=args.session_max_age,
            pool_size=args.pool_size,
            statement_timeout_s=args.statement_timeout,
        )
    except ValueError as exc:  # a tenant token too short, shared, for another tenant; a host
        raise CliError(str(exc), EXIT_USAGE) from None
    host = printable(f"[{args.host}]" if ":" in args.host else args.host)
    print(
        f"pipeline dashboard on http://{host}:{args.port}/ (database {describe(dsn)}"
        f"{', read-only' if args.read_only else ''})",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(
        served,
        host=args.host,
        port=args.port,
        log_level="warning",
        access_log=False,
        # The dashboard reads forwarding headers itself, from its configured proxy alone;
        # uvicorn's own reading would believe any process on 127.0.0.1.
        proxy_headers=False,
    )
    server = uvicorn.Server(config)
    server.run()
    if not server.started:
        raise CliError(f"cannot serve on {args.host}:{args.port} (is the port taken?)")
    return EXIT_OK
