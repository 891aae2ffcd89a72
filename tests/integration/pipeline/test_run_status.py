"""The stored run status (pipeline.runs), kept by the statements that change a run's jobs."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

import tests.support.apps.pipeline_app  # noqa: F401  registers the pipeline stages
from pg_pipeline import enqueue
from pg_pipeline.admin.jobs import Change, retry_job
from pg_pipeline.admin.runs import list_runs, read_run
from pg_pipeline.context import Context
from pg_pipeline.maintenance.retention import prune
from pg_pipeline.stage import REGISTRY
from pg_pipeline.store import ClaimedJob, JobStore

Conn = psycopg.Connection[Any]
WORKER = uuid.UUID(int=7)


def run_row(conn: Conn, run_id: int) -> tuple[Any, ...] | None:
    return conn.execute(
        "SELECT status, active, done, failed, cancelled, blocked_job_id, blocked_reason,"
        " finished_at IS NOT NULL FROM pipeline.runs WHERE run_id = %s",
        (run_id,),
    ).fetchone()


def fan_out_root(conn: Conn, store: JobStore, pages: int) -> tuple[int, ClaimedJob]:
    """A split job, claimed, that fans out `pages` page jobs then assemble, and completes."""
    root = enqueue(conn, "split", {"pages": pages}, tenant_id="acme")
    [claimed] = store.claim(["split"], 1, WORKER)
    ctx = Context(
        job_id=root,
        stage="split",
        attempt=1,
        max_attempts=1,
        tenant_id="acme",
        parent_id=None,
        registry=REGISTRY,
    )
    ctx.fan_out("page", [{"page": i} for i in range(pages)], then=("assemble", {"pages": pages}))
    store.complete_with(claimed, ctx.transaction_steps)
    return root, claimed


def test_a_job_alone_has_no_run_row(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    job = enqueue(conn, "split", {"pages": 1})
    [claimed] = store.claim(["split"], 1, WORKER)
    assert store.complete([claimed.fence]) == {job}
    assert conn.execute("SELECT count(*) FROM pipeline.runs").fetchone() == (0,)


def history_relations_locked(conn: Conn) -> list[str]:
    """The history's relations (partitions, indexes) this session's transaction has locked."""
    return [
        name
        for (name,) in conn.execute(
            "SELECT c.relname FROM pg_locks AS l JOIN pg_class AS c ON c.oid = l.relation"
            " WHERE l.pid = pg_backend_pid() AND c.relname LIKE 'job\\_history%%'"
        )
    ]


def test_enqueueing_a_job_alone_locks_nothing_of_the_history(conn: Conn) -> None:
    # Locking the history's every partition and index made each enqueue grow with retention.
    with conn.transaction():
        enqueue(conn, "split", {"pages": 1})
        assert history_relations_locked(conn) == []


def test_enqueueing_into_a_run_that_has_its_row_locks_nothing_of_the_history(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    root, _ = fan_out_root(conn, store, 1)
    with conn.transaction():
        enqueue(conn, "page", {"page": 9}, parent_id=root, root_id=root, tenant_id="acme")
        assert history_relations_locked(conn) == []
    # The run's one page and the new job: counted by the UPDATE, which stays.
    assert run_row(conn, root) == ("running", 2, 1, 0, 0, None, None, False)


def test_a_fan_out_runs_then_ends_done_once_its_last_stage_is(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    root, _ = fan_out_root(conn, store, 3)
    assert run_row(conn, root) == ("running", 3, 1, 0, 0, None, None, False)
    pages = store.claim(["page"], 10, WORKER)
    store.complete([p.fence for p in pages])
    # The join fired: assemble is queued, the run still runs.
    assert run_row(conn, root) == ("running", 1, 4, 0, 0, None, None, False)
    [assemble] = store.claim(["assemble"], 1, WORKER)
    store.complete([assemble.fence])
    assert run_row(conn, root) == ("done", 0, 5, 0, 0, None, None, True)


def test_a_child_failing_for_good_fails_the_run_and_a_retry_makes_it_run_again(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    root, _ = fan_out_root(conn, store, 3)
    first, second, third = sorted(store.claim(["page"], 10, WORKER), key=lambda j: j.id)
    assert store.fail(second, "page 2 is unreadable")
    # Failed at once, while siblings still run: the join can never fire now.
    assert run_row(conn, root) == ("failed", 2, 1, 1, 0, second.id, "page 2 is unreadable", True)
    store.complete([first.fence, third.fence])
    assert run_row(conn, root) == ("failed", 0, 3, 1, 0, second.id, "page 2 is unreadable", True)
    assert retry_job(conn, second.id) is Change.DONE
    assert run_row(conn, root) == ("running", 1, 3, 0, 0, None, None, False)
    [again] = store.claim(["page"], 1, WORKER)
    store.complete([again.fence])
    [assemble] = store.claim(["assemble"], 1, WORKER)
    store.complete([assemble.fence])
    assert run_row(conn, root) == ("done", 0, 5, 0, 0, None, None, True)


def test_retrying_the_blocking_job_names_the_next_failed_one(
    conn: Conn, pool: ConnectionPool
) -> None:
    store = JobStore(pool)
    root, _ = fan_out_root(conn, store, 2)
    first, second = sorted(store.claim(["page"], 10, WORKER), key=lambda j: j.id)
    store.fail(first, "first")
    store.fail(second, "second")
    assert run_row(conn, root) == ("failed", 0, 1, 2, 0, first.id, "first", True)
    retry_job(conn, first.id)
    assert run_row(conn, root) == ("failed", 1, 1, 1, 0, second.id, "second", True)


def test_a_prune_deletes_the_run_row_with_its_run(conn: Conn, pool: ConnectionPool) -> None:
    store = JobStore(pool)
    root, _ = fan_out_root(conn, store, 2)
    store.complete([p.fence for p in store.claim(["page"], 10, WORKER)])
    store.complete([a.fence for a in store.claim(["assemble"], 1, WORKER)])
    assert run_row(conn, root) is not None
    prune(conn, older_than_s=0)
    assert conn.execute("SELECT count(*) FROM pipeline.jobs").fetchone() == (0,)
    assert run_row(conn, root) is None


def test_the_migration_counts_the_runs_there_were_as_the_triggers_keep_them(
    conn: Conn, pool: ConnectionPool
) -> None:
    from pg_pipeline.migrate import apply

    store = JobStore(pool)
    done_run, _ = fan_out_root(conn, store, 2)
    store.complete([p.fence for p in store.claim(["page"], 10, WORKER)])
    failed_run, _ = fan_out_root(conn, store, 3)
    pages = sorted(store.claim(["page"], 2, WORKER), key=lambda j: j.id)
    store.fail(pages[0], "torn page")
    kept = "SELECT run_id, tenant_id, status, active, done, failed, cancelled, blocked_job_id,"
    kept += " blocked_reason, finished_at IS NULL FROM pipeline.runs ORDER BY run_id"
    by_triggers = conn.execute(kept).fetchall()
    assert [row[2] for row in by_triggers] == ["running", "failed"]
    # The database as it was before 0017: no runs table, nothing counting them.
    conn.execute(
        "DROP TRIGGER active_jobs_count_runs ON pipeline.active_jobs;"
        " DROP TRIGGER job_history_count_runs_finished ON pipeline.job_history;"
        " DROP TRIGGER job_history_count_runs_removed ON pipeline.job_history;"
        " DROP TRIGGER job_history_kept_count_runs_removed ON pipeline.job_history_kept;"
        " DROP TABLE pipeline.runs; DELETE FROM pipeline.migrations WHERE version = 17"
    )
    assert apply(conn).migrations == [17]
    assert conn.execute(kept).fetchall() == by_triggers
    assert {done_run, failed_run} == {row[0] for row in by_triggers}


def test_status_and_the_metrics_count_runs_by_status(conn: Conn, pool: ConnectionPool) -> None:
    from pg_pipeline.admin.metrics import QueueCollector
    from pg_pipeline.admin.status import read_status
    from pg_pipeline.commands.status import render

    store = JobStore(pool)
    fan_out_root(conn, store, 2)
    fan_out_root(conn, store, 1)
    [first, *_] = sorted(store.claim(["page"], 10, WORKER), key=lambda j: j.id)
    store.fail(first, "torn")

    status = read_status(conn)

    assert status.runs == {"running": 1, "waiting": 0, "done": 0, "failed": 1, "cancelled": 0}
    assert read_status(conn, tenant="globex").runs["failed"] == 0
    assert "runs: 1 running, 1 failed" in render(status)
    families = {f.name: f for f in QueueCollector(pool).collect()}
    gauge = {s.labels["status"]: s.value for s in families["pipeline_runs"].samples}
    assert gauge == {"running": 1, "waiting": 0, "done": 0, "failed": 1, "cancelled": 0}


def test_a_day_dropped_whole_takes_its_runs_rows(conn: Conn) -> None:
    from tests.support.history import finish, make_past_days

    make_past_days(conn, 3)
    old = enqueue(conn, "split", {"pages": 1})
    [(child,)] = conn.execute(
        "INSERT INTO pipeline.active_jobs (type, parent_id, root_id) VALUES ('page', %s, %s)"
        " RETURNING id",
        (old, old),
    ).fetchall()
    recent = enqueue(conn, "split", {"pages": 1})
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, parent_id, root_id) VALUES ('page', %s, %s)",
        (recent, recent),
    )
    finish(conn, [old, child], ago="2 days")
    assert run_row(conn, old) == ("done", 0, 2, 0, 0, None, None, True)

    report = prune(conn, older_than_s=86_400)

    assert report.jobs == 2
    assert run_row(conn, old) is None
    assert run_row(conn, recent) == ("running", 2, 0, 0, 0, None, None, False)


def test_concurrent_finishers_of_one_fan_out_count_every_page_once(
    conn: Conn, pool: ConnectionPool
) -> None:
    import threading

    store = JobStore(pool)
    root, _ = fan_out_root(conn, store, 60)
    pages = store.claim(["page"], 100, WORKER)
    start = threading.Barrier(6)

    def finish_share(share: list[ClaimedJob]) -> None:
        start.wait()
        for page in share:
            store.complete([page.fence])

    threads = [threading.Thread(target=finish_share, args=(pages[i::6],)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # 60 pages and the root done, the join's assemble queued: exactly once each.
    assert run_row(conn, root) == ("running", 1, 61, 0, 0, None, None, False)


def test_a_job_that_failed_alone_blocks_the_then_stage_its_workers_recorded(
    conn: Conn, pool: ConnectionPool
) -> None:
    conn.execute(
        "INSERT INTO pipeline.stages (name, version, then_stage, max_attempts, lease_seconds,"
        " priority, recorded_by, hostname) VALUES ('assemble', 'v1', 'publish', 1, 30, 0, %s,"
        " 'test')",
        (WORKER,),
    )
    job = enqueue(conn, "assemble", {"pages": 1})
    store = JobStore(pool)
    [claimed] = store.claim(["assemble"], 1, WORKER)
    assert store.fail(claimed, "no pages")

    run = read_run(conn, job, None)

    assert run is not None
    assert (run.status, run.blocked_job_id, run.blocked_reason) == ("failed", job, "no pages")
    assert [(b.stage, b.after, b.fan_out) for b in run.blocked_steps] == [("publish", job, False)]


def test_the_runs_list_reads_an_index_in_order_among_many_runs(conn: Conn) -> None:
    from pg_pipeline.queries import Q

    conn.execute(
        "INSERT INTO pipeline.runs (run_id, tenant_id, status, active, done, failed,"
        " created_at) SELECT g, 't' || g % 50, CASE WHEN g % 1000 = 0 THEN 'failed'"
        " ELSE 'done' END, 0, 2, (g % 1000 = 0)::int, now() FROM generate_series(1, 200000) g"
    )
    # A queued backlog and a few jobs waiting alone, which the list merges in by jobs_waiting.
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, tenant_id, status) SELECT 'page', 't' || g % 50,"
        " CASE WHEN g % 5000 = 0 THEN 'waiting' ELSE 'queued' END"
        " FROM generate_series(1, 50000) g"
    )
    conn.execute("ANALYZE pipeline.runs, pipeline.active_jobs")
    base = {"tenant": None, "status": None, "before": None, "limit": 30}
    # A tenant of 2% of the runs may be read down the primary key too: 1,500 rows for 30.
    for params, indexes in [
        (base, ["runs_pkey"]),
        (base | {"status": "failed"}, ["runs_status"]),
        (base | {"status": "waiting"}, ["runs_status"]),
        (base | {"tenant": "t7"}, ["runs_tenant", "runs_pkey"]),
        (base | {"before": 100_000}, ["runs_pkey"]),
    ]:
        rows = conn.execute("EXPLAIN " + Q["runs_list"], params).fetchall()  # type: ignore[operator]
        plan = "\n".join(str(r[0]) for r in rows)
        assert "Seq Scan on runs" not in plan, (params, plan)
        assert any(f"{index} on runs" in plan for index in indexes), (params, plan)
        assert "Seq Scan on active_jobs" not in plan, (params, plan)
        if params["status"] in (None, "waiting"):
            assert "jobs_waiting on active_jobs" in plan, (params, plan)


def waiting_alone(conn: Conn, tenant: str | None = "acme") -> int:
    """A root job without descendants, waiting (as a single approval job waits)."""
    [(job,)] = conn.execute(
        "INSERT INTO pipeline.active_jobs (type, tenant_id, status) VALUES ('approve', %s,"
        " 'waiting') RETURNING id",
        (tenant,),
    ).fetchall()
    return int(job)


def two_job_run(conn: Conn, tenant: str | None = "acme", *, waiting: bool = False) -> int:
    """A root and its child, queued or (waiting) both waiting: a run with a runs row."""
    [(root,)] = conn.execute(
        "INSERT INTO pipeline.active_jobs (type, tenant_id) VALUES ('split', %s) RETURNING id",
        (tenant,),
    ).fetchall()
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, tenant_id, parent_id, root_id)"
        " VALUES ('page', %s, %s, %s)",
        (tenant, root, root),
    )
    if waiting:
        conn.execute(
            "UPDATE pipeline.active_jobs SET status = 'waiting' WHERE id = %s OR root_id = %s",
            (root, root),
        )
    return int(root)


def listed(conn: Conn, tenant: str | None = None, **kw: Any) -> list[tuple[int, str]]:
    return [(r.id, r.status) for r in list_runs(conn, tenant, kw.pop("before", None), **kw)]


def test_a_job_waiting_alone_is_a_waiting_run_in_the_list(conn: Conn) -> None:
    run = two_job_run(conn)
    alone = waiting_alone(conn)
    enqueue(conn, "split", {"pages": 1})  # a queued job alone: every standalone job, not listed
    # A root that waits after enqueueing a child has a runs row: listed once, from it.
    root_waits = two_job_run(conn)
    conn.execute("UPDATE pipeline.active_jobs SET status = 'waiting' WHERE id = %s", (root_waits,))

    assert listed(conn) == [(root_waits, "running"), (alone, "waiting"), (run, "running")]
    assert listed(conn, status="waiting") == [(alone, "waiting")]
    assert listed(conn, status="running") == [(root_waits, "running"), (run, "running")]
    assert listed(conn, status="done") == []
    [row] = list_runs(conn, None, None, status="waiting")
    assert (row.type, row.tenant_id, row.finished_at, row.blocked_job_id) == (
        "approve",
        "acme",
        None,
        None,
    )
    assert (row.jobs, row.active, row.done, row.failed, row.cancelled) == (1, 1, 0, 0, 0)
    # Its run, shown, says waiting too (a job alone: the run is the job).
    shown = read_run(conn, alone, None)
    assert shown is not None and shown.status == "waiting"


def test_the_runs_list_pages_through_runs_and_jobs_waiting_alone_newest_first(
    conn: Conn,
) -> None:
    made = [
        (two_job_run(conn), "running"),
        (waiting_alone(conn), "waiting"),
        (two_job_run(conn, waiting=True), "waiting"),
        (waiting_alone(conn), "waiting"),
        (waiting_alone(conn), "waiting"),
        (two_job_run(conn), "running"),
        (waiting_alone(conn), "waiting"),
    ]
    newest_first = sorted(made, reverse=True)
    for status in (None, "waiting"):
        expected = [m for m in newest_first if status in (None, m[1])]
        pages: list[list[tuple[int, str]]] = []
        before = None
        while page := listed(conn, status=status, before=before, limit=2):
            pages.append(page)
            before = page[-1][0]
        assert [len(p) for p in pages][:-1] == [2] * (len(pages) - 1), (status, pages)
        assert [row for p in pages for row in p] == expected, status


def test_jobs_waiting_alone_are_listed_to_their_tenant_only(conn: Conn) -> None:
    acme = waiting_alone(conn, "acme")
    globex = waiting_alone(conn, "globex")
    untenanted = waiting_alone(conn, None)

    assert listed(conn, "acme") == [(acme, "waiting")]
    assert listed(conn, "globex", status="waiting") == [(globex, "waiting")]
    assert listed(conn) == [(untenanted, "waiting"), (globex, "waiting"), (acme, "waiting")]
    assert read_run(conn, acme, "globex") is None
