"""The monitoring views, the status snapshot and the Prometheus endpoint, on known rows."""

from __future__ import annotations

import json
import urllib.request
import uuid
from typing import Any

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from pg_pipeline.admin.metrics import QueueCollector
from pg_pipeline.admin.status import read_status
from pg_pipeline.queries import Q
from pg_pipeline.worker.metrics import WorkerMetrics
from tests.support.history import INDEX, big_seq_scans, make_past_days

Conn = psycopg.Connection[Any]


@pytest.fixture(autouse=True)
def history_days(db_url: str) -> None:
    """The history's days that this module's finished jobs are dated in."""
    with psycopg.connect(db_url, autocommit=True) as c:
        make_past_days(c, 3)


W1, W2 = uuid.UUID(int=1), uuid.UUID(int=2)


def rows(conn: Conn, query: str) -> list[dict[str, Any]]:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query).fetchall()  # type: ignore[arg-type]


def by_stage(conn: Conn, view: str) -> dict[str, dict[str, Any]]:
    return {r["stage"]: r for r in rows(conn, f"SELECT * FROM {view}")}


def finished(conn: Conn, stage: str, status: str, ago: str, *, n: int = 1, **cols: Any) -> None:
    """n jobs of `stage` that ended with `status` the interval `ago` before now."""
    names = ", ".join(cols)
    values = ", ".join(f"%({c})s" for c in cols)
    conn.execute(
        f"""INSERT INTO pipeline.job_history (type, payload, status, finished_at, started_at
                              {", " + names if cols else ""})
            SELECT %(stage)s, '{{}}', %(status)s, now() - %(ago)s::interval,
                   now() - %(ago)s::interval - interval '1 second'
                   {", " + values if cols else ""}
            FROM generate_series(1, %(n)s)""",  # type: ignore[arg-type]
        {"stage": stage, "status": status, "ago": ago, "n": n, **cols},
    )


def test_oldest_ready_reads_tenanted_and_untenanted_ready_jobs(conn: Conn) -> None:
    conn.execute(
        """INSERT INTO pipeline.active_jobs (type, tenant_id, payload, run_after) VALUES
           ('ocr', 'acme', '{}', now() - interval '10 minutes'),
           ('ocr', NULL, '{}', now() - interval '1 minute'),
           ('ocr', 'acme', '{}', now() + interval '1 hour'),  -- not ready yet
           ('extract', NULL, '{}', now() - interval '30 seconds')"""
    )
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, payload, status) VALUES ('ocr', '{}', 'running')"
    )
    conn.execute(
        "INSERT INTO pipeline.job_history (type, payload, status, finished_at) "
        "VALUES ('ocr', '{}', 'done', now())"
    )
    seen = by_stage(conn, "pipeline.oldest_ready")
    assert set(seen) == {"ocr", "extract"}
    assert seen["ocr"]["ready"] == 2
    assert seen["ocr"]["oldest_age_s"] == pytest.approx(600, abs=5)
    assert seen["extract"]["ready"] == 1
    assert seen["extract"]["oldest_age_s"] == pytest.approx(30, abs=5)


def test_failures_hourly_counts_failed_jobs_per_clock_hour_for_a_day(conn: Conn) -> None:
    conn.execute(
        """INSERT INTO pipeline.job_history (type, payload, status, finished_at)
           SELECT 'ocr', '{}', 'failed', date_trunc('hour', now()) + interval '1 second'
           FROM generate_series(1, 3)"""
    )
    conn.execute(
        """INSERT INTO pipeline.job_history (type, payload, status, finished_at) VALUES
           ('ocr', '{}', 'failed', date_trunc('hour', now()) - interval '5 hours'),
           ('extract', '{}', 'failed', date_trunc('hour', now()) - interval '23 hours'),
           ('extract', '{}', 'failed', date_trunc('hour', now()) - interval '24 hours'),  -- out
           ('ocr', '{}', 'done', date_trunc('hour', now())),
           ('ocr', '{}', 'cancelled', date_trunc('hour', now()))"""
    )
    hourly = rows(
        conn,
        """SELECT stage, extract(epoch FROM date_trunc('hour', now()) - hour) / 3600 AS hours_ago,
                  failed
           FROM pipeline.failures_hourly ORDER BY hour, stage""",
    )
    assert [(r["stage"], int(r["hours_ago"]), r["failed"]) for r in hourly] == [
        ("extract", 23, 1),
        ("ocr", 5, 1),
        ("ocr", 0, 3),
    ]


def test_expired_leases_lists_running_jobs_whose_lease_ran_out(conn: Conn) -> None:
    conn.execute(
        """INSERT INTO pipeline.active_jobs (type, tenant_id, payload, status, attempts,
            leased_until,
            worker_id)
           VALUES ('ocr', 'acme', '{}', 'running', 2, now() - interval '90 seconds', %s),
                  ('ocr', NULL, '{}', 'running', 1, now() + interval '5 minutes', %s),
                  ('ocr', NULL, '{}', 'queued', 0, now() - interval '1 hour', NULL)""",
        (W1, W1),
    )
    [expired] = rows(conn, "SELECT * FROM pipeline.expired_leases")
    assert (expired["stage"], expired["tenant_id"], expired["worker_id"]) == ("ocr", "acme", W1)
    assert (expired["attempts"], expired["max_attempts"]) == (2, 5)
    assert expired["expired_for_s"] == pytest.approx(90, abs=5)


def test_attempts_per_completed_job_over_the_last_hour_and_day(conn: Conn) -> None:
    finished(conn, "ocr", "done", "10 minutes", attempts=1, n=3)
    finished(conn, "ocr", "done", "20 minutes", attempts=3)
    finished(conn, "ocr", "done", "5 hours", attempts=5)
    finished(conn, "ocr", "done", "2 days", attempts=9)  # out of both windows
    finished(conn, "ocr", "failed", "1 minute", attempts=5)  # not completed
    finished(conn, "extract", "done", "3 hours", attempts=2)
    seen = by_stage(conn, "pipeline.attempts")
    assert seen["ocr"] == {
        "stage": "ocr",
        "completed_1h": 4,
        "avg_attempts_1h": pytest.approx(1.5),
        "max_attempts_1h": 3,
        "completed_24h": 5,
        "avg_attempts_24h": pytest.approx(2.2),
        "max_attempts_24h": 5,
    }
    assert seen["extract"]["completed_1h"] == 0
    assert seen["extract"]["avg_attempts_1h"] is None
    assert (seen["extract"]["completed_24h"], seen["extract"]["max_attempts_24h"]) == (1, 2)


def test_durations_are_p50_and_p95_of_jobs_done_in_the_last_hour(conn: Conn) -> None:
    # Run times of 1..100 s, finished in the last hour; one older and one failed job left out.
    conn.execute(
        """INSERT INTO pipeline.job_history (type, payload, status, started_at, finished_at)
           SELECT 'ocr', '{}', 'done', now() - interval '5 minutes' - g * interval '1 second',
                  now() - interval '5 minutes'
           FROM generate_series(1, 100) AS g"""
    )
    conn.execute(
        """INSERT INTO pipeline.job_history (type, payload, status, started_at, finished_at) VALUES
           ('ocr', '{}', 'done', now() - interval '3 hours', now() - interval '2 hours'),
           ('ocr', '{}', 'failed', now() - interval '50 minutes', now() - interval '1 minute')"""
    )
    [ocr] = rows(conn, "SELECT * FROM pipeline.durations")
    assert ocr["completed"] == 100
    # Estimates from the rollups' histogram, whose buckets are 26% wide: within 13% of
    # percentile_cont's 50.5 and 95.05. The longest run is kept exactly.
    assert ocr["p50_s"] == pytest.approx(50.5, rel=0.13)
    assert ocr["p95_s"] == pytest.approx(95.05, rel=0.13)
    assert ocr["max_s"] == pytest.approx(100)


def test_stage_counts_count_queued_running_and_recent_failures(conn: Conn) -> None:
    conn.execute(
        """INSERT INTO pipeline.active_jobs (type, tenant_id, payload, status, run_after) VALUES
           ('ocr', 'acme', '{}', 'queued', now()),
           ('ocr', NULL, '{}', 'queued', now() + interval '1 day'),
           ('ocr', NULL, '{}', 'running', now()),
           ('extract', 'acme', '{}', 'running', now())"""
    )
    finished(conn, "ocr", "failed", "10 minutes", n=2)
    finished(conn, "ocr", "failed", "3 hours")
    finished(conn, "ocr", "failed", "3 days")  # outside the window: not read at all
    finished(conn, "ocr", "done", "1 minute", n=5)
    seen = by_stage(conn, "pipeline.stage_counts")
    assert seen == {
        "ocr": {"stage": "ocr", "queued": 2, "running": 1, "failed_1h": 2, "failed_24h": 3},
        "extract": {"stage": "extract", "queued": 0, "running": 1, "failed_1h": 0, "failed_24h": 0},
    }


def test_tenant_load_shows_database_caps_and_pairs_holding_slots_under_a_code_default(
    conn: Conn,
) -> None:
    conn.execute(
        """INSERT INTO pipeline.tenant_caps (tenant_id, stage, cap) VALUES
           ('acme', 'ocr', 4), ('globex', 'ocr', 0), ('initech', 'ocr', 10)"""
    )
    conn.execute(
        """INSERT INTO pipeline.tenant_slots (tenant_id, stage, running) VALUES
           ('acme', 'ocr', 3), ('hooli', 'ocr', 2), ('idle', 'ocr', 0)
           ON CONFLICT (tenant_id, stage) DO UPDATE SET running = excluded.running"""
    )
    conn.execute(
        """INSERT INTO pipeline.active_jobs (type, tenant_id, payload)
           SELECT 'ocr', t, '{}' FROM unnest(ARRAY['acme', 'acme', 'hooli']) AS t"""
    )
    seen = {
        r["tenant_id"]: (r["running"], r["cap"], r["free"], r["queued"])
        for r in rows(conn, "SELECT * FROM pipeline.tenant_load WHERE stage = 'ocr'")
    }
    assert seen == {
        "acme": (3, 4, 1, 2),
        "globex": (0, 0, 0, 0),
        "initech": (0, 10, 10, 0),
        "hooli": (2, None, None, 1),  # capped by a default the database does not hold
    }


def test_live_workers_have_their_heartbeat_and_in_flight_jobs(conn: Conn) -> None:
    conn.execute(
        """INSERT INTO pipeline.workers (id, hostname, pid, stages, concurrency, last_seen)
           VALUES (%s, 'box-1', 11, '{ocr,extract}', 8, now() - interval '20 seconds'),
                  (%s, 'box-2', 22, '{ocr}', 2, now() - interval '10 minutes')""",
        (W1, W2),
    )
    conn.execute(
        """INSERT INTO pipeline.active_jobs (type, payload, status, worker_id, leased_until)
           SELECT 'ocr', '{}', 'running', %s, now() + interval '1 minute'
           FROM generate_series(1, 3)""",
        (W1,),
    )
    conn.execute(
        "INSERT INTO pipeline.job_history (type, payload, status, worker_id, finished_at) "
        "VALUES ('ocr', '{}', 'done', %s, now())",
        (W1,),
    )
    [live] = rows(conn, "SELECT * FROM pipeline.live_workers")
    assert (live["id"], live["hostname"], live["pid"], live["stages"]) == (
        W1,
        "box-1",
        11,
        ["ocr", "extract"],
    )
    assert (live["concurrency"], live["in_flight"]) == (8, 3)
    assert live["seen_ago_s"] == pytest.approx(20, abs=5)


def test_schedule_next_says_how_long_until_each_fires(conn: Conn) -> None:
    conn.execute(
        """INSERT INTO pipeline.schedules (name, stage, cron, every_s, source, paused,
                                          next_fire_at)
           VALUES ('hourly', 'ocr', NULL, 3600, 'cli', false, now() + interval '10 minutes'),
                  ('late', 'ocr', '0 * * * *', NULL, 'code', false, now() - interval '2 minutes'),
                  ('held', 'ocr', NULL, 60, 'cli', true, now() - interval '1 day')"""
    )
    seen = {r["name"]: r for r in rows(conn, "SELECT * FROM pipeline.schedule_next")}
    assert seen["hourly"]["due_in_s"] == pytest.approx(600, abs=5)
    assert seen["late"]["due_in_s"] == pytest.approx(-120, abs=5)
    assert seen["late"]["cron"] == "0 * * * *" and seen["held"]["paused"] is True


def seed_everything(conn: Conn) -> None:
    conn.execute(
        """INSERT INTO pipeline.active_jobs (type, tenant_id, payload, run_after)
           SELECT 'ocr', 'acme', '{}', now() - interval '2 minutes' FROM generate_series(1, 4)"""
    )
    conn.execute(
        """INSERT INTO pipeline.active_jobs (type, payload, status, attempts, leased_until,
            worker_id)
           VALUES ('ocr', '{}', 'running', 1, now() - interval '1 minute', %s)""",
        (W1,),
    )
    finished(conn, "extract", "done", "5 minutes", attempts=2, n=3)
    finished(conn, "extract", "failed", "5 minutes", attempts=5)
    conn.execute(
        """INSERT INTO pipeline.workers (id, hostname, pid, stages, concurrency)
           VALUES (%s, 'box', 7, '{ocr,extract}', 4)""",
        (W1,),
    )
    conn.execute(
        "INSERT INTO pipeline.tenant_caps (tenant_id, stage, cap) VALUES ('acme', 'ocr', 5)"
    )
    conn.execute(
        """INSERT INTO pipeline.tenant_slots (tenant_id, stage, running) VALUES ('acme', 'ocr', 5)
           ON CONFLICT (tenant_id, stage) DO UPDATE SET running = excluded.running"""
    )
    conn.execute(
        """INSERT INTO pipeline.schedules (name, stage, every_s, source, next_fire_at)
           VALUES ('tick', 'extract', 60, 'cli', now() + interval '30 seconds')"""
    )


def test_read_status_takes_one_snapshot_of_every_view_and_serialises_to_json(
    conn: Conn,
) -> None:
    seed_everything(conn)
    status = read_status(conn)
    stages = {s.stage: s for s in status.stages}
    assert set(stages) == {"ocr", "extract"}
    ocr, extract = stages["ocr"], stages["extract"]
    assert (ocr.queued, ocr.ready, ocr.running, ocr.expired_leases) == (4, 4, 1, 1)
    assert ocr.oldest_ready_age_s == pytest.approx(120, abs=5)
    assert (extract.completed_1h, extract.failed_1h, extract.max_attempts_1h) == (3, 1, 2)
    assert extract.p50_s == pytest.approx(1.0)
    assert [(e.stage, e.worker_id) for e in status.expired_leases] == [("ocr", W1)]
    assert status.expired_leases_total == 1
    [acme] = status.tenants
    assert (acme.tenant_id, acme.running, acme.cap, acme.near_cap) == ("acme", 5, 5, True)
    assert [(w.id, w.in_flight) for w in status.workers] == [(W1, 1)]
    assert [s.name for s in status.schedules] == ["tick"] and status.schedules_total == 1
    assert status.notes == []

    shaped = json.loads(json.dumps(status.to_json()))
    assert shaped["version"] == 1
    assert set(shaped) == {
        "version",
        "taken_at",
        "stages",
        "failures_hourly",
        "expired_leases",
        "tenants",
        "workers",
        "schedules",
        "notes",
        "runs",
        "waiting",
        "limits",
        "weights",
        "budgets",
    }
    assert set(shaped["runs"]) == {"running", "waiting", "done", "failed", "cancelled"}
    assert shaped["workers"][0]["id"] == str(W1)
    assert shaped["tenants"]["rows"][0]["near_cap"] is True


def test_read_status_limits_long_lists_but_counts_them_all(conn: Conn) -> None:
    conn.execute(
        """INSERT INTO pipeline.active_jobs (type, payload, status, leased_until)
           SELECT 'ocr', '{}', 'running', now() - g * interval '1 second'
           FROM generate_series(1, 30) AS g"""
    )
    status = read_status(conn, expired_limit=5)
    assert status.expired_leases_total == 30
    assert len(status.expired_leases) == 5
    assert status.expired_leases[0].expired_for_s > status.expired_leases[-1].expired_for_s
    assert status.stages[0].expired_leases == 30


def seed_tenant(conn: Conn, tenant: str | None) -> None:
    """One tenant's share of every figure: ready and waiting, running and expired, done and
    failed within the hour, the day and before, a cap, a schedule."""
    conn.execute(
        """INSERT INTO pipeline.active_jobs (type, tenant_id, payload, run_after) VALUES
           ('ocr', %(t)s, '{}', now() - interval '3 minutes'),
           ('ocr', %(t)s, '{}', now() + interval '1 hour'),
           ('extract', %(t)s, '{}', now() - interval '40 seconds')""",
        {"t": tenant},
    )
    conn.execute(
        """INSERT INTO pipeline.active_jobs (type, tenant_id, payload, status, attempts,
            leased_until,
            worker_id)
           VALUES ('ocr', %(t)s, '{}', 'running', 2, now() - interval '1 minute', %(w)s),
                  ('ocr', %(t)s, '{}', 'running', 1, now() + interval '1 minute', %(w)s)""",
        {"t": tenant, "w": W1},
    )
    for status, ago, attempts, n in (
        ("done", "10 minutes", 1, 3),
        ("done", "20 minutes", 4, 1),
        ("done", "5 hours", 2, 2),
        ("done", "3 days", 9, 1),
        ("failed", "2 minutes", 5, 1),
        ("failed", "7 hours", 5, 2),
        ("cancelled", "1 minute", 1, 1),
    ):
        finished(conn, "ocr", status, ago, n=n, attempts=attempts, tenant_id=tenant)
    finished(conn, "upload", "done", "30 minutes", attempts=1, tenant_id=tenant)
    finished(conn, "archive", "cancelled", "30 minutes", tenant_id=tenant)  # not a listed stage
    if tenant is not None:
        conn.execute(
            "INSERT INTO pipeline.tenant_caps (tenant_id, stage, cap) VALUES (%s, 'ocr', 4)",
            (tenant,),
        )
        conn.execute(
            """INSERT INTO pipeline.schedules (name, stage, tenant_id, every_s, source,
                                               next_fire_at)
               VALUES (%s, 'ocr', %s, 60, 'cli', now() + interval '30 seconds')""",
            (f"{tenant}-tick", tenant),
        )


def timeless(status: Any) -> dict[str, Any]:
    """A status's figures without the ones that move with the clock between two reads."""
    shaped = status.to_json()
    for s in shaped["stages"]:
        s["oldest_ready_age_s"] = s["oldest_ready_age_s"] is not None
    for e in shaped["expired_leases"]["oldest"]:
        e.pop("id")
        e["expired_for_s"] = round(e["expired_for_s"] / 60)
    for s in shaped["schedules"]["rows"]:
        s["due_in_s"] = round(s["due_in_s"] / 60)
    shaped.pop("taken_at")
    return shaped


def test_a_status_scoped_to_a_tenant_is_what_the_views_say_of_that_tenants_jobs_alone(
    conn: Conn,
) -> None:
    seed_tenant(conn, "acme")
    for other in ("zeta", None):
        seed_tenant(conn, other)
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, tenant_id, payload) VALUES ('zeta-only', "
        "'zeta', '{}')"
    )
    conn.execute(
        """INSERT INTO pipeline.workers (id, hostname, pid, stages, concurrency)
           VALUES (%s, 'box', 7, '{ocr}', 4)""",
        (W1,),
    )

    scoped = read_status(conn, tenant="acme")
    conn.execute("DELETE FROM pipeline.active_jobs WHERE tenant_id IS DISTINCT FROM 'acme'")
    conn.execute("DELETE FROM pipeline.job_history WHERE tenant_id IS DISTINCT FROM 'acme'")
    conn.execute("DELETE FROM pipeline.schedules WHERE tenant_id IS DISTINCT FROM 'acme'")
    conn.execute("DELETE FROM pipeline.tenant_caps WHERE tenant_id IS DISTINCT FROM 'acme'")
    whole = read_status(conn)

    assert [s.stage for s in scoped.stages] == ["extract", "ocr", "upload"]
    ocr = scoped.stages[1]
    assert (ocr.queued, ocr.ready, ocr.running, ocr.expired_leases) == (2, 1, 2, 1)
    assert (ocr.failed_1h, ocr.failed_24h, ocr.completed_1h, ocr.completed_24h) == (1, 3, 4, 6)
    assert ocr.max_attempts_24h == 4 and ocr.p50_s == pytest.approx(1.0)
    # Workers serve every tenant: one scoped to a tenant lists none.
    assert scoped.workers == [] and [w.id for w in whole.workers] == [W1]
    assert (scoped.tenant, whole.tenant) == ("acme", None)
    assert timeless(scoped) | {"workers": []} == timeless(whole) | {"workers": []}
    for mine, theirs in zip(scoped.stages, whole.stages, strict=True):
        assert mine.oldest_ready_age_s == pytest.approx(theirs.oldest_ready_age_s, abs=5)
    assert scoped.expired_leases_total == 1 and scoped.tenants_total == 1


# -- Prometheus --------------------------------------------------------------------------------


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_worker_metrics_serves_queue_gauges_and_its_own_counters_over_http(
    conn: Conn, pool: ConnectionPool
) -> None:
    seed_everything(conn)
    metrics = WorkerMetrics("w-1")
    metrics.settled("ocr", "done")
    metrics.settled("ocr", "done")
    metrics.settled("ocr", "queued")
    metrics.settled("extract", "lost")
    metrics.claimed(3, 0.004)
    metrics.claimed(0, 0.002)
    metrics.acknowledged(2, 0.03)
    try:
        metrics.serve(0, pool, addr="127.0.0.1")
        assert metrics.port
        got = scrape(metrics.port)
    finally:
        metrics.close()

    def value(name: str, **labels: str) -> float:
        return got[(name, tuple(sorted(labels.items())))]

    assert value("pipeline_queue_metrics_up") == 1
    assert value("pipeline_jobs_queued", stage="ocr") == 4
    assert value("pipeline_jobs_ready", stage="ocr") == 4
    assert value("pipeline_jobs_running", stage="ocr") == 1
    assert value("pipeline_jobs_expired_leases", stage="ocr") == 1
    assert value("pipeline_oldest_ready_age_seconds", stage="ocr") == pytest.approx(120, abs=10)
    assert value("pipeline_oldest_ready_age_seconds", stage="extract") == 0
    assert value("pipeline_jobs_failed_recent", stage="extract", window="1h") == 1
    assert value("pipeline_jobs_completed_recent", stage="extract", window="24h") == 3
    assert value("pipeline_job_attempts_avg", stage="extract", window="1h") == 2
    assert value("pipeline_job_attempts_max", stage="extract", window="1h") == 2
    assert value(
        "pipeline_job_duration_recent_seconds", stage="extract", quantile="0.95"
    ) == pytest.approx(1.0)
    assert value("pipeline_tenant_running", tenant="acme", stage="ocr") == 5
    assert value("pipeline_tenant_cap", tenant="acme", stage="ocr") == 5
    assert value("pipeline_workers_live") == 1
    assert value("pipeline_workers_slots") == 4
    assert value("pipeline_workers_in_flight") == 1
    assert value("pipeline_schedule_overdue_seconds") == 0

    assert (
        value("pipeline_worker_jobs_settled_total", worker="w-1", stage="ocr", result="completed")
        == 2
    )
    assert (
        value("pipeline_worker_jobs_settled_total", worker="w-1", stage="ocr", result="retried")
        == 1
    )
    assert (
        value("pipeline_worker_jobs_settled_total", worker="w-1", stage="extract", result="lost")
        == 1
    )
    assert value("pipeline_worker_jobs_claimed_total", worker="w-1") == 3
    assert value("pipeline_worker_claim_seconds_count", worker="w-1") == 2
    assert value("pipeline_worker_claim_seconds_bucket", worker="w-1", le="0.005") == 2
    assert value("pipeline_worker_jobs_acknowledged_total", worker="w-1") == 2
    assert value("pipeline_worker_ack_seconds_sum", worker="w-1") == pytest.approx(0.03)
    # Queue-wide gauges carry no worker label: N workers report the same series.
    assert all(
        "worker" not in dict(labels)
        for name, labels in got
        if not name.startswith("pipeline_worker_")
    )


def test_metrics_labels_stay_bounded_with_many_stages_and_tenants(
    conn: Conn, pool: ConnectionPool
) -> None:
    conn.execute(
        """INSERT INTO pipeline.active_jobs (type, payload)
           SELECT 'stage_' || s, '{}' FROM generate_series(1, 5) AS s,
                                           generate_series(1, s * 10) AS n"""
    )
    conn.execute(
        """INSERT INTO pipeline.tenant_slots (tenant_id, stage, running)
           SELECT 't' || g, 'stage_5', g FROM generate_series(1, 10) AS g
           ON CONFLICT (tenant_id, stage) DO UPDATE SET running = excluded.running"""
    )
    collector = QueueCollector(pool, top_stages=2, top_tenants=3)
    families = {f.name: f for f in collector.collect()}
    queued = {s.labels["stage"]: s.value for s in families["pipeline_jobs_queued"].samples}
    assert queued == {"stage_5": 50, "stage_4": 40, "other": 60}
    running = {
        (s.labels["tenant"], s.labels["stage"]): s.value
        for s in families["pipeline_tenant_running"].samples
    }
    assert running == {
        ("t10", "stage_5"): 10,
        ("t9", "stage_5"): 9,
        ("t8", "stage_5"): 8,
        ("other", "stage_5"): sum(range(1, 8)),
    }
    assert families["pipeline_tenant_cap"].samples == []  # no cap in the database


def test_queue_gauges_are_cached_between_scrapes_and_report_an_outage_as_down(
    pool: ConnectionPool,
) -> None:
    now = [100.0]
    collector = QueueCollector(pool, cache_s=2.0, clock=lambda: now[0])
    list(collector.collect())
    list(collector.collect())
    assert collector.reads == 1
    now[0] += 2.5
    list(collector.collect())
    assert collector.reads == 2

    pool.close()
    now[0] += 2.5
    families = {f.name: f for f in collector.collect()}
    assert set(families) == {"pipeline_queue_metrics_up"}
    assert families["pipeline_queue_metrics_up"].samples[0].value == 0


def test_settled_refuses_a_result_outside_its_label_set() -> None:
    metrics = WorkerMetrics("w")
    with pytest.raises(ValueError, match="batched"):
        metrics.settled("ocr", "batched")
    metrics.close()  # never served: closing is still safe


def test_worker_metrics_instances_have_registries_of_their_own() -> None:
    first, second = WorkerMetrics("a"), WorkerMetrics("b")
    first.claimed(1, 0.1)
    assert (
        second.registry.get_sample_value("pipeline_worker_jobs_claimed_total", {"worker": "a"})
        is None
    )
    assert (
        first.registry.get_sample_value("pipeline_worker_jobs_claimed_total", {"worker": "a"}) == 1
    )


# -- cost --------------------------------------------------------------------------------------

#: The rollups' index, through which the views count finished jobs instead of reading them.
ROLLUPS = "finished_by_minute_pkey"
#: The index each view must read the jobs table (or the rollups) through.
VIEW_INDEXES = {
    "pipeline.oldest_ready": {"jobs_ready", "jobs_ready_untenanted"},
    "pipeline.failures_hourly": {ROLLUPS},
    "pipeline.expired_leases": {"jobs_running"},
    "pipeline.attempts": {ROLLUPS},
    "pipeline.durations": {ROLLUPS},
    "pipeline.stage_counts": {
        "jobs_ready",
        "jobs_ready_untenanted",
        "jobs_running",
        ROLLUPS,
    },
    "pipeline.tenant_load": {"jobs_ready"},
    "pipeline.live_workers": {"jobs_running"},
}


def plan(conn: Conn, query: Any, params: dict[str, Any] | None = None) -> str:
    return "\n".join(row[0] for row in conn.execute("EXPLAIN " + query, params))


def test_views_read_through_partial_indexes_with_a_million_finished_rows(conn: Conn) -> None:
    # A realistic history: a million rows finished over the past weeks, and a little recent
    # activity (the windows the views read) on top.
    make_past_days(conn, 26)
    conn.execute(
        """INSERT INTO pipeline.job_history (type, tenant_id, payload, status, attempts, started_at,
            finished_at)
           SELECT (ARRAY['ocr', 'extract', 'upload'])[1 + g % 3], 't' || g % 50, '{}'::jsonb,
                  (ARRAY['done', 'failed', 'cancelled'])[1 + g % 3], 1,
                  now() - interval '2 days' - g * interval '2 seconds' - interval '3 seconds',
                  now() - interval '2 days' - g * interval '2 seconds'
           FROM generate_series(1, 1000000) AS g"""
    )
    conn.execute(
        """INSERT INTO pipeline.job_history (type, tenant_id, payload, status, attempts, started_at,
            finished_at)
           SELECT 'ocr', 't' || g % 5, '{}', (ARRAY['done', 'failed'])[1 + g % 2], 1,
                  now() - g * interval '1 minute' - interval '1 second',
                  now() - g * interval '1 minute'
           FROM generate_series(1, 200) AS g"""
    )
    conn.execute(
        """INSERT INTO pipeline.active_jobs (type, tenant_id, payload)
           SELECT 'ocr', CASE WHEN g % 2 = 0 THEN 't' || g % 5 END, '{}'
           FROM generate_series(1, 50) AS g"""
    )
    conn.execute(
        """INSERT INTO pipeline.active_jobs (type, payload, status, leased_until, worker_id)
           SELECT 'ocr', '{}', 'running', now() + interval '1 minute', %s
           FROM generate_series(1, 5)""",
        (W1,),
    )
    conn.execute(
        "INSERT INTO pipeline.tenant_caps (tenant_id, stage, cap) "
        "SELECT 't' || g, 'ocr', 3 FROM generate_series(1, 5) AS g"
    )
    conn.execute(
        """INSERT INTO pipeline.workers (id, hostname, pid, stages, concurrency)
           VALUES (%s, 'box', 1, '{ocr}', 5)""",
        (W1,),
    )
    conn.execute("ANALYZE")
    for view, indexes in VIEW_INDEXES.items():
        shown = plan(conn, f"SELECT * FROM {view}")
        assert not big_seq_scans(shown), (view, shown)
        # Finished jobs are counted from their minutes' rollups: no view reads the history.
        assert "job_history" not in shown, (view, shown)
        for index in indexes:
            # The hot table holds the 55 queued and running jobs alone: read whole or by its
            # partial indexes, it costs the backlog. The rollups must be read by index.
            if index == ROLLUPS:
                assert f"Index Scan using {ROLLUPS}" in shown, (view, shown)
            elif index in INDEX:
                assert INDEX[index] in shown, (view, index, shown)
    # What `pipeline status` and a scrape run, the views together: no scan of jobs either.
    for name, params in (
        ("monitoring_stages", None),
        ("metrics_tenant_load", {"top": 20}),
        ("monitoring_tenant_load", {"limit": 50, "tenant": None}),
        ("monitoring_expired_leases", {"limit": 20, "tenant": None}),
        ("monitoring_workers", None),
        ("monitoring_throughput", {"tenant": None}),
        ("monitoring_tenant_stages", {"tenant": "t1"}),
        ("monitoring_tenant_failures_hourly", {"tenant": "t1"}),
        ("monitoring_throughput", {"tenant": "t1"}),
    ):
        shown = plan(conn, Q[name], params)
        assert not big_seq_scans(shown), (name, shown)
        assert "job_history" not in shown, (name, shown)
