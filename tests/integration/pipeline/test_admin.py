"""The admin queries (pipeline/admin/jobs.py) against real Postgres: filters, tenant scoping,
bulk retry and cancel in batches, and index-backed plans on a million finished rows."""

from __future__ import annotations

import json
import re
import threading
import uuid
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import enqueue
from pg_pipeline.admin import jobs as admin
from pg_pipeline.admin import schedules
from pg_pipeline.admin.jobs import Change, JobFilter
from pg_pipeline.queries import Q
from pg_pipeline.store import ClaimedJob, JobStore
from tests.support.history import INDEX, big_seq_scans, make_past_days
from tests.support.plans import nested_plans
from tests.support.waiting import lock_waiters, wait_for

Conn = psycopg.Connection[Any]
WORKER = uuid.UUID(int=7)


def one(conn: Conn, sql: str, *params: Any) -> Any:
    row = conn.execute(sql, params or None).fetchone()
    assert row is not None
    return row[0]


def status_of(conn: Conn, job_id: int) -> str:
    return str(one(conn, "SELECT status FROM pipeline.jobs WHERE id = %s", job_id))


def add_jobs(conn: Conn, n: int, *, type_: str, tenant: str | None, status: str) -> list[int]:
    """`n` jobs in `status`, inserted as data: what a worker would have left behind."""
    table = "active_jobs" if status in ("queued", "running") else "job_history"
    rows = conn.execute(  # type: ignore[call-overload]
        f"""
        INSERT INTO pipeline.{table} (type, tenant_id, status, attempts, max_attempts, finished_at,
                          last_error)
        SELECT %(type)s, %(tenant)s, %(status)s, 1, 1,
               CASE WHEN %(status)s IN ('done', 'failed', 'cancelled') THEN now() END,
               CASE WHEN %(status)s = 'failed' THEN 'boom' END
        FROM generate_series(1, %(n)s)
        RETURNING id
        """,
        {"type": type_, "tenant": tenant, "status": status, "n": n},
    ).fetchall()
    return [r[0] for r in rows]


def transactions_that_wrote(conn: Conn, ids: list[int]) -> int:
    """Distinct transactions that last wrote these rows: one per batch that changed them."""
    return int(
        one(
            conn,
            "SELECT count(DISTINCT x::text) FROM ("
            "SELECT xmin AS x FROM pipeline.active_jobs WHERE id = ANY(%s) UNION ALL "
            "SELECT xmin FROM pipeline.job_history WHERE id = ANY(%s)) AS w",
            ids,
            ids,
        )
    )


# -- list -----------------------------------------------------------------------------------


def test_list_filters_by_status_stage_tenant_and_age_newest_first(conn: Conn) -> None:
    old = add_jobs(conn, 2, type_="noop", tenant="acme", status="done")
    conn.execute(
        "UPDATE pipeline.job_history SET created_at = now() - interval '3 hours' "
        "WHERE id = ANY(%s)",
        (old,),
    )
    acme_failed = add_jobs(conn, 3, type_="effect", tenant="acme", status="failed")
    globex_failed = add_jobs(conn, 2, type_="effect", tenant="globex", status="failed")
    queued = enqueue(conn, "noop", {"n": 1})

    def ids(where: JobFilter, limit: int = 100, before: int | None = None) -> list[int]:
        return [j.id for j in admin.list_jobs(conn, where, limit=limit, before=before)]

    everything = sorted([*old, *acme_failed, *globex_failed, queued], reverse=True)
    assert ids(JobFilter()) == everything
    assert ids(JobFilter(status="failed")) == sorted(acme_failed + globex_failed, reverse=True)
    assert ids(JobFilter(status="failed", tenant="acme")) == sorted(acme_failed, reverse=True)
    assert ids(JobFilter(stage="noop")) == sorted([*old, queued], reverse=True)
    assert ids(JobFilter(tenant="globex", stage="noop")) == []
    assert ids(JobFilter(since_s=3600)) == sorted(
        [*acme_failed, *globex_failed, queued], reverse=True
    )
    assert ids(JobFilter(since_s=4 * 3600, tenant="acme")) == sorted(
        [*old, *acme_failed], reverse=True
    )
    # Pages: the smallest id of one page is where the next begins.
    first = ids(JobFilter(), limit=3)
    second = ids(JobFilter(), limit=3, before=first[-1])
    assert first + second == everything[:6]

    [summary] = admin.list_jobs(conn, JobFilter(stage="effect", tenant="globex"), limit=1)
    assert (summary.status, summary.tenant_id, summary.last_error) == ("failed", "globex", "boom")


# -- show -------------------------------------------------------------------------------------


def test_show_gives_payload_attempts_timeline_run_parent_and_children(
    conn: Conn, pool: ConnectionPool
) -> None:
    root = enqueue(conn, "chain", {"n": 2}, tenant_id="acme")
    [claimed] = JobStore(pool).claim(["chain"], 1, WORKER)
    children = [
        enqueue(conn, "chain", {"n": i}, tenant_id="acme", parent_id=root, root_id=root)
        for i in range(3)
    ]
    grandchild = enqueue(
        conn, "chain", {"n": 9}, tenant_id="acme", parent_id=children[0], root_id=root
    )

    job = admin.get_job(conn, root)
    assert job is not None
    assert (job.payload, job.status, job.attempts, job.claims) == ({"n": 2}, "running", 1, 1)
    assert (job.run_id, job.parent_id, job.children, job.children_total) == (
        root,
        None,
        children,
        3,
    )
    assert job.timeline.started_at is not None and job.timeline.finished_at is None
    assert job.timeline.created_at <= job.timeline.started_at
    assert claimed.id == root

    child = admin.get_job(conn, children[0])
    assert child is not None
    assert (child.run_id, child.parent_id, child.children) == (root, root, [grandchild])
    grand = admin.get_job(conn, grandchild)
    assert grand is not None and grand.run_id == root and grand.children_total == 0


def test_show_lists_the_first_children_of_a_large_fan_out_and_counts_all(conn: Conn) -> None:
    root = enqueue(conn, "noop", {})
    conn.execute(
        """
        INSERT INTO pipeline.active_jobs (type, parent_id, root_id)
        SELECT 'noop', %(root)s, %(root)s FROM generate_series(1, %(n)s)
        """,
        {"root": root, "n": admin.CHILDREN_SHOWN + 50},
    )
    job = admin.get_job(conn, root)
    assert job is not None
    assert job.children_total == admin.CHILDREN_SHOWN + 50
    assert len(job.children) == admin.CHILDREN_SHOWN and job.children == sorted(job.children)


# -- tenant scoping -------------------------------------------------------------------------


def test_a_tenant_scoped_caller_cannot_see_or_change_another_tenants_job(conn: Conn) -> None:
    [theirs_failed] = add_jobs(conn, 1, type_="effect", tenant="globex", status="failed")
    theirs_queued = enqueue(conn, "noop", {"n": 42}, tenant_id="globex")
    untenanted = enqueue(conn, "noop", {})
    mine = enqueue(conn, "noop", {}, tenant_id="acme")

    for job_id in (theirs_failed, theirs_queued, untenanted):
        assert admin.get_job(conn, job_id, tenant="acme") is None
        assert admin.retry_job(conn, job_id, tenant="acme") is Change.MISSING
        assert admin.cancel_job(conn, job_id, tenant="acme") is Change.MISSING
    assert admin.retry_failed(conn, tenant="acme") == 0
    assert admin.cancel_queued(conn, "noop", tenant="acme") == 1  # `mine`, alone
    assert [j.id for j in admin.list_jobs(conn, JobFilter(tenant="acme"), limit=10)] == [mine]

    assert (status_of(conn, theirs_failed), status_of(conn, theirs_queued)) == ("failed", "queued")
    assert status_of(conn, untenanted) == "queued"
    assert status_of(conn, mine) == "cancelled"
    shown = admin.get_job(conn, theirs_queued, tenant="globex")
    assert shown is not None and shown.payload == {"n": 42}


def test_a_tenant_scoped_caller_cannot_pause_or_resume_another_tenants_schedule(
    conn: Conn,
) -> None:
    conn.execute(
        """INSERT INTO pipeline.schedules (name, stage, tenant_id, every_s, source, next_fire_at)
           VALUES ('mine', 'noop', 'acme', 60, 'cli', now()),
                  ('theirs', 'noop', 'globex', 60, 'cli', now()),
                  ('nobodys', 'noop', NULL, 60, 'cli', now())"""
    )

    def paused() -> dict[str, bool]:
        return dict(conn.execute("SELECT name, paused FROM pipeline.schedules").fetchall())

    assert not schedules.pause(conn, "theirs", tenant="acme")
    assert not schedules.pause(conn, "nobodys", tenant="acme")
    assert not schedules.pause(conn, "missing", tenant="acme")
    assert schedules.pause(conn, "mine", tenant="acme")
    assert paused() == {"mine": True, "theirs": False, "nobodys": False}
    assert schedules.pause(conn, "nobodys")  # unscoped: every schedule
    assert not schedules.resume(conn, "nobodys", tenant="acme")
    assert schedules.resume(conn, "mine", tenant="acme")
    assert paused() == {"mine": False, "theirs": False, "nobodys": True}


# -- retry ----------------------------------------------------------------------------------


def test_retry_by_id_requeues_a_failed_job_with_one_more_attempt(conn: Conn) -> None:
    [failed] = add_jobs(conn, 1, type_="effect", tenant=None, status="failed")
    done = add_jobs(conn, 1, type_="effect", tenant=None, status="done")[0]
    assert admin.retry_job(conn, failed) is Change.DONE
    row = conn.execute(
        "SELECT status, attempts, max_attempts, finished_at FROM pipeline.jobs WHERE id = %s",
        (failed,),
    ).fetchone()
    assert row == ("queued", 1, 2, None)
    assert admin.retry_job(conn, done) is Change.REFUSED
    assert admin.retry_job(conn, 10**12) is Change.MISSING


def test_bulk_retry_requeues_every_matching_failed_job_in_short_batches(conn: Conn) -> None:
    acme = add_jobs(conn, 25, type_="effect", tenant="acme", status="failed")
    other_stage = add_jobs(conn, 4, type_="noop", tenant="acme", status="failed")
    other_tenant = add_jobs(conn, 3, type_="effect", tenant="globex", status="failed")
    cancelled = add_jobs(conn, 2, type_="effect", tenant="acme", status="cancelled")

    assert admin.retry_failed(conn, stage="effect", tenant="acme", batch=10) == 25
    queued = conn.execute(
        "SELECT id FROM pipeline.jobs WHERE status = 'queued' AND max_attempts = 2 ORDER BY id"
    ).fetchall()
    assert [r[0] for r in queued] == acme
    assert transactions_that_wrote(conn, acme) == 3  # 10 + 10 + 5, each its own transaction
    for ids, status in (
        (other_stage, "failed"),
        (other_tenant, "failed"),
        (cancelled, "cancelled"),
    ):
        assert {status_of(conn, i) for i in ids} == {status}

    assert admin.retry_failed(conn) == 7  # every stage, every tenant; cancelled ones stay
    assert {status_of(conn, i) for i in cancelled} == {"cancelled"}


def test_bulk_retry_wakes_workers_and_reopens_the_fan_out_it_belongs_to(conn: Conn) -> None:
    root = enqueue(conn, "noop", {})
    conn.execute(
        # One child done; the failed one is counted as it lands in the history below.
        "INSERT INTO pipeline.joins (id, root_id, total, done, failed) VALUES (%s, %s, 2, 1, 0)",
        (root, root),
    )
    conn.execute(
        "INSERT INTO pipeline.job_history (type, status, attempts, max_attempts, "
        "parent_id, root_id, "
        "join_id, "
        "finished_at) VALUES ('noop', 'failed', 2, 2, %s, %s, %s, now())",
        (root, root, root),
    )
    with psycopg.connect(conn.info.dsn, autocommit=True) as listener:
        listener.execute("LISTEN pipeline_jobs")
        assert admin.retry_failed(conn) == 1
        heard = [n.payload for n in listener.notifies(timeout=5, stop_after=1)]
    assert heard == ["noop"]
    join = conn.execute(
        "SELECT done, failed, finished_at FROM pipeline.joins WHERE id = %s", (root,)
    )
    assert join.fetchone() == (1, 0, None)


# -- cancel ---------------------------------------------------------------------------------


def test_cancel_by_id_stops_a_running_job_and_tells_its_worker(
    conn: Conn, pool: ConnectionPool
) -> None:
    job_id = enqueue(conn, "noop", {}, tenant_id="acme")
    [claimed] = JobStore(pool).claim(["noop"], 1, WORKER)
    with psycopg.connect(conn.info.dsn, autocommit=True) as listener:
        listener.execute("LISTEN pipeline_cancel")
        assert admin.cancel_job(conn, job_id, tenant="acme", reason="operator") is Change.DONE
        heard = [n.payload for n in listener.notifies(timeout=5, stop_after=1)]
    assert heard == [f"{job_id}:{claimed.claim}"]
    row = conn.execute(
        "SELECT status, last_error FROM pipeline.jobs WHERE id = %s", (job_id,)
    ).fetchone()
    assert row == ("cancelled", "operator")
    assert admin.cancel_job(conn, job_id) is Change.REFUSED
    assert JobStore(pool).complete([claimed.fence]) == set(), "the fence holds after a cancel"


def cancels_heard(conn: Conn, listener: Conn) -> list[str]:
    """The payloads `listener` heard on pipeline_cancel until now: every transaction that
    committed before this one's NOTIFY was delivered before it."""
    conn.execute("NOTIFY pipeline_cancel, 'end'")
    heard = []
    for n in listener.notifies(timeout=10):
        if n.payload == "end":
            return heard
        heard.append(n.payload)
    raise AssertionError(f"no end of the notifications after {heard}")


def ended_attempts(conn: Conn, job_id: int) -> list[tuple[Any, ...]]:
    return [(a.outcome, a.error, a.worker_id) for a in admin.job_attempts(conn, job_id)]


@pytest.mark.parametrize("way", ["cancel", "cancel_tree", "jobs_cancel_queued"])
def test_every_cancel_ends_a_running_job_s_attempt_and_tells_its_worker_and_a_queued_one_s_neither(
    conn: Conn, pool: ConnectionPool, way: str
) -> None:
    # The three statements share the move (functions/cancel_jobs.sql): the attempt row and the
    # notification are for the running jobs alone, whichever picked them.
    root = enqueue(conn, "noop", {})
    children = [
        one(
            conn,
            "INSERT INTO pipeline.active_jobs (type, parent_id, root_id) "
            "VALUES ('effect', %s, %s) RETURNING id",
            root,
            root,
        )
        for _ in range(2)
    ]
    [running] = JobStore(pool).claim(["effect"], 1, WORKER)
    [queued] = [i for i in children if i != running.id]
    with psycopg.connect(conn.info.dsn, autocommit=True) as listener:
        listener.execute("LISTEN pipeline_cancel")
        if way == "cancel":
            for job_id in (running.id, queued):
                assert conn.execute(Q["cancel"], {"id": job_id, "reason": "stop"}).fetchall() == [
                    (job_id, job_id == running.id)
                ]
        elif way == "cancel_tree":
            assert conn.execute(Q["cancel_tree"], {"id": root, "reason": "stop"}).fetchall() == [
                (root, False),
                *sorted((i, i == running.id) for i in children),
            ]
        else:
            assert admin.cancel_queued(conn, "effect", reason="stop") == 1
        heard = cancels_heard(conn, listener)

    if way == "jobs_cancel_queued":
        assert heard == []
        assert status_of(conn, running.id) == "running"
        assert ended_attempts(conn, running.id) == []
    else:
        assert heard == [f"{running.id}:{running.claim}"]
        assert ended_attempts(conn, running.id) == [("cancelled", "stop", WORKER)]
    assert ended_attempts(conn, queued) == []
    assert (
        one(conn, "SELECT (status, last_error)::text FROM pipeline.jobs WHERE id = %s", queued)
        == "(cancelled,stop)"
    )


@pytest.mark.parametrize("query", ["cancel", "cancel_tree"])
def test_a_cancel_that_waits_for_a_claim_tells_the_worker_that_took_the_job(
    db_url: str, conn: Conn, query: str
) -> None:
    # The move reads the job after the cancel waited for the claim's lock (in its DELETE, or in
    # cancel_tree's FOR UPDATE before it): a running job, whose worker is told.
    job_id = enqueue(conn, "noop", {})
    cancelled: list[tuple[Any, ...]] = []

    def cancel() -> None:
        with psycopg.connect(db_url, autocommit=True) as c:
            cancelled.extend(c.execute(Q[query], {"id": job_id, "reason": "stop"}).fetchall())

    with (
        psycopg.connect(db_url, autocommit=True) as listener,
        psycopg.connect(db_url) as claiming,
    ):
        listener.execute("LISTEN pipeline_cancel")
        [row] = claiming.execute(
            Q["claim"],
            {"types": ["noop"], "limit": 1, "worker_id": WORKER, "cap_stages": [], "caps": []},
        ).fetchall()
        claimed = ClaimedJob._make(row)
        cancelling = threading.Thread(target=cancel)
        cancelling.start()
        wait_for(lambda: lock_waiters(conn) > 0, what="the cancel to wait for the claim")
        claiming.commit()
        cancelling.join(timeout=60)
        heard = cancels_heard(conn, listener)

    assert cancelled == [(job_id, True)]
    assert heard == [f"{job_id}:{claimed.claim}"]
    assert ended_attempts(conn, job_id) == [("cancelled", "stop", WORKER)]


def test_bulk_cancel_takes_queued_jobs_of_the_stage_in_batches_and_never_running_ones(
    conn: Conn, pool: ConnectionPool
) -> None:
    tenanted = add_jobs(conn, 12, type_="noop", tenant="acme", status="queued")
    untenanted = add_jobs(conn, 5, type_="noop", tenant=None, status="queued")
    other_stage = add_jobs(conn, 3, type_="effect", tenant="acme", status="queued")
    running = JobStore(pool).claim(["noop"], 2, WORKER)
    assert len(running) == 2
    still_queued = [i for i in tenanted + untenanted if i not in {j.id for j in running}]

    assert admin.cancel_queued(conn, "noop", tenant="acme", batch=4) == len(
        [i for i in still_queued if i in tenanted]
    )
    assert {status_of(conn, i) for i in untenanted if i in still_queued} == {"queued"}
    assert admin.cancel_queued(conn, "noop", reason="backlog dropped", batch=4) == len(
        [i for i in still_queued if i in untenanted]
    )
    assert {status_of(conn, i) for i in still_queued} == {"cancelled"}
    assert {status_of(conn, j.id) for j in running} == {"running"}
    assert {status_of(conn, i) for i in other_stage} == {"queued"}
    cancelled_acme = [i for i in still_queued if i in tenanted]
    assert transactions_that_wrote(conn, cancelled_acme) == -(-len(cancelled_acme) // 4)
    reasons = conn.execute(
        "SELECT DISTINCT last_error FROM pipeline.jobs WHERE id = ANY(%s)",
        ([i for i in still_queued if i in untenanted],),
    ).fetchall()
    assert reasons == [("backlog dropped",)]


# -- plans on a million rows ----------------------------------------------------------------

ANY_FILTER = {
    "finished_from": None,
    "finished_to": None,
    "status": None,
    "stage": None,
    "tenant": None,
    "since_s": None,
    "since": None,
    "until": None,
    "search": None,
    "before": None,
    "after": None,
}


def plan(conn: Conn, query: Any, params: dict[str, Any]) -> str:
    return "\n".join(row[0] for row in conn.execute("EXPLAIN " + query, params))


def test_admin_queries_stay_index_lookups_on_a_million_finished_rows(conn: Conn) -> None:
    make_past_days(conn, 6)
    conn.execute(
        """
        INSERT INTO pipeline.job_history (type, tenant_id, status, attempts, created_at,
            finished_at)
        SELECT (ARRAY['upload', 'ocr', 'extract'])[1 + g % 3], 't' || (g % 20),
               CASE WHEN g % 5000 = 0 THEN 'failed' ELSE 'done' END, 1,
               now() - make_interval(secs => (1000000 - g) * 0.5),
               now() - make_interval(secs => (1000000 - g) * 0.5)
        FROM generate_series(1, 1000000) AS g
        """
    )
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, tenant_id) SELECT 'ocr', 'rare' FROM "
        "generate_series(1, 5)"
    )
    conn.execute("INSERT INTO pipeline.active_jobs (type) SELECT 'ocr' FROM generate_series(1, 5)")
    conn.execute("VACUUM ANALYZE pipeline.active_jobs, pipeline.job_history")
    lists: list[dict[str, Any]] = [
        {},
        {"tenant": "rare"},
        {"tenant": "t3", "status": "failed"},
        {"status": "failed"},
        {"status": "failed", "stage": "ocr"},
        {"since_s": 60.0},
        {"since_s": 600.0, "tenant": "rare"},
        {"before": 500000},
    ]
    for filters in lists:
        shown = plan(conn, Q["jobs_list"], {**ANY_FILTER, **filters, "limit": 20})
        assert not big_seq_scans(shown), (filters, shown)
    assert INDEX["jobs_tenant"] in plan(
        conn, Q["jobs_list"], {**ANY_FILTER, "tenant": "rare", "limit": 20}
    )
    assert INDEX["jobs_created"] in plan(
        conn, Q["jobs_list"], {**ANY_FILTER, "since_s": 60.0, "limit": 20}
    )

    retry = plan(
        conn, Q["jobs_retry_failed"], {"after": 0, "stage": "ocr", "tenant": None, "batch": 500}
    )
    assert INDEX["jobs_failed"] in retry and not big_seq_scans(retry), retry
    for tenant in (None, "rare"):
        cancel = plan(
            conn,
            Q["jobs_cancel_queued"],
            {"stage": "ocr", "tenant": tenant, "reason": None, "upto": 2**62, "batch": 500},
        )
        # Ten queued jobs: the hot table is read whole or by jobs_ready, never the history.
        assert "Scan on job_history" not in cancel and not big_seq_scans(cancel), cancel

    # And beside a busy queue: 50,000 jobs of another stage, and a run of twenty. The cancels'
    # move is pipeline.cancel_jobs (functions/cancel_jobs.sql), whose statement a plain EXPLAIN
    # of its caller does not show: its DELETE takes the jobs it is given by the primary key, for
    # each cancel and each kind of plan, never reading the whole queue (a batch of a bulk
    # cancel, a few hundred jobs, would read it all, batch after batch).
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, tenant_id) "
        "SELECT 'upload', 't' || (g % 20) FROM generate_series(1, 50000) AS g"
    )
    root = one(conn, "INSERT INTO pipeline.active_jobs (type) VALUES ('ocr') RETURNING id")
    [child, *_] = [
        row[0]
        for row in conn.execute(
            "INSERT INTO pipeline.active_jobs (type, parent_id, root_id) "
            "SELECT 'ocr', %s, %s FROM generate_series(1, 20) RETURNING id",
            (root, root),
        )
    ]
    conn.execute("VACUUM ANALYZE pipeline.active_jobs")
    queued = {"stage": "ocr", "reason": None, "upto": 2**62, "batch": 500}
    cancels: list[tuple[str, dict[str, Any]]] = [
        ("jobs_cancel_queued", {**queued, "tenant": None}),
        ("jobs_cancel_queued", {**queued, "tenant": "rare"}),
        ("cancel", {"id": child, "reason": None}),
        ("cancel_tree", {"id": root, "reason": None}),
        ("cancel_tree", {"id": child, "reason": None}),
    ]
    for mode in ("force_custom_plan", "force_generic_plan"):
        conn.execute(f"SET plan_cache_mode = {mode}")  # type: ignore[arg-type]
        for name, params in cancels:
            shown = nested_plans(conn, Q[name], params)
            start = shown.index("Delete on active_jobs")
            deleting = shown[start : shown.index("Insert on job_history", start)]
            by_key = r"(Index Scan using|Bitmap Index Scan on) active_jobs_pkey"
            assert re.search(by_key, deleting), (name, mode, shown)
            assert "Seq Scan" not in deleting, (name, mode, shown)
            assert not big_seq_scans(shown), (name, mode, shown)
    conn.execute("RESET plan_cache_mode")

    # And through the real function: a page of a rare tenant comes back, as JSON-able rows.
    rows = admin.list_jobs(conn, JobFilter(tenant="rare"), limit=20)
    assert len(rows) == 5 and json.dumps([r.id for r in rows])
