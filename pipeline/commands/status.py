"""`pipeline status`: the monitoring views as a table for people, or one JSON object for scripts."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from pg_pipeline.admin.status import Status, read_status
from pg_pipeline.commands.api import EXIT_OK, Subcommands, add_command, open_db, printable


def add_commands(sub: Subcommands) -> None:
    help = "queue health per stage, tenants near their cap, live workers"
    p = add_command(
        sub,
        "status",
        run,
        help,
        f"{help}. Reads the pipeline_* monitoring views in one snapshot.",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="one JSON object (stable keys; times ISO 8601, durations in seconds)",
    )


def run(args: argparse.Namespace) -> int:
    _, conn = open_db()
    with conn:
        status = read_status(conn)
    if args.json:
        print(json.dumps(status.to_json(), indent=2, sort_keys=True))
    else:
        print(render(status))
    return EXIT_OK


def render(status: Status) -> str:
    lines: list[str] = []
    lines += _stages(status)
    lines += _runs(status)
    lines += _waiting(status)
    lines += _expired(status)
    lines += _failures(status)
    lines += _tenants(status)
    lines += _limits(status)
    lines += _weights(status)
    lines += _budgets(status)
    lines += _workers(status)
    lines += _schedules(status)
    lines += [f"note: {printable(note)}" for note in status.notes]
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 60:
        return f"{value:.2f} s" if value < 10 else f"{value:.0f} s"
    if value < 3600:
        return f"{value / 60:.1f} min"
    return f"{value / 3600:.1f} h"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    """Columns as wide as their widest cell; figures right-aligned, words left-aligned. Every
    cell is shown printable: tenants, names and errors come from whoever enqueued."""
    rows = [[printable(cell) for cell in row] for row in rows]
    columns = list(zip(header, *rows, strict=True))
    widths = [max(len(cell) for cell in column) for column in columns]
    numeric = [
        any(c[:1].isdigit() for c in column[1:])
        and all(c[:1].isdigit() or c in ("-", "*") for c in column[1:])
        for column in columns
    ]

    def line(cells: Sequence[str]) -> str:
        out = [
            cell.rjust(w) if right else cell.ljust(w)
            for cell, w, right in zip(cells, widths, numeric, strict=True)
        ]
        return (indent + "  ".join(out)).rstrip()

    return [line(header), *(line(row) for row in rows)]


def _stages(status: Status) -> list[str]:
    if not status.stages:
        return ["no jobs queued, running, or finished in the last 24 h"]
    header = (
        "stage",
        "queued",
        "ready",
        "running",
        "expired",
        "oldest ready",
        "failed 1h",
        "failed 24h",
        "done 1h",
        "attempts avg/max",
        "p50",
        "p95",
    )
    rows = [
        (
            s.stage,
            str(s.queued),
            str(s.ready),
            str(s.running),
            str(s.expired_leases),
            _seconds(s.oldest_ready_age_s),
            str(s.failed_1h),
            str(s.failed_24h),
            str(s.completed_1h),
            "-" if s.avg_attempts_1h is None else f"{s.avg_attempts_1h:.2f}/{s.max_attempts_1h}",
            _seconds(s.p50_s),
            _seconds(s.p95_s),
        )
        for s in status.stages
    ]
    return _table(header, rows)


def _runs(status: Status) -> list[str]:
    """Runs of more than one job by status; a failed one cannot end done (see `pipeline runs
    list --status failed` for the job that blocks each)."""
    if not any(status.runs.values()):
        return []
    counts = ", ".join(f"{n} {name}" for name, n in status.runs.items() if n)
    return ["", f"runs: {counts}"]


def _waiting(status: Status) -> list[str]:
    """Jobs waiting for input (`pipeline runs waiting` lists them one by one)."""
    if not status.waiting:
        return []
    header = ("stage", "wait", "waiting", "next deadline")
    rows = [
        (w.stage, w.name, str(w.waiting), w.next_deadline.isoformat(timespec="seconds"))
        for w in status.waiting
    ]
    return ["", "waiting for input:", *_table(header, rows)]


def _expired(status: Status) -> list[str]:
    if not status.expired_leases_total:
        return []
    shown = len(status.expired_leases)
    lines = [
        "",
        f"running with an expired lease: {status.expired_leases_total}"
        + (f" (oldest {shown} shown)" if shown < status.expired_leases_total else ""),
    ]
    rows = [
        (
            str(e.id),
            e.stage,
            e.tenant_id or "-",
            str(e.worker_id)[:8] if e.worker_id else "-",
            f"{e.attempts}/{e.max_attempts}",
            _seconds(e.expired_for_s),
        )
        for e in status.expired_leases
    ]
    return lines + _table(
        ("id", "stage", "tenant", "worker", "attempts", "expired for"), rows, "  "
    )


def _failures(status: Status) -> list[str]:
    if not status.failures_hourly:
        return []
    by_stage: dict[str, list[str]] = {}
    for f in status.failures_hourly:
        by_stage.setdefault(printable(f.stage), []).append(f"{f.hour:%H:%M} {f.failed}")
    width = max(len(stage) for stage in by_stage)
    return [
        "",
        "failed per hour, last 24 h (hour starting: jobs; hours without failures left out)",
        *(f"  {stage:<{width}}  {', '.join(hours)}" for stage, hours in by_stage.items()),
    ]


def _tenants(status: Status) -> list[str]:
    near = [t for t in status.tenants if t.near_cap]
    unknown = [t for t in status.tenants if t.cap is None]
    listed = len(status.tenants)
    scope = f"{status.tenants_total} capped (tenant, stage) pairs" + (
        "" if listed == status.tenants_total else f", the {listed} closest to their cap checked"
    )
    if not near and not unknown:
        return ["", f"tenants at or near their cap: none ({scope})"]
    rows = [
        (
            t.tenant_id,
            t.stage,
            str(t.running),
            "*" if t.cap is None else str(t.cap),
            str(t.queued),
        )
        for t in [*near, *unknown]
    ]
    return [
        "",
        f"tenants at or near their cap ({scope}; * a default cap from the workers' code)",
        *_table(("tenant", "stage", "running", "cap", "queued"), rows, "  "),
    ]


def _limits(status: Status) -> list[str]:
    """Rate limits with a capacity: what their windows hold, and the jobs they hold back."""
    rows = [
        (
            r.name,
            r.key,
            f"{r.used}/{r.capacity} per {r.per_seconds} s",
            str(r.waiting),
            "full" if r.full else "",
        )
        for r in status.limits
        if r.capacity is not None and (r.used or r.waiting)
    ]
    if not rows:
        return []
    return [
        "",
        "rate limits (`pipeline limits list` for all):",
        *_table(("limit", "key", "used", "waiting", ""), rows, "  "),
    ]


def _weights(status: Status) -> list[str]:
    """The weights operators set; every other tenant weighs 1."""
    if not status.weights:
        return []
    shown = len(status.weights)
    more = "" if shown == status.weights_total else f", the first {shown} shown"
    rows = [
        (w.tenant_id, "(every)" if w.stage is None else w.stage, f"{w.weight:g}")
        for w in status.weights
    ]
    return [
        "",
        f"tenant weights ({status.weights_total} set{more}; every other tenant weighs 1)",
        *_table(("tenant", "stage", "weight"), rows, "  "),
    ]


def _budgets(status: Status) -> list[str]:
    """Budgets at or past their warning level: an exhausted one has stopped its tenant's
    claims (`pipeline budgets list` shows every budget)."""
    alerts = [b for b in status.budgets if b.alerting]
    if not status.budgets_total:
        return []
    if not alerts:
        return ["", f"budgets at or past their warning level: none ({status.budgets_total} set)"]
    rows = [
        (
            b.tenant_id,
            "(every)" if b.stage is None else b.stage,
            b.counter,
            b.per,
            f"{b.used:.6g}",
            f"{b.limit:.6g}",
            "claims stopped" if b.state == "exhausted" else f"warning (at {b.warn:.0%})",
        )
        for b in alerts
    ]
    return [
        "",
        f"budgets at or past their warning level ({len(alerts)} of {status.budgets_total})",
        *_table(("tenant", "stage", "counter", "per", "used", "limit", "state"), rows, "  "),
    ]


def _workers(status: Status) -> list[str]:
    lines = ["", f"workers: {len(status.workers)} live"]
    if not status.workers:
        return lines
    rows = [
        (
            str(w.id)[:8],
            w.hostname,
            str(w.pid),
            ",".join(w.stages),
            str(w.concurrency),
            str(w.in_flight),
            f"{_seconds(w.seen_ago_s)} ago",
        )
        for w in status.workers
    ]
    return lines + _table(
        ("id", "host", "pid", "stages", "slots", "in flight", "last heartbeat"), rows, "  "
    )


def _schedules(status: Status) -> list[str]:
    if not status.schedules_total:
        return ["", "schedules: none"]
    shown = len(status.schedules)
    lines = [
        "",
        f"schedules: {status.schedules_total}"
        + (f" (the {shown} due soonest shown)" if shown < status.schedules_total else ""),
    ]
    rows = [
        (
            s.name,
            s.stage,
            s.cron if s.cron is not None else f"every {_seconds(s.every_s)}",
            f"{s.next_fire_at:%Y-%m-%d %H:%M:%S %Z}",
            "paused"
            if s.paused
            else (
                f"in {_seconds(s.due_in_s)}"
                if s.due_in_s >= 0
                else f"due {_seconds(-s.due_in_s)} ago"
            ),
            (s.last_error or "").splitlines()[0][:60] if s.last_error else "",
        )
        for s in status.schedules
    ]
    return lines + _table(("name", "stage", "timing", "next fire", "due", "last error"), rows, "  ")
