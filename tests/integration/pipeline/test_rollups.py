"""The per-minute rollups of finished jobs (pipeline.finished_by_minute, per tenant
pipeline.tenant_finished_by_minute): kept by the statements that move jobs into the history and
out of it, so that they always say what the history holds; concurrent finishers never wait on
each other's rollup row; retention deletes old minutes."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from pg_pipeline.admin.jobs import Change, cancel_job, retry_job
from pg_pipeline.history import ROLLUP_KEEP_S, drop_old_rollups, fold_rollup_shards
from pg_pipeline.queries import Q
from pg_pipeline.store import JobStore
from tests.support.history import finish, make_past_days

Conn = psycopg.Connection[Any]

#: What the history holds, per minute, stage, tenant and outcome, as the rollups count it.
FROM_HISTORY = """
    SELECT date_trunc('minute', finished_at), type, tenant_id, status, count(*), sum(attempts)
    FROM pipeline.job_history
    GROUP BY 1, 2, 3, 4
"""
WHOLE = """
    SELECT minute, stage, NULL::text, status, sum(jobs), sum(attempts)
    FROM pipeline.finished_by_minute
    GROUP BY 1, 2, 3, 4
    HAVING sum(jobs) <> 0
"""
PER_TENANT = """
    SELECT minute, stage, tenant_id, status, sum(jobs), sum(attempts)
    FROM pipeline.tenant_finished_by_minute
    GROUP BY 1, 2, 3, 4
    HAVING sum(jobs) <> 0
"""


def counted(conn: Conn) -> tuple[set[tuple[Any, ...]], set[tuple[Any, ...]]]:
    """(whole queue, per tenant) from the history and from the rollups, each as sets of rows:
    equal when the rollups say what the history holds."""
    history = conn.execute(FROM_HISTORY).fetchall()
    whole: dict[tuple[Any, ...], list[int]] = {}
    for minute, stage, _, status, n, attempts in history:
        sums = whole.setdefault((minute, stage, None, status), [0, 0])
        sums[0] += n
        sums[1] += attempts
    expected_whole = {(*k, v[0], v[1]) for k, v in whole.items()}
    expected_tenants = {tuple(r) for r in history if r[2] is not None}
    got_whole = {tuple(r) for r in conn.execute(WHOLE).fetchall()}
    got_tenants = {tuple(r) for r in conn.execute(PER_TENANT).fetchall()}
    assert got_whole == expected_whole
    assert got_tenants == expected_tenants
    return got_whole, got_tenants


def enqueue(conn: Conn, n: int, tenant: str | None = None, stage: str = "ocr") -> None:
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, tenant_id, payload) "
        "SELECT %s, %s, '{}' FROM generate_series(1, %s)",
        (stage, tenant, n),
    )


def test_every_way_a_job_finishes_or_comes_back_keeps_the_rollups_equal_to_the_history(
    conn: Conn, pool: ConnectionPool
) -> None:
    enqueue(conn, 6, "acme")
    enqueue(conn, 4, None, "extract")
    store, worker = JobStore(pool), uuid.uuid4()
    claimed = store.claim(["ocr", "extract"], 10, worker)
    assert len(claimed) == 10
    # Completed in one batch, failed one by one, cancelled: each a move into the history.
    store.complete([j.fence for j in claimed[:5]])
    for job in claimed[5:8]:
        assert store.fail(job, "boom")
    assert cancel_job(conn, claimed[8].id) == Change.DONE
    whole, tenants = counted(conn)
    assert sum(r[4] for r in whole) == 9 and whole
    assert sum(r[4] for r in tenants) == sum(1 for j in claimed[:9] if j.type == "ocr")

    # A retry moves a failed job back: it is not failed any more, in the history or the rollups.
    assert retry_job(conn, claimed[5].id) == Change.DONE
    whole, _ = counted(conn)
    assert sum(r[4] for r in whole) == 8


def test_the_status_views_count_what_the_rollups_hold_for_jobs_moved_by_the_runtime(
    conn: Conn, pool: ConnectionPool
) -> None:
    enqueue(conn, 3)
    store = JobStore(pool)
    claimed = store.claim(["ocr"], 3, uuid.uuid4())
    store.complete([j.fence for j in claimed[:2]])
    assert store.fail(claimed[2], "boom")
    [attempts] = conn.execute(
        "SELECT stage, completed_1h, completed_24h, max_attempts_1h FROM pipeline.attempts"
    ).fetchall()
    assert attempts == ("ocr", 2, 2, 1)
    [counts] = conn.execute("SELECT stage, failed_1h, failed_24h FROM pipeline.stage_counts")
    assert counts == ("ocr", 1, 1)
    [durations] = conn.execute("SELECT stage, completed, max_s FROM pipeline.durations")
    assert durations[:2] == ("ocr", 2) and durations[2] >= 0


#: pipeline.rollup_shard's number of shards: a backend tries its pid modulo this first.
SHARDS = 16


def on_shards(db_url: str, n: int, *, same: bool = False) -> tuple[list[Conn], list[Conn]]:
    """`n` connections whose backends try different rollup shards first (pid modulo SHARDS), or
    with `same` the same one, and every connection opened to find them (to close)."""
    opened: list[Conn] = []
    by_shard: dict[int, list[Conn]] = {}
    while True:
        c = psycopg.connect(db_url, autocommit=True)
        opened.append(c)
        [(pid,)] = c.execute("SELECT pg_backend_pid()").fetchall()
        by_shard.setdefault(pid % SHARDS, []).append(c)
        if same:
            found = next((cs for cs in by_shard.values() if len(cs) == n), None)
            if found is not None:
                return found, opened
        elif len(by_shard) == n:
            return [cs[0] for cs in by_shard.values()], opened


def test_concurrent_finishers_on_other_backends_do_not_wait_for_each_others_rollup_row(
    db_url: str,
) -> None:
    [first, other], conns = on_shards(db_url, 2)
    try:
        enqueue(first, 2)
        ids = [r[0] for r in first.execute("SELECT id FROM pipeline.active_jobs ORDER BY id")]
        # The first finishes a job in a transaction it keeps open: it holds its rollup rows.
        first.execute("BEGIN")
        finish(first, ids[0])
        done = threading.Event()

        def second_finisher() -> None:
            finish(other, ids[1])
            done.set()

        thread = threading.Thread(target=second_finisher)
        thread.start()
        # Same minute, stage and outcome: only the shard differs. Were it one row, this would
        # wait until the first commits, which it does only after the wait.
        assert done.wait(timeout=10), "the second finisher waited on the first one's row"
        first.execute("COMMIT")
        thread.join(timeout=10)
        [(shards, jobs)] = first.execute(
            "SELECT count(*), sum(jobs) FROM pipeline.finished_by_minute"
        ).fetchall()
        assert (shards, jobs) in ((2, 2),), "same minute, two shards, summed on read"
    finally:
        for c in conns:
            c.close()


def test_finishers_whose_backends_would_share_a_shard_take_another_one(db_url: str) -> None:
    # Two backends whose pids meet modulo the shards: the second finds the first's shard taken
    # by its open transaction and adds to the next one instead of waiting for its commit.
    [first, other], conns = on_shards(db_url, 2, same=True)
    try:
        enqueue(first, 3)
        ids = [r[0] for r in first.execute("SELECT id FROM pipeline.active_jobs ORDER BY id")]
        first.execute("BEGIN")
        finish(first, ids[0])
        # A later statement of the same transaction keeps to the shard it took.
        finish(first, ids[1])
        done = threading.Event()

        def second_finisher() -> None:
            finish(other, ids[2])
            done.set()

        thread = threading.Thread(target=second_finisher)
        thread.start()
        assert done.wait(timeout=10), "the second finisher waited for the first one's shard"
        first.execute("COMMIT")
        thread.join(timeout=10)
        rows = first.execute(
            "SELECT shard, jobs FROM pipeline.finished_by_minute ORDER BY jobs DESC"
        ).fetchall()
        assert [jobs for _, jobs in rows] == [2, 1], "one shard per transaction, two in all"
        assert rows[0][0] != rows[1][0]
    finally:
        for c in conns:
            c.close()


def test_retention_deletes_the_rollups_of_minutes_past_the_keep(conn: Conn) -> None:
    make_past_days(conn, 4)
    enqueue(conn, 3, "acme")
    ids = [r[0] for r in conn.execute("SELECT id FROM pipeline.active_jobs ORDER BY id")]
    finish(conn, ids[0], ago="3 days")
    finish(conn, ids[1], ago="1 day")
    finish(conn, ids[2])
    assert drop_old_rollups(conn, ROLLUP_KEEP_S) == 2  # the whole queue's row and acme's
    left = conn.execute(
        "SELECT count(*) FROM pipeline.finished_by_minute "
        "UNION ALL SELECT count(*) FROM pipeline.tenant_finished_by_minute"
    ).fetchall()
    assert left == [(2,), (2,)]
    # A job deleted from a minute already gone counts nothing (no negative leftovers).
    conn.execute("DELETE FROM pipeline.job_history WHERE id = %s", (ids[0],))
    [(rows,)] = conn.execute("SELECT count(*) FROM pipeline.finished_by_minute").fetchall()
    assert rows == 2


@pytest.mark.parametrize("shape", ["uniform", "lognormal"])
def test_run_time_percentiles_from_the_histogram_are_within_13_percent(
    conn: Conn, shape: str
) -> None:
    run_s = (
        "0.05 + random() * 30"
        if shape == "uniform"
        else "exp(ln(2.0) + 1.2 * sqrt(-2 * ln(random())) * cos(2 * pi() * random()))"
    )
    conn.execute("SELECT setseed(0.21)")
    conn.execute(
        f"""INSERT INTO pipeline.job_history (type, payload, status, started_at, finished_at)
            SELECT 'ocr', '{{}}', 'done', now() - ({run_s}) * interval '1 second', now()
            FROM generate_series(1, 5000)"""  # type: ignore[arg-type]
    )
    [(exact50, exact95, est50, est95)] = conn.execute(
        """SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at
                                                                       - started_at)),
                  percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at
                                                                        - started_at)),
                  (SELECT p50_s FROM pipeline.durations), (SELECT p95_s FROM pipeline.durations)
           FROM pipeline.job_history"""
    ).fetchall()
    assert est50 == pytest.approx(float(exact50), rel=0.13)
    assert est95 == pytest.approx(float(exact95), rel=0.13)


def test_jobs_without_a_run_time_add_nothing_to_the_histograms(conn: Conn) -> None:
    # A done job without a start (put into the history by hand) and a failed one are not timed:
    # each histogram holds the timed jobs alone, as `timed` counts them.
    conn.execute(
        """INSERT INTO pipeline.job_history (type, tenant_id, payload, status, started_at,
                                             finished_at)
           VALUES ('ocr', 'acme', '{}', 'done', now() - interval '2 seconds', now()),
                  ('ocr', 'acme', '{}', 'done', NULL, now()),
                  ('ocr', 'acme', '{}', 'failed', now() - interval '1 second', now())"""
    )
    for table in ("finished_by_minute", "tenant_finished_by_minute"):
        rows = conn.execute(
            f"SELECT status, jobs, timed, (SELECT sum(n) FROM unnest(run_hist) AS n) "  # type: ignore[arg-type]
            f"FROM pipeline.{table} ORDER BY status"
        ).fetchall()
        assert rows == [("done", 2, 1, 1), ("failed", 1, 0, None)], table


def test_folding_old_minutes_shards_into_one_row_each_changes_no_figure(
    conn: Conn, db_url: str
) -> None:
    make_past_days(conn, 1)
    finishers, opened = on_shards(db_url, 3)
    try:
        for i, c in enumerate(finishers):
            enqueue(c, 2, "acme")
            ids = [r[0] for r in c.execute("SELECT id FROM pipeline.active_jobs ORDER BY id")]
            c.execute("UPDATE pipeline.active_jobs SET attempts = %s, started_at = now()", (i + 1,))
            finish(c, ids[:1], ago="2 hours")
            finish(c, ids[1:], "failed", ago="2 hours")
    finally:
        for c in opened:
            c.close()
    figures = (
        "SELECT * FROM pipeline.attempts",
        "SELECT * FROM pipeline.failures_hourly",
        "SELECT * FROM pipeline.stage_counts",
    )
    before = [conn.execute(q).fetchall() for q in figures]  # type: ignore[call-overload]
    tenant_before = conn.execute(Q["monitoring_tenant_stages"], {"tenant": "acme"}).fetchall()
    rows = "SELECT count(*) FROM pipeline.finished_by_minute"
    # One row per minute and outcome after the fold (a minute's turn between two finishers
    # makes two minutes, not a flaky test); three shards' worth before it.
    keys = conn.execute(
        "SELECT count(DISTINCT (date_trunc('minute', finished_at), status)) "
        "FROM pipeline.job_history"
    ).fetchall()
    assert conn.execute(rows).fetchall() >= [(keys[0][0] + 4,)]

    assert fold_rollup_shards(conn) > 0
    assert conn.execute(rows).fetchall() == keys
    assert [conn.execute(q).fetchall() for q in figures] == before  # type: ignore[call-overload]
    tenant_after = conn.execute(Q["monitoring_tenant_stages"], {"tenant": "acme"}).fetchall()
    assert [r[:5] + r[6:] for r in tenant_after] == [r[:5] + r[6:] for r in tenant_before]
    assert before[0][0][1:] == (0, None, None, 3, 2.0, 3)  # done 2 h ago: the day's figures
    counted(conn)
    assert fold_rollup_shards(conn) == 0, "a minute folded already has nothing to fold"


def test_retention_of_the_rollups_waits_for_no_day_of_the_history(conn: Conn, db_url: str) -> None:
    # Looking for the history's oldest day, it read each day's bounds with the day opened under
    # a lock: a day locked by a prune's detach or drop held it up, and at 108 days a worker's
    # first round opened 108 of them (docs/measurements.md, 2026-12-03 (aa)).
    make_past_days(conn, 4)
    [(oldest,)] = conn.execute(
        "SELECT min(c.relname) FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = 'pipeline.job_history'::regclass"
    ).fetchall()
    day = f"{oldest[-8:-4]}-{oldest[-4:-2]}-{oldest[-2:]} 00:00+00"
    conn.execute(
        "INSERT INTO pipeline.finished_days VALUES ('s', 'done', %(day)s::timestamptz), "
        "('s', 'done', %(day)s::timestamptz - interval '1 day')",
        {"day": day},
    )
    with psycopg.connect(db_url) as locker:
        locker.execute(f"LOCK TABLE pipeline.{oldest} IN ACCESS EXCLUSIVE MODE")
        conn.execute("SET lock_timeout = '1s'")
        drop_old_rollups(conn, ROLLUP_KEEP_S)
    # The day before the oldest partition went; the oldest stays.
    kept = conn.execute("SELECT day FROM pipeline.finished_days WHERE stage = 's'").fetchall()
    assert [str(d.date()) for (d,) in kept] == [day[:10]]
