"""Retention against real Postgres: prune deletes finished runs past the cutoff, with their
outputs and joins, and never a queued or running job or anything a live run still needs. Days
of the history wholly past the cutoff go whole (their live runs' rows kept); the day that
straddles it, and the kept rows, run by run."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

import tests.support.apps.pipeline_app  # noqa: F401  registers the pipeline stages
from pg_pipeline import enqueue
from pg_pipeline.admin import jobs as admin
from pg_pipeline.admin.jobs import Change
from pg_pipeline.maintenance import retention
from pg_pipeline.maintenance.blob_sweep import SweepReport
from pg_pipeline.maintenance.retention import (
    PRUNE_VACUUM_AFTER,
    Pruner,
    PruneReport,
    pass_params,
    prune,
    said,
)
from pg_pipeline.queries import Q
from tests.integration.pipeline.worker.test_worker import FAST, running_worker
from tests.support.apps.jobs_app import EFFECTS_DDL
from tests.support.history import finish, make_past_days
from tests.support.waiting import lock_waiters, wait_for

Conn = psycopg.Connection[Any]
DAY = 86_400.0
WEEK = 7 * DAY
#: A moment in the day of the history that holds the cutoff of a WEEK's retention, before the
#: cutoff: such a row is pruned run by run, not with its day.
STRADDLING = (
    "now() - interval '7 days' "
    "- (now() - (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')) / 2"
)


@pytest.fixture
def conn(db_url: str) -> Iterator[Conn]:
    with psycopg.connect(db_url, autocommit=True) as c:
        c.execute(EFFECTS_DDL)
        make_past_days(c, 61)
        yield c


def count(conn: Conn, sql: str, *params: Any) -> int:
    row = conn.execute(sql, params or None).fetchone()
    assert row is not None
    return int(row[0])


def one_row(conn: Conn, sql: str, *params: Any) -> Any:
    row = conn.execute(sql, params or None).fetchone()
    assert row is not None
    return row[0]


def run_size(conn: Conn, root: int) -> tuple[int, int, int]:
    """(jobs, outputs, joins) of one run."""
    return (
        count(conn, "SELECT count(*) FROM pipeline.jobs WHERE id = %s OR root_id = %s", root, root),
        count(conn, "SELECT count(*) FROM pipeline.outputs WHERE root_id = %s", root),
        count(conn, "SELECT count(*) FROM pipeline.joins WHERE root_id = %s", root),
    )


def age(conn: Conn, days: float, *, root: int | None = None, ids: list[int] | None = None) -> None:
    """Move finished jobs back in time: a run, or some jobs, finished `days` ago (a day a prune
    dropped is made again)."""
    make_past_days(conn, 61)
    if root is not None:
        conn.execute(
            "UPDATE pipeline.job_history SET finished_at = now() - make_interval(days => %s) "
            "WHERE id = %s OR root_id = %s",
            (days, root, root),
        )
    if ids is not None:
        conn.execute(
            "UPDATE pipeline.job_history SET finished_at = now() - make_interval(days => %s) "
            "WHERE id = ANY(%s)",
            (days, ids),
        )


def fake_run(conn: Conn, *, children: list[str], days: float, tenant: str = "acme") -> int:
    """A finished fan-out run as data: a root, one child per status in `children`, an output
    per done child and the join row (which counts the finished children as they land in the
    history); everything finished `days` ago."""
    [(root,)] = conn.execute(
        "INSERT INTO pipeline.job_history (type, tenant_id, status, attempts, finished_at) "
        "VALUES ('split', %s, 'done', 1, now() - make_interval(days => %s)) RETURNING id",
        (tenant, days),
    ).fetchall()
    conn.execute(
        "INSERT INTO pipeline.joins (id, root_id, total) VALUES (%s, %s, %s)",
        (root, root, len(children)),
    )
    for part, status in enumerate(children):
        if status in ("done", "failed", "cancelled"):
            insert = (
                "INSERT INTO pipeline.job_history (type, tenant_id, status, attempts, parent_id, "
                "root_id, join_id, finished_at) VALUES ('page', %s, %s, 1, %s, %s, %s, "
                "now() - make_interval(days => %s)) RETURNING id"
            )
        else:
            insert = (
                "INSERT INTO pipeline.active_jobs (type, tenant_id, status, attempts, parent_id, "
                "root_id, join_id) VALUES ('page', %s, %s, 1, %s, %s, %s) "
                "RETURNING id, %s::float8"
            )
        [(child, *_)] = conn.execute(
            insert,  # type: ignore[arg-type]
            (tenant, status, root, root, root, days),
        ).fetchall()
        if status == "done":
            conn.execute(
                "INSERT INTO pipeline.outputs (root_id, stage, part, job_id, attempt, output) "
                "VALUES (%s, 'page', %s, %s, 1, '{}')",
                (root, part, child),
            )
    return int(root)


def test_prune_deletes_a_whole_finished_run_with_its_outputs_and_joins(
    db_url: str, conn: Conn
) -> None:
    old = enqueue(conn, "split", {"pages": 5}, tenant_id="acme")
    recent = enqueue(conn, "split", {"pages": 3}, tenant_id="acme")
    with running_worker(db_url, ["split", "page", "assemble", "publish"], FAST):
        wait_for(
            lambda: (
                count(
                    conn,
                    "SELECT count(*) FROM pipeline.jobs WHERE type = 'publish' AND status = 'done'",
                )
                == 2
            ),
            what="both runs to finish",
        )
    # split, 5 pages, assemble, publish; outputs of the pages and of assemble; one join.
    assert run_size(conn, old) == (8, 6, 1)
    age(conn, 8, root=old)

    report = prune(conn, WEEK)

    assert (report.jobs, report.outputs, report.joins) == (8, 6, 1)
    assert run_size(conn, old) == (0, 0, 0)
    assert run_size(conn, recent) == (6, 4, 1), "finished a moment ago: kept"
    assert prune(conn, WEEK) == PruneReport(), "nothing left to delete: not a batch run"


def test_prune_keeps_every_job_and_output_of_a_run_that_is_still_live(conn: Conn) -> None:
    queued_page = fake_run(conn, children=["done", "done", "queued"], days=30)
    running_page = fake_run(conn, children=["done", "running"], days=30)
    young_page = fake_run(conn, children=["done", "done"], days=30)
    age(
        conn,
        1,
        ids=[count(conn, "SELECT max(id) FROM pipeline.jobs WHERE root_id = %s", young_page)],
    )
    finished = fake_run(conn, children=["done", "failed", "cancelled"], days=30)
    # Never finished, however old: standalone queued and running jobs.
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, status, created_at, run_after) VALUES "
        "('noop', 'queued', now() - interval '1 year', now() - interval '1 year'), "
        "('noop', 'running', now() - interval '1 year', now() - interval '1 year')"
    )
    # A queued job whose finished_at a hand-written UPDATE left behind is not finished either.
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, status, finished_at) "
        "VALUES ('noop', 'queued', now() - interval '1 year')"
    )
    before = {root: run_size(conn, root) for root in (queued_page, running_page, young_page)}

    report = prune(conn, WEEK)

    assert (report.jobs, report.outputs, report.joins) == (4, 1, 1)
    assert run_size(conn, finished) == (0, 0, 0)
    assert {root: run_size(conn, root) for root in before} == before
    assert count(conn, "SELECT count(*) FROM pipeline.jobs WHERE type = 'noop'") == 3

    # Once the live run's last job finishes and ages past the cutoff, it goes whole.
    [(last,)] = conn.execute(
        "SELECT id FROM pipeline.active_jobs WHERE root_id = %s", (queued_page,)
    ).fetchall()
    finish(conn, last)
    age(conn, 8, root=queued_page)
    assert prune(conn, WEEK).jobs == 4
    assert run_size(conn, queued_page) == (0, 0, 0)


def test_keep_failed_keeps_each_run_with_a_failed_job_whole(conn: Conn) -> None:
    failed_run = fake_run(conn, children=["done", "failed"], days=30)
    cancelled_run = fake_run(conn, children=["done", "cancelled"], days=30)
    conn.execute(
        "INSERT INTO pipeline.job_history (type, status, finished_at) "
        "VALUES ('noop', 'failed', now() - interval '30 days')"
    )

    report = prune(conn, WEEK, keep_failed=True)

    assert (report.jobs, report.outputs, report.joins) == (3, 1, 1)
    assert run_size(conn, cancelled_run) == (0, 0, 0)
    assert run_size(conn, failed_run) == (3, 1, 1)
    assert count(conn, "SELECT count(*) FROM pipeline.jobs WHERE status = 'failed'") == 2
    assert prune(conn, WEEK).jobs == 4, "without --keep-failed they go too"


def test_prune_walks_past_rows_it_keeps_in_small_batches(conn: Conn) -> None:
    # The oldest finished rows belong to a live run: every batch must move past them.
    # Its day is dropped, its rows kept; then the kept rows and the day of the cutoff are
    # walked run by run.
    live = fake_run(conn, children=["done"] * 7 + ["queued"], days=60)
    conn.execute(
        "INSERT INTO pipeline.job_history (type, status, finished_at) "
        f"SELECT 'noop', 'done', {STRADDLING} FROM generate_series(1, 20)"
    )

    report = prune(conn, WEEK, batch=3)

    assert report.jobs == 20
    assert report.batches == 10  # 28 finished rows read 3 at a time; the 10th comes back short
    assert run_size(conn, live) == (9, 7, 1)


def test_the_run_by_run_pass_rests_after_each_batch_as_long_as_told_and_not_after_the_last(
    conn: Conn,
) -> None:
    # A pass at full speed kept one of two cores busy for minutes, and the drain beside it lost
    # a fifth: it rests `rest` times each batch's time, leaving the CPU to the workers.
    conn.execute(
        "INSERT INTO pipeline.job_history (type, status, finished_at) "
        f"SELECT 'noop', 'done', {STRADDLING} FROM generate_series(1, 9)"
    )
    now = [0.0]
    rests: list[float] = []

    def clock() -> float:
        now[0] += 0.25  # each reading a quarter second on: a batch takes 0.25 s
        return now[0]

    report = prune(conn, WEEK, batch=3, rest=2.0, clock=clock, sleep=rests.append)
    assert (report.jobs, report.batches) == (9, 4)  # the 4th batch comes back empty
    assert rests == [0.5, 0.5, 0.5]  # twice each batch's 0.25 s; none after the last

    conn.execute(
        "INSERT INTO pipeline.job_history (type, status, finished_at) "
        f"SELECT 'noop', 'done', {STRADDLING} FROM generate_series(1, 9)"
    )
    unrested: list[float] = []
    assert prune(conn, WEEK, batch=3, rest=0, sleep=unrested.append).jobs == 9
    assert unrested == []


def test_a_worker_stopping_during_a_rest_ends_the_pass_without_another_batch(
    conn: Conn,
) -> None:
    # The worker rests on its halt event: set, the rest ends at once, and so does the pass,
    # where it used to run one more batch first (and rest up to 2 s before that).
    conn.execute(
        "INSERT INTO pipeline.job_history (type, status, finished_at) "
        f"SELECT 'noop', 'done', {STRADDLING} FROM generate_series(1, 9)"
    )
    halt = threading.Event()

    def rest(seconds: float) -> bool:
        halt.set()  # the worker is told to stop while its pass rests
        return halt.wait(seconds)

    report = prune(conn, WEEK, batch=3, rest=100.0, stop=halt.is_set, sleep=rest)
    assert (report.jobs, report.batches) == (3, 1)


def test_pruner_run_once_reports_counts_and_concurrent_passes_never_collide(
    conn: Conn, pool: ConnectionPool
) -> None:
    roots = [fake_run(conn, children=["done", "done"], days=10) for _ in range(300)]
    pruners = [Pruner(pool, older_than_s=WEEK, batch=50) for _ in range(3)]
    reports: list[PruneReport] = []
    start = threading.Barrier(len(pruners))

    def one_pass(pruner: Pruner) -> None:
        start.wait()
        reports.append(pruner.run_once())

    threads = [threading.Thread(target=one_pass, args=(p,)) for p in pruners]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(reports) == 3, "a pass failed (deadlock or error)"
    assert sum(r.jobs for r in reports) == 900
    assert sum(r.outputs for r in reports) == 600
    assert sum(r.joins for r in reports) == 300
    assert count(conn, "SELECT count(*) FROM pipeline.jobs WHERE id = ANY(%s)", roots) == 0
    nothing = PruneReport(blobs=SweepReport())  # no batch run, and its sweep found no candidates
    assert Pruner(pool, older_than_s=WEEK).run_once() == nothing


def test_a_prune_batch_reads_jobs_finished_and_runs_by_index_on_a_million_rows(
    conn: Conn,
) -> None:
    conn.execute(
        """
        INSERT INTO pipeline.job_history (type, status, attempts, finished_at)
        SELECT 'noop', 'done', 1, now() - make_interval(secs => g)
        FROM generate_series(1, 1000000) AS g
        """
    )
    conn.execute("VACUUM ANALYZE pipeline.job_history")
    [(cutoff,)] = conn.execute(Q["prune_cutoff"], {"older_than_s": DAY}).fetchall()
    params = pass_params(conn, cutoff, keep_failed=False)
    scan = params | {"after_id": 0, "batch": 1000}
    plan = "\n".join(row[0] for row in conn.execute("EXPLAIN " + Q["prune_lock_runs"], scan))
    # The walk reads the days before the cutoff alone (in a pass, what is left of them: the day
    # that straddles it, the other days are dropped whole first), and the newer days by index.
    today = one_row(conn, "SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD')")
    assert f"Seq Scan on job_history_{today}" not in plan, plan
    # The days before the cutoff too: by id, a batch reads its rows; by finish time (no index),
    # every batch read and sorted all of their rows.
    walk = plan.split("CTE met")[0]
    assert "Index Scan using job_history_" in walk, plan
    assert not re.search(r"Seq Scan on job_history_\d+ .*?cost=[\d.]+\.\.\d{3,}", walk), plan
    assert_reads_run_members_by_known_bounds(plan)
    # The pass's first statement walks as its batches do, to the first row it meets.
    start = "\n".join(
        row[0] for row in conn.execute("EXPLAIN " + Q["prune_walk_start"], {"cutoff": cutoff})
    )
    assert "Index Scan using job_history_" in start, start
    assert not re.search(r"Seq Scan on job_history_\d+ .*?cost=[\d.]+\.\.\d{3,}", start), start
    runs = params | {"runs": list(range(1, 1001)), "locked": [1] * 1000}
    plan = "\n".join(row[0] for row in conn.execute("EXPLAIN " + Q["prune_runs"], runs))
    assert_reads_run_members_by_known_bounds(plan)
    # (An empty day, or the empty hot table, is read whole: nothing to read.)
    scans = re.findall(
        r"Seq Scan on (job_history\w*|active_jobs)\b.*?cost=[\d.]+\.\.([\d.]+)", plan
    )
    assert all(float(cost) < 100 for _, cost in scans), plan


def assert_reads_run_members_by_known_bounds(plan: str) -> None:
    # pipeline.run_members is inlined (called, it would be planned blind to the statement), and
    # the bounds of its range are InitPlans, which the estimates take as known values (see its
    # file).
    assert "run_members" not in plan, plan
    bounds = re.findall(r"Index Cond: \(\(root_id >= (.*)", plan)
    assert bounds, plan
    assert all(re.match(r"\$\d|\(InitPlan \d", b) for b in bounds), plan


def test_a_pass_whose_walk_meets_no_row_past_the_cutoff_reads_no_days_bounds(
    conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker's pass every 5 minutes read each day's index ends (44-56 ms at 108 days) before
    # it knew whether the walk met a row, and ran a batch that found nothing.
    reads: list[datetime] = []
    reach = retention.history_reach

    def read(c: Conn, cutoff: datetime) -> retention.Reach:
        reads.append(cutoff)
        return reach(c, cutoff)

    monkeypatch.setattr(retention, "history_reach", read)
    fake_run(conn, children=["done"], days=10)  # its day goes whole
    recent = fake_run(conn, children=["done"], days=1)

    report = prune(conn, WEEK)

    assert (report.jobs, report.partitions, report.batches) == (2, 1, 0)
    assert reads == []
    assert run_size(conn, recent)[0] == 2

    # Rows past the cutoff in the day that holds it: read once, for every batch of the pass.
    conn.execute(
        "INSERT INTO pipeline.job_history (type, status, finished_at) "
        f"SELECT 'noop', 'done', {STRADDLING} FROM generate_series(1, 5)"
    )
    report = prune(conn, WEEK, batch=2, rest=0)

    assert (report.jobs, report.batches) == (5, 3)
    assert len(reads) == 1


def test_a_pass_counts_the_empty_days_it_drops_apart_from_the_days_that_held_jobs(
    conn: Conn,
) -> None:
    fake_run(conn, children=["done"], days=10)
    fake_run(conn, children=["queued"], days=20)  # its root is kept: a day that held a job
    [(cutoff,)] = conn.execute(Q["prune_cutoff"], {"older_than_s": WEEK}).fetchall()
    days = len(conn.execute(Q["prune_partitions"], {"cutoff": cutoff}).fetchall())

    report = prune(conn, WEEK)

    assert (report.jobs, report.partitions, report.kept) == (2, 2, 1)
    assert report.empty_partitions == days - 2 > 0
    assert (
        "(2 days of history dropped whole, 1 of their rows kept for runs still going;"
        f" {days - 2} empty days dropped; 0 runs deleted one by one in 1 batch)"
    ) in said(report)


def test_a_pass_that_deletes_many_rows_ends_with_a_vacuum(conn: Conn) -> None:
    conn.execute(
        "INSERT INTO pipeline.job_history (type, status, finished_at) "
        f"SELECT 'noop', 'done', {STRADDLING} FROM generate_series(1, %s)",
        (PRUNE_VACUUM_AFTER,),
    )
    assert prune(conn, WEEK, batch=PRUNE_VACUUM_AFTER * 2).vacuumed
    vacuumed = (
        "SELECT last_vacuum IS NOT NULL FROM pg_stat_user_tables "
        "WHERE schemaname = 'pipeline' AND relname = %s"
    )
    straddling = day_of(conn, 7).removeprefix("pipeline.")
    for table in ("job_history_kept", "outputs", "joins", straddling):

        def done(table: str = table) -> bool:
            return bool(one_row(conn, vacuumed, table))

        wait_for(done, what=f"{table} to be vacuumed")
    # The days it deleted nothing from are not read: the same statement would have counted them.
    assert not one_row(conn, vacuumed, day_of(conn, 1).removeprefix("pipeline."))

    conn.execute(
        "INSERT INTO pipeline.job_history (type, status, finished_at) "
        f"VALUES ('noop', 'done', {STRADDLING})"
    )
    assert prune(conn, WEEK).vacuumed is False, "a small pass leaves it to autovacuum"


def test_a_pass_whose_vacuum_skips_a_table_never_says_it_vacuumed(db_url: str, conn: Conn) -> None:
    conn.execute(
        "INSERT INTO pipeline.job_history (type, status, finished_at) "
        f"SELECT 'noop', 'done', {STRADDLING} FROM generate_series(1, %s)",
        (PRUNE_VACUUM_AFTER,),
    )
    # A vacuum of the outputs holds their lock (autovacuum's, as another pass's would).
    with psycopg.connect(db_url) as holder:
        holder.execute("LOCK TABLE pipeline.outputs IN SHARE UPDATE EXCLUSIVE MODE")
        report = prune(conn, WEEK, batch=PRUNE_VACUUM_AFTER * 2)
    assert report.jobs == PRUNE_VACUUM_AFTER
    assert not report.vacuumed
    assert report.vacuum_skipped == ('skipping vacuum of "outputs" --- lock not available',)
    assert "then vacuumed" not in said(report)
    assert said(report).endswith(
        ', not vacuumed whole: skipping vacuum of "outputs" --- lock not available'
    )


# -- a prune and a retry at once (issue 20, defect 4) ---------------------------------------------


def test_a_retry_between_two_batches_of_a_pass_finds_its_run_whole_or_gone(
    db_url: str, conn: Conn
) -> None:
    # One run read over three batches of two: the root and page 0, pages 1 and 2, pages 3 and 4.
    root = fake_run(conn, children=["done", "done", "failed", "done", "done"], days=30)
    # In the day of the cutoff: pruned run by run, not with its day.
    conn.execute(
        f"UPDATE pipeline.job_history SET finished_at = {STRADDLING} WHERE id = %s OR root_id = %s",
        (root, root),
    )
    pages = [
        int(i)
        for (i,) in conn.execute(
            "SELECT id FROM pipeline.jobs WHERE root_id = %s ORDER BY id", (root,)
        )
    ]
    before = run_size(conn, root)
    reports: list[PruneReport] = []
    # An operator's open transaction holds page 1: a pass meets it after its first batch.
    with psycopg.connect(db_url) as holder:
        holder.execute("SELECT 1 FROM pipeline.job_history WHERE id = %s FOR UPDATE", (pages[1],))

        def one_pass() -> None:
            with psycopg.connect(db_url, autocommit=True) as pruning:
                reports.append(prune(pruning, WEEK, batch=2))

        pass_ = threading.Thread(target=one_pass)
        pass_.start()
        wait_for(
            lambda: not pass_.is_alive() or lock_waiters(conn) > 0,
            what="the pass to end, or to wait for page 1",
        )
        # Between the pass's batches: the failed page is retried.
        retried = admin.retry_job(conn, pages[2])
        holder.rollback()
    pass_.join(timeout=60)
    assert reports, "the pass failed"

    assert retried is Change.DONE
    assert run_size(conn, root) == before, "a live run keeps every job, output and join"
    assert count(
        conn, "SELECT count(*) FROM pipeline.jobs WHERE id = %s AND status = 'queued'", pages[2]
    )
    # Once the page is done and old, the next pass deletes the run, whole.
    make_past_days(conn, 61)
    finish(conn, pages[2], ago="30 days")
    assert prune(conn, WEEK, batch=2).jobs == 6
    assert run_size(conn, root) == (0, 0, 0)


def test_a_retry_waits_for_a_prune_batch_holding_its_run_then_says_it_was_pruned(
    db_url: str, conn: Conn
) -> None:
    root = fake_run(conn, children=["done", "failed"], days=30)
    [(failed,)] = conn.execute("SELECT id FROM pipeline.jobs WHERE status = 'failed'").fetchall()
    [(cutoff,)] = conn.execute(Q["prune_cutoff"], {"older_than_s": WEEK}).fetchall()
    params = pass_params(conn, cutoff, keep_failed=False)
    results: list[Change] = []
    # A prune batch, its two statements apart: the run locked, not deleted yet.
    with psycopg.connect(db_url) as pruning:
        [(_, _, runs, locked)] = pruning.execute(
            Q["prune_lock_runs"],
            params | {"after_id": 0, "batch": 100},
        ).fetchall()
        assert (runs, locked) == ([root], [3])

        def retry() -> None:
            with psycopg.connect(db_url, autocommit=True) as c:
                results.append(admin.retry_job(c, failed))

        retrying = threading.Thread(target=retry)
        retrying.start()
        wait_for(lambda: lock_waiters(conn) > 0, what="the retry to wait for the prune")
        pruning.execute(Q["prune_runs"], params | {"runs": runs, "locked": locked})
        pruning.commit()
    retrying.join(timeout=60)

    assert results == [Change.PRUNED]
    assert run_size(conn, root) == (0, 0, 0)


def test_a_pass_whose_detach_finds_the_history_locked_leaves_every_later_day_at_once(
    db_url: str, conn: Conn, caplog: pytest.LogCaptureFixture
) -> None:
    # A transaction left open after reading the history holds a lock every day's detach needs
    # (the whole history's): each day waited for it in turn, 2 s a day.
    make_past_days(conn, 20)
    days = "SELECT count(*) FROM pg_inherits WHERE inhparent = 'pipeline.job_history'::regclass"
    before = count(conn, days)
    with psycopg.connect(db_url) as holder:
        holder.execute("SELECT count(*) FROM pipeline.job_history")
        with caplog.at_level("INFO", logger="pg_pipeline.maintenance.retention"):
            report = prune(conn, WEEK)
    left = [r for r in caplog.records if "left to the next pass" in r.getMessage()]
    assert len(left) == 1, [r.getMessage() for r in left]
    assert "and the days after it" in left[0].getMessage()
    assert report.partitions == report.empty_partitions == 0
    assert count(conn, days) == before, "no day detached or dropped"
    # The lock free again, the next pass drops them.
    assert prune(conn, WEEK).empty_partitions == before - count(conn, days) >= 13


def test_a_retry_between_the_survivor_search_and_the_detach_keeps_its_run(conn: Conn) -> None:
    root = fake_run(conn, children=["done", "failed"], days=30)
    [(failed,)] = conn.execute(
        "SELECT id FROM pipeline.job_history WHERE status = 'failed' AND root_id = %s", (root,)
    ).fetchall()
    [(part,)] = conn.execute(
        "SELECT tableoid::regclass::text FROM pipeline.job_history WHERE id = %s", (root,)
    ).fetchall()
    before = run_size(conn, root)
    # The first step, without a lock, finds nothing of the day that must stay...
    [(survivors,)] = conn.execute(
        Q["prune_partition_survivors"], {"part": part, "keep_failed": False}
    ).fetchall()
    assert survivors == []
    # ...a retry comes in between...
    assert admin.retry_job(conn, failed) is Change.DONE
    # ...and the detach, under its lock, sees the run live again and keeps its rows of the day.
    with conn.transaction():
        [(kept,)] = conn.execute(
            Q["prune_detach_partition"], {"part": part, "survivors": survivors}
        ).fetchall()
    conn.execute(Q["prune_drop_partition"], {"part": part})
    assert kept == 2  # the root and its done page; the retried page is queued
    assert run_size(conn, root) == before
    assert count(conn, "SELECT count(*) FROM pipeline.job_history_kept WHERE root_id = %s", root)


# -- a day's survivors: found by what can matter, not by every other day (issue 21, item 5) ------


def day_of(conn: Conn, days_ago: int) -> str:
    """The name of the history's partition of the day `days_ago` days back (UTC)."""
    return str(
        one_row(
            conn,
            "SELECT 'pipeline.job_history_' || "
            "to_char((now() AT TIME ZONE 'UTC')::date - %s::integer, 'YYYYMMDD')",
            days_ago,
        )
    )


def finished_job(
    conn: Conn, days_ago: int, *, root: int | None = None, status: str = "done"
) -> int:
    """A finished job, as data: at noon (UTC) `days_ago` days back, of the run `root` (None: a
    root)."""
    return int(
        one_row(
            conn,
            "INSERT INTO pipeline.job_history (type, status, parent_id, root_id, finished_at) "
            "VALUES ('page', %s, %s, %s, "
            "((now() AT TIME ZONE 'UTC')::date - %s::integer + interval '12 hours') "
            "AT TIME ZONE 'UTC') RETURNING id",
            status,
            root,
            root,
            days_ago,
        )
    )


def survivors(conn: Conn, part: str, *, keep_failed: bool = False) -> list[int] | None:
    """The runs of the day `part` that outlive it; None when the day is gone."""
    [(found,)] = conn.execute(
        Q["prune_partition_survivors"], {"part": part, "keep_failed": keep_failed}
    ).fetchall()
    return None if found is None else list(found)


def test_a_day_keeps_each_run_with_a_job_anywhere_else_and_no_other(conn: Conn) -> None:
    day = day_of(conn, 30)
    alone = finished_job(conn, 30)
    whole = finished_job(conn, 30)
    finished_job(conn, 30, root=whole)
    # Jobs of the day's runs elsewhere: a child on a later day, on an earlier one (a day a pass
    # left behind), among the kept rows, queued; a root finished after its child.
    later = finished_job(conn, 30)
    finished_job(conn, 3, root=later)
    earlier = finished_job(conn, 30)
    finished_job(conn, 40, root=earlier)
    kept = finished_job(conn, 30)
    conn.execute(
        "INSERT INTO pipeline.job_history_kept SELECT * FROM pipeline.job_history WHERE id = %s",
        (finished_job(conn, 50, root=kept),),
    )
    conn.execute(
        "DELETE FROM pipeline.job_history WHERE id IN (SELECT id FROM pipeline.job_history_kept)"
    )
    queued = finished_job(conn, 30)
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, status, parent_id, root_id) "
        "VALUES ('page', 'queued', %s, %s)",
        (queued, queued),
    )
    root_later = finished_job(conn, 3)
    finished_job(conn, 30, root=root_later)
    failed = finished_job(conn, 30)
    finished_job(conn, 30, root=failed, status="failed")
    # Jobs of other runs, their ids and root ids on both sides of the day's: no say.
    finished_job(conn, 10, root=finished_job(conn, 10))

    expected = sorted([later, earlier, kept, queued, root_later])
    assert survivors(conn, day) == expected
    assert survivors(conn, day, keep_failed=True) == sorted([*expected, failed])
    assert alone not in expected and whole not in expected
    assert survivors(conn, day_of(conn, 31)) == [], "an empty day"
    assert survivors(conn, "pipeline.job_history_19990101") is None, "a day gone"


def test_a_days_survivors_read_each_other_day_by_two_index_scans_not_one_per_run(
    conn: Conn,
) -> None:
    # 200 runs of two jobs in the day, and in every other day jobs of other runs.
    conn.execute(
        """
        WITH roots AS (
            INSERT INTO pipeline.job_history (type, status, finished_at)
            SELECT 'split', 'done', now() - interval '30 days'
            FROM generate_series(1, 200)
            RETURNING id
        )
        INSERT INTO pipeline.job_history (type, status, parent_id, root_id, finished_at)
        SELECT 'page', 'done', id, id, now() - interval '30 days' FROM roots
        """
    )
    conn.execute(
        "INSERT INTO pipeline.job_history (type, status, finished_at) "
        "SELECT 'noop', 'done', now() - make_interval(days => d) "
        "FROM generate_series(0, 60) AS d, generate_series(1, 10)"
    )
    conn.execute("ANALYZE pipeline.job_history")
    day = day_of(conn, 30)
    other = day_of(conn, 20)
    with conn.transaction():
        assert survivors(conn, day) == []
        # This transaction's own scans of the other day, the planner's reads of its indexes'
        # ends among them.
        scans = count(
            conn,
            "SELECT seq_scan + idx_scan FROM pg_stat_xact_user_tables WHERE relid = %s::regclass",
            other,
        )
    # A probe per run and day read it 216 times here; the ranges, a few times whatever the runs.
    assert scans < 20, scans


def test_a_prune_batch_reads_each_other_day_a_few_times_whatever_its_runs(conn: Conn) -> None:
    # 200 runs of two jobs in the day of the cutoff, and in every other day jobs of other runs.
    conn.execute(
        f"""
        WITH roots AS (
            INSERT INTO pipeline.job_history (type, status, finished_at)
            SELECT 'split', 'done', {STRADDLING} FROM generate_series(1, 200)
            RETURNING id
        )
        INSERT INTO pipeline.job_history (type, status, parent_id, root_id, finished_at)
        SELECT 'page', 'done', id, id, {STRADDLING} FROM roots
        """
    )
    conn.execute(
        "INSERT INTO pipeline.job_history (type, status, finished_at) "
        "SELECT 'noop', 'done', now() - make_interval(days => d) "
        "FROM generate_series(0, 6) AS d, generate_series(1, 10)"
    )
    conn.execute("ANALYZE pipeline.job_history")
    [(cutoff,)] = conn.execute(Q["prune_cutoff"], {"older_than_s": WEEK}).fetchall()
    params = pass_params(conn, cutoff, keep_failed=False)
    with conn.transaction():
        [(more, _, runs, locked)] = conn.execute(
            Q["prune_lock_runs"], params | {"after_id": 0, "batch": 1000}
        ).fetchall()
        [(deleted, *_)] = conn.execute(
            Q["prune_runs"], params | {"runs": runs, "locked": locked}
        ).fetchall()
        scans = count(
            conn,
            "SELECT seq_scan + idx_scan FROM pg_stat_xact_user_tables WHERE relid = %s::regclass",
            day_of(conn, 3),
        )
    assert (more, len(runs), deleted) == (False, 200, 400)
    # A probe per run read it 1,000 times or more; the range of the runs' ids, a few times.
    assert scans < 20, scans


def test_a_days_detach_reads_the_day_a_few_times_whatever_the_backlog(conn: Conn) -> None:
    # Under the detach's exclusive lock, 300 queued jobs of other runs are no reason to read
    # the day once each; a queued job of one of the day's runs keeps it.
    live = finished_job(conn, 30)
    finished_job(conn, 30, root=live)
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, status, parent_id, root_id) "
        "VALUES ('page', 'queued', %s, %s)",
        (live, live),
    )
    conn.execute(
        "INSERT INTO pipeline.job_history (type, status, finished_at) "
        "SELECT 'noop', 'done', now() - interval '30 days' FROM generate_series(1, 20000)"
    )
    conn.execute("ANALYZE pipeline.job_history")
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, status) "
        "SELECT 'noop', 'queued' FROM generate_series(1, 300)"
    )
    conn.execute("ANALYZE pipeline.active_jobs")
    day = day_of(conn, 30)
    with conn.transaction():
        [(kept,)] = conn.execute(
            Q["prune_detach_partition"], {"part": day, "survivors": []}
        ).fetchall()
        scans = count(
            conn,
            "SELECT seq_scan + idx_scan FROM pg_stat_xact_user_tables WHERE relid = %s::regclass",
            day,
        )
    conn.execute(Q["prune_drop_partition"], {"part": day})
    assert kept == 2, "the live run's root and page, found through its queued job"
    assert run_size(conn, live)[0] == 3
    # A probe of the day per queued job read it 605 times.
    assert scans < 20, scans


# -- a batch reads the days that can hold its runs, and no other (issue 21, item 5) -------------


def in_day(days_ago: int) -> str:
    """A moment in the UTC day `days_ago` days back, before now - `days_ago` days: a job
    finished then is past a cutoff of that many days."""
    return (
        f"now() - interval '{days_ago} days' "
        "- (now() - (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')) / 2"
    )


def job_in_day(conn: Conn, days_ago: int, *, root: int | None = None) -> int:
    """A done job finished in the day `days_ago` days back (in_day), of the run `root` (None: a
    root)."""
    return int(
        one_row(
            conn,
            "INSERT INTO pipeline.job_history (type, status, parent_id, root_id, finished_at) "
            f"VALUES ('page', 'done', %s, %s, {in_day(days_ago)}) RETURNING id",
            root,
            root,
        )
    )


def days_read(plan: str) -> set[str]:
    """The history's days (partitions) a plan reads."""
    return set(re.findall(r"\bon (job_history_\d{8})\b", plan))


def test_a_run_with_a_job_in_a_later_day_is_seen_whole_though_the_pass_leaves_days_out(
    conn: Conn,
) -> None:
    # In the day of the cutoff: a run of its own, and the jobs the walk meets of two runs with a
    # job finished later, each in a day whose jobs are otherwise all newer than the cutoff's day.
    plain = job_in_day(conn, 7)
    job_in_day(conn, 7, root=plain)
    root_later = job_in_day(conn, 7)  # its root finishes after its child, in day -5
    job_in_day(conn, 7, root=root_later)
    child_later = job_in_day(conn, 7)  # its child finishes in day -4
    for days_ago in (6, 5, 4, 3, 2):
        job_in_day(conn, days_ago)
    job_in_day(conn, 4, root=child_later)
    conn.execute(
        f"UPDATE pipeline.job_history SET finished_at = {in_day(5)} WHERE id = %s", (root_later,)
    )
    [(cutoff,)] = conn.execute(Q["prune_cutoff"], {"older_than_s": WEEK}).fetchall()
    # What a pass reads once its days wholly past the cutoff are dropped.
    conn.execute(
        "DROP TABLE "
        + ", ".join(row[0] for row in conn.execute(Q["prune_partitions"], {"cutoff": cutoff}))
    )
    params = pass_params(conn, cutoff, keep_failed=False)
    walk = params | {"after_id": 0, "batch": 1000}

    # The pass leaves out the longest stretch of days that hold no job of its runs (-3 and -2;
    # -6 is one alone), and reads -5 and -4.
    assert (params["skip_from"], params["skip_to"]) == conn.execute(
        "SELECT (date_trunc('day', now() AT TIME ZONE 'UTC') - interval '3 days') "
        "AT TIME ZONE 'UTC', (date_trunc('day', now() AT TIME ZONE 'UTC') - interval '1 day') "
        "AT TIME ZONE 'UTC'"
    ).fetchone()
    with conn.transaction(force_rollback=True):
        [(_, _, runs, _)] = conn.execute(Q["prune_lock_runs"], walk).fetchall()
    assert runs == [plain]
    # Had it left those out too, it would have taken both runs: they look finished in day -7.
    blind = walk | {"skip_from": cutoff, "skip_to": params["skip_to"]}
    with conn.transaction(force_rollback=True):
        [(_, _, runs, _)] = conn.execute(Q["prune_lock_runs"], blind).fetchall()
    assert runs == [plain, root_later, child_later]

    report = prune(conn, WEEK, rest=0)

    assert (report.runs, report.jobs) == (1, 2)
    assert run_size(conn, root_later)[0] == 2
    assert run_size(conn, child_later)[0] == 2


def test_a_run_met_above_the_runs_a_pass_can_take_is_left_to_a_later_pass(conn: Conn) -> None:
    first = job_in_day(conn, 7)
    late = job_in_day(conn, 7)  # as if it finished before the cutoff after the pass began
    [(cutoff,)] = conn.execute(Q["prune_cutoff"], {"older_than_s": WEEK}).fetchall()
    params = pass_params(conn, cutoff, keep_failed=False) | {"runs_upto": first}

    with conn.transaction():
        [(more, _, runs, locked)] = conn.execute(
            Q["prune_lock_runs"], params | {"after_id": 0, "batch": 1000}
        ).fetchall()
        [(deleted, *_)] = conn.execute(
            Q["prune_runs"], params | {"runs": [first, late], "locked": [1, 1]}
        ).fetchall()

    assert (more, runs, locked) == (False, [first], [1])
    assert deleted == 1, "prune_runs, given it all the same, leaves it too"
    assert run_size(conn, late)[0] == 1
    assert prune(conn, WEEK, rest=0).runs == 1
    assert run_size(conn, late)[0] == 0


def test_a_prune_batch_plans_and_reads_only_the_days_that_can_hold_its_runs(conn: Conn) -> None:
    # Jobs in each of the 45 days before today, the oldest first (as ids come), and runs of two
    # jobs in the day of a 40-day cutoff.
    for days_ago in range(45, 0, -1):
        conn.execute(
            "INSERT INTO pipeline.job_history (type, status, finished_at) "
            f"SELECT 'noop', 'done', {in_day(days_ago)} FROM generate_series(1, 20)"
        )
        if days_ago == 40:
            for _ in range(5):
                job_in_day(conn, 40, root=job_in_day(conn, 40))
    conn.execute("ANALYZE pipeline.job_history")
    [(cutoff,)] = conn.execute(Q["prune_cutoff"], {"older_than_s": 40 * DAY}).fetchall()
    params = pass_params(conn, cutoff, keep_failed=False)
    walk = params | {"after_id": 0, "batch": 1000}
    every_day = {"skip_from": cutoff, "skip_to": cutoff}
    all_days = {
        row[0]
        for row in conn.execute(
            "SELECT c.relname FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = 'pipeline.job_history'::regclass"
        )
    }
    # Days -39 to -2 hold jobs of later runs alone, and no late row can come to them.
    left_out = {day_of(conn, d).removeprefix("pipeline.") for d in range(39, 1, -1)}
    with conn.transaction(force_rollback=True):
        [(_, _, runs, locked)] = conn.execute(Q["prune_lock_runs"], walk).fetchall()
    # The 120 jobs of days -45 to -40 alone in their runs, and the 5 runs of two.
    assert (len(runs), sum(locked)) == (125, 130)
    batch = params | {"runs": runs, "locked": locked}

    for name, query_params in (("prune_lock_runs", walk), ("prune_runs", batch)):
        plan = "\n".join(row[0] for row in conn.execute("EXPLAIN " + Q[name], query_params))
        blind = "\n".join(
            row[0] for row in conn.execute("EXPLAIN " + Q[name], query_params | every_day)
        )
        assert_reads_run_members_by_known_bounds(plan)
        assert days_read(blind) == all_days, blind
        assert days_read(plan) == days_read(blind) - left_out, plan
        assert day_of(conn, 40).removeprefix("pipeline.") in days_read(plan)


def test_a_day_is_closed_to_late_rows_only_a_day_before_the_oldest_open_transaction_began(
    db_url: str, conn: Conn
) -> None:
    # A job finishes at its transaction's start: one open now may still write into that day.
    with psycopg.connect(db_url) as other:
        [(began,)] = other.execute("SELECT now()").fetchall()
        [(open_from, _)] = conn.execute(Q["prune_history_horizon"]).fetchall()
        [(now,)] = conn.execute("SELECT now()").fetchall()
    # (At or before: an autovacuum worker's transaction may be older still.)
    assert open_from <= began - timedelta(days=1) < now - timedelta(days=1)
