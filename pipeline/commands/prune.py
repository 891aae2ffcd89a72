"""`pipeline prune`: delete finished runs older than a cutoff (pipeline/maintenance/retention)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from pg_pipeline.commands.api import (
    EXIT_OK,
    Subcommands,
    add_command,
    duration_arg,
    integer_arg,
    open_db,
    rest_arg,
)
from pg_pipeline.maintenance.blob_sweep import BLOB_GRACE_S, sweep_blobs
from pg_pipeline.maintenance.retention import (
    PRUNE_BATCH,
    PRUNE_BATCH_MAX,
    PRUNE_REST,
    prune,
    said,
)


def add_commands(sub: Subcommands) -> None:
    p = add_command(
        sub,
        "prune",
        run,
        "delete finished jobs older than --older-than, with their outputs and joins, once "
        "their whole run is finished (never a queued or running job, nor a live run's data), "
        "then the blobs (PIPELINE_BLOB_URL) that no remaining run references",
    )
    p.add_argument(
        "--older-than",
        type=duration_arg,
        required=True,
        help="finished longer ago than this, e.g. 36h or 7d",
    )
    p.add_argument(
        "--keep-failed",
        action="store_true",
        help="keep every run with a failed job, whole, to inspect and retry it",
    )
    p.add_argument(
        "--batch",
        type=integer_arg(1, PRUNE_BATCH_MAX),
        default=PRUNE_BATCH,
        help=f"finished jobs read per transaction (1..{PRUNE_BATCH_MAX})",
    )
    p.add_argument(
        "--rest",
        type=rest_arg,
        default=PRUNE_REST,
        metavar="TIMES",
        help="after each batch of runs deleted one by one, rest this many times as long as the "
        f"batch took, leaving the server to the workers (default {PRUNE_REST:g}; 0: full speed)",
    )
    p.add_argument(
        "--blob-grace",
        type=duration_arg,
        default=BLOB_GRACE_S,
        help="keep a blob no run references while it was stored or put again less than this "
        "long ago: longer than a job takes to be enqueued after its blob is put (default 1h)",
    )
    p.add_argument(
        "--sweep-for",
        type=duration_arg,
        default=None,
        metavar="DURATION",
        help="stop deleting blobs after this long and leave the rest to the next prune "
        "(default: until none is left)",
    )


def run(args: argparse.Namespace) -> int:
    _, conn = open_db()
    with conn:
        report = prune(
            conn,
            args.older_than,
            keep_failed=args.keep_failed,
            batch=args.batch,
            rest=args.rest,
        )
        report = replace(
            report,
            blobs=sweep_blobs(conn, grace_s=args.blob_grace, budget_s=args.sweep_for),
        )
    print(said(report))
    if report.blobs is not None and report.blobs.error:
        # The runs are pruned all the same; the blobs that failed stay candidates for next time.
        print(f"warning: blob sweep: {report.blobs.error}", file=sys.stderr)
    return EXIT_OK
