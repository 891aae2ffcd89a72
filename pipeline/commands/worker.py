"""`pipeline worker`: run jobs until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import gc
import logging
import os
import signal
from types import FrameType

from pydantic import ValidationError

from pg_pipeline.commands.api import (
    EXIT_USAGE,
    CliError,
    Subcommands,
    add_command,
    argument,
    cap_arg,
    duration_arg,
    integer_arg,
    load_apps,
    open_db,
    seconds_arg,
    stage_arg,
    text_arg,
)
from pg_pipeline.errors import UnknownStage
from pg_pipeline.inputs import dead_rows_or_off
from pg_pipeline.logs import LOG_FORMAT_ENV, LOG_FORMATS, LogSetup, configure
from pg_pipeline.settings import WorkerSettings
from pg_pipeline.worker import Worker

log = logging.getLogger("pg_pipeline")

#: Longest --grace, --poll-interval, --reclaim-interval: threading's waits overflow at ~292 years.
INTERVAL_MAX_S = 7 * 86_400

#: Container objects made and not yet freed since the collector's last young pass that start
#: the next one (Python's default: 700). A claim makes about a dozen per job, all alive until
#: the job's batch is acknowledged: at 700 a pass ran every 60-100 jobs and walked every job in
#: flight, and every tenth pass walked them again, 1.4-2.7 us of a no-op job's CPU in a drain
#: (docs/measurements.md, issue 21). An object freed by its last reference comes off the count;
#: garbage in cycles (a stage's exception and its frames) waits for the pass a little longer.
YOUNG_GC_THRESHOLD = 10_000

#: The largest --claim-batch-max: as many payloads held at once as the prefetch's largest (4,096:
#: 1 GiB at the 256 KiB payload limit). And the largest --ack-batch-max.
CLAIM_BATCH_LIMIT = 4096
ACK_BATCH_LIMIT = 10_000

#: The flag behind each WorkerSettings field the worker command sets, to name it in errors.
WORKER_FLAGS = {
    "concurrency": "--concurrency",
    "prefetch": "--prefetch",
    "claim_batch_max": "--claim-batch-max",
    "ack_batch_max": "--ack-batch-max",
    "grace_period_s": "--grace",
    "poll_interval_s": "--poll-interval",
    "reclaim_interval_s": "--reclaim-interval",
    "retention_s": "--retention",
    "blob_grace_s": "--blob-grace",
    "metrics_port": "--metrics-port",
    "metrics_host": "--metrics-host",
    "tenant_cap": "--tenant-cap",
    "hot_vacuum_dead_rows": "--hot-vacuum-dead-rows",
}


def add_commands(sub: Subcommands) -> None:
    defaults = WorkerSettings()
    w = add_command(sub, "worker", run, "run jobs until SIGTERM/SIGINT")
    w.add_argument(
        "--app",
        action="append",
        type=text_arg,
        default=[],
        help="app whose stages to run: a module, or an installed app's name such as documents "
        "(repeatable; default: PIPELINE_APP, else the config file's apps)",
    )
    w.add_argument(
        "--stage",
        action="append",
        type=stage_arg,
        default=[],
        help="only these stages (repeatable)",
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
        "--claim-batch-max",
        type=integer_arg(1, CLAIM_BATCH_LIMIT),
        default=defaults.claim_batch_max,
        help=f"most jobs one claim statement takes (default {defaults.claim_batch_max})",
    )
    w.add_argument(
        "--ack-batch-max",
        type=integer_arg(1, ACK_BATCH_LIMIT),
        default=defaults.ack_batch_max,
        help=f"most completions one statement writes (default {defaults.ack_batch_max})",
    )
    w.add_argument(
        "--retention",
        type=duration_arg,
        default=None,
        help="prune finished runs older than this, e.g. 7d (default: keep everything)",
    )
    w.add_argument(
        "--blob-grace",
        type=duration_arg,
        default=defaults.blob_grace_s,
        help="with --retention: keep a blob no run references while it was stored or put "
        "again less than this long ago (default 1h)",
    )
    w.add_argument(
        "--no-listen",
        action="store_true",
        help="poll only (e.g. behind PgBouncer in transaction mode)",
    )
    w.add_argument(
        "--hot-vacuum-dead-rows",
        type=argument(dead_rows_or_off),
        default=defaults.hot_vacuum_dead_rows,
        metavar="N|off",
        help="dead rows in the hot table from which the worker vacuums it itself, or as many as "
        f"it has live rows if more (default {defaults.hot_vacuum_dead_rows}); off: leave them "
        "to autovacuum",
    )
    w.add_argument(
        "--metrics-port",
        type=integer_arg(0, 65535),
        default=defaults.metrics_port,
        help="serve Prometheus metrics on this port at /metrics (default: off)",
    )
    w.add_argument(
        "--metrics-host",
        type=text_arg,
        default=defaults.metrics_host,
        help=f"address /metrics binds (default {defaults.metrics_host}, this machine alone; "
        "0.0.0.0 for every interface)",
    )
    w.add_argument(
        "--log-format",
        type=log_format_arg,
        default=os.environ.get(LOG_FORMAT_ENV, "text"),
        help=f"text, or json: one JSON object per line, a job's fields as keys (default: "
        f"{LOG_FORMAT_ENV}, else text)",
    )
    w.add_argument(
        "--tenant-cap",
        type=cap_arg,
        default=None,
        help="running jobs one tenant may hold per stage, for stages that declare no cap",
    )


def log_format_arg(text: str) -> str:
    if text not in LOG_FORMATS:
        raise argparse.ArgumentTypeError(
            f"unknown log format {text!r}; expected one of {', '.join(LOG_FORMATS)}"
        )
    return text


def settings_of(args: argparse.Namespace) -> WorkerSettings:
    """The worker's settings from its flags; pydantic's ValidationError when they do not fit."""
    return WorkerSettings(
        concurrency=args.concurrency,
        prefetch=args.prefetch,
        claim_batch_max=args.claim_batch_max,
        ack_batch_max=args.ack_batch_max,
        grace_period_s=args.grace,
        poll_interval_s=args.poll_interval,
        reclaim_interval_s=args.reclaim_interval,
        retention_s=args.retention,
        blob_grace_s=args.blob_grace,
        listen=not args.no_listen,
        hot_vacuum_dead_rows=args.hot_vacuum_dead_rows,
        metrics_port=args.metrics_port,
        metrics_host=args.metrics_host,
        tenant_cap=args.tenant_cap,
    )


def run(args: argparse.Namespace) -> int:
    # Settings before apps: a usage error should cost no imports (and none of their effects).
    try:
        settings = settings_of(args)
    except ValidationError as exc:
        reasons = "; ".join(
            f"{WORKER_FLAGS.get(str(e['loc'][0]), e['loc'][0]) if e['loc'] else 'settings'}: "
            f"{e['msg']}"
            for e in exc.errors()
        )
        raise CliError(reasons, EXIT_USAGE) from exc
    configure(LogSetup(args.log_format, args.log_level))
    if not load_apps(args.app):
        raise CliError(
            "no apps to run: name them with --app MODULE (the document pipeline: --app "
            "documents), PIPELINE_APP, or `apps` in pipeline.toml",
            EXIT_USAGE,
        )
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
    settle_heap()
    return worker.run()


def settle_heap() -> None:
    """What exists now (modules, the apps' models, the registry) lives as long as this process:
    out of the collector's sight, the full collections that each job's garbage sets off do not
    walk it again and again (8% of a no-op job's CPU went to the collector). And the young
    passes wait for YOUNG_GC_THRESHOLD objects."""
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_GC_THRESHOLD, middle, oldest)
