"""The claim must stay an index lookup however many finished rows pile up."""

from __future__ import annotations

import re
import uuid
from dataclasses import replace
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pg_pipeline.admin.jobs import JobQuery, page_jobs
from pg_pipeline.history import drop_old_rollups
from pg_pipeline.queries import Q
from tests.support.history import (
    INDEX,
    big_seq_scans,
    make_past_days,
    pages_read,
    with_finished_span,
)
from tests.support.pg import prepared_statements
from tests.support.plans import nested_plans

CLAIM_PARAMS = {
    "types": ["noop"],
    "limit": 10,
    "worker_id": uuid.UUID(int=1),
    "cap_stages": ["noop"],
    "caps": [2],
}


#: jobs_list's parameters with no filter set.
LIST_ANY = {
    **{k: None for k in ("status", "stage", "tenant", "since_s", "since", "until")},
    **{"search": None, "before": None, "after": None, "limit": 51},
}


def jobs_list_plan(conn: psycopg.Connection[Any], filters: dict[str, Any]) -> str:
    """jobs_list's plan, run (EXPLAIN ANALYZE, BUFFERS), for `filters` as the jobs pages
    pass them: with the history's span of finish times."""
    return "\n".join(
        str(row[0])
        for row in conn.execute(
            "EXPLAIN (ANALYZE, BUFFERS) " + Q["jobs_list"],  # type: ignore[operator]
            with_finished_span(conn, LIST_ANY | filters),
        )
    )


def every_page(conn: psycopg.Connection[Any], query: JobQuery) -> list[int]:
    """The ids of every page of `query`, by the "older" links from the first."""
    seen: list[int] = []
    while True:
        found = page_jobs(conn, query)
        seen += [row.id for row in found.rows]
        if found.older is None:
            return seen
        query = replace(query, before=found.older)


def test_claim_uses_the_partial_index_with_a_million_finished_rows(
    conn: psycopg.Connection[Any],
) -> None:
    conn.execute(
        """
        INSERT INTO pipeline.job_history (type, payload, status, attempts, finished_at, tenant_id)
        SELECT 'noop', '{}'::jsonb, (ARRAY['done', 'failed', 'cancelled'])[1 + g % 3], 1, now(),
               CASE WHEN g % 2 = 0 THEN 't' || (g % 10) END
        FROM generate_series(1, 1000000) AS g
        """
    )
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, payload) SELECT 'noop', '{}' FROM "
        "generate_series(1, 50)"
    )
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, payload, tenant_id) "
        "SELECT 'noop', '{}', 't' || (g % 3) FROM generate_series(1, 50) AS g"
    )
    conn.execute("ANALYZE pipeline.active_jobs, pipeline.job_history")
    # Stages with nothing queued beside one with work: the claim's skip over tenants must seek
    # in jobs_ready, never walk another index over every tenanted row.
    params = {**CLAIM_PARAMS, "types": ["noop", "idle_a", "idle_b"]}
    plan = nested_plans(conn, Q["claim"], params, runs=8)
    assert "jobs_ready" in plan, plan
    assert not big_seq_scans(plan), plan
    scans = set(re.findall(r"Scan using (\w+) on active_jobs", plan))
    assert scans <= {"jobs_ready", "jobs_ready_untenanted", "active_jobs_pkey"}, scans
    assert "job_history" not in plan, "the claim reads the hot table alone"
    # Each pick starts at its group's head: the bound is a condition of the index scan, so the
    # entries of jobs taken since the last vacuum, in front of the head, are not walked again.
    heads = re.findall(r"(Index Cond|Filter): .*ROW\(run_after, id\) >= ROW", plan)
    assert heads and set(heads) == {"Index Cond"}, plan
    # The group selection is a SQL function the planner inlines into the claim's statement, where
    # the plan above can see its scans; a SET option or VOLATILE on it would hide them in a call.
    assert "Function Scan on pipeline_claim_groups" not in plan, plan

    reclaim_plan = "\n".join(
        row[0]
        for row in conn.execute(
            "EXPLAIN " + Q["reclaim_expired"], {"limit": 100, "free_crashes": 3}
        )
    )
    # The hot table alone: the million finished rows are not in it any more, so any plan of it
    # costs the running jobs (the moves into the history insert, and read nothing there).
    assert not big_seq_scans(reclaim_plan), reclaim_plan
    assert "Scan on job_history" not in reclaim_plan, reclaim_plan

    # A run's progress (what `submit --wait` polls) reads the root and its descendants only.
    root = conn.execute("SELECT min(id) FROM pipeline.jobs").fetchone()
    progress_plan = "\n".join(
        row[0]
        for row in conn.execute("EXPLAIN " + Q["run_progress"], {"root_id": root[0] if root else 0})
    )
    assert INDEX["jobs_run"] in progress_plan, progress_plan
    assert not big_seq_scans(progress_plan), progress_plan

    # Fenced writes while statistics still say nothing runs: they look the ids up by primary
    # key, planned for the arrays in hand or prepared (generic), never walking jobs_running.
    fences = conn.execute(
        "UPDATE pipeline.active_jobs SET status = 'running', claims = 1, leased_until = now() + "
        "interval '1h' "
        "WHERE id IN (SELECT id FROM pipeline.jobs WHERE status = 'queued' ORDER BY id LIMIT 40) "
        "RETURNING id, claims"
    ).fetchall()
    fence = {"ids": [f[0] for f in fences], "claims": [f[1] for f in fences]}
    # what the attempts' rows take
    tried = {
        "started": None,
        "logs": None,
        "dropped": None,
        "wall_s": None,
        "cpu_s": None,
        "wall_us": None,
        "cpu_us": None,
        "usage": None,
    }
    one = {
        "id": fences[0][0],
        "claims": fences[0][1],
        "error": "x",
        "delay_s": 1,
        "refund": False,
        "outcome": "retried",
        **tried,
        "dropped": 0,
    }
    beat = {
        "worker_id": uuid.UUID(int=2),
        "hostname": "h",
        "pid": 1,
        "stages": [],
        "concurrency": 1,
        "versions": Jsonb({}),
    }
    for mode in ("force_custom_plan", "force_generic_plan"):
        conn.execute(f"SET plan_cache_mode = {mode}")  # type: ignore[arg-type]
        for name, params in (
            ("complete", {**fence, **tried}),
            ("heartbeat", {**fence, **beat}),
            ("unclaim", fence),
            ("release", {**fence, "free_releases": 3}),
            ("retry_later", one),
            ("fail", one),
        ):
            plan = "\n".join(row[0] for row in conn.execute("EXPLAIN " + Q[name], params))
            # (The hot table holds the 40 jobs alone: by primary key or read whole, never
            # through jobs_running.)
            assert "jobs_running" not in plan and not big_seq_scans(plan), (name, mode, plan)
    conn.execute("RESET plan_cache_mode")


def test_the_claim_seeks_tenants_in_jobs_ready_beside_a_big_queued_backlog(
    conn: psycopg.Connection[Any],
) -> None:
    # The shape that once fooled the planner: a tenant's big backlog, a few jobs of another,
    # and stages with nothing queued at all. Walking an index on tenant_id alone for those
    # stages reads every tenanted row, on every claim.
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, payload, tenant_id) "
        "SELECT 'noop', '{}', CASE WHEN g <= 50000 THEN 'a' ELSE 'b' END "
        "FROM generate_series(1, 53000) AS g"
    )
    conn.execute("ANALYZE pipeline.active_jobs, pipeline.job_history")
    types = ["noop", "idle_a", "idle_b", "idle_c"]
    for caps in ({"cap_stages": ["noop"], "caps": [2]}, {"cap_stages": [], "caps": []}):
        plan = nested_plans(conn, Q["claim"], {**CLAIM_PARAMS, "types": types, **caps}, runs=8)
        scans = set(re.findall(r"Scan using (\w+) on active_jobs", plan))
        assert scans <= {"jobs_ready", "jobs_ready_untenanted", "active_jobs_pkey"}, scans
        assert "Seq Scan on active_jobs" not in plan, plan


def test_stages_without_tenants_are_claimed_from_their_heads_without_the_group_selection(
    conn: psycopg.Connection[Any],
) -> None:
    # A big backlog of one stage, none of it a tenant's: the claim finds each stage's head, and
    # that no tenant's job is queued, by index probes, and picks from the head on.
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, payload) "
        "SELECT 'noop', '{}' FROM generate_series(1, 50000)"
    )
    conn.execute("ANALYZE pipeline.active_jobs")
    # A worker claims for every stage it runs: stages with nothing queued beside it.
    types = ["noop", "idle_a", "idle_b"]
    plan = nested_plans(conn, Q["claim"], {**CLAIM_PARAMS, "types": types}, runs=8)
    scans = set(re.findall(r"Scan using (\w+) on active_jobs", plan))
    assert scans <= {"jobs_ready", "jobs_ready_untenanted", "active_jobs_pkey"}, scans
    assert "Seq Scan on active_jobs" not in plan, plan
    # pipeline.claim_groups' skip over the tenants is a recursive query: not run here.
    assert "Recursive Union" not in plan, plan
    heads = re.findall(r"(Index Cond|Filter): .*ROW\(run_after, id\) >= ROW", plan)
    assert heads and set(heads) == {"Index Cond"}, plan


def test_a_claim_planned_on_a_near_empty_queue_takes_its_jobs_by_key_once_it_fills(
    conn: psycopg.Connection[Any],
) -> None:
    # The claim's plans are generic and kept for the connection, so its taking is planned by a
    # connection's first claim that takes a job: a worker's first job on a quiet queue, say. A
    # sequential scan planned then read the whole queue on every claim (20 ms a claim with
    # 20,000 jobs queued) until an ANALYZE replaced it.
    params = {**CLAIM_PARAMS, "cap_stages": [], "caps": []}
    conn.execute("INSERT INTO pipeline.active_jobs (type, payload) VALUES ('noop', '{}')")
    with conn.transaction(force_rollback=True):
        assert len(conn.execute(Q["claim"], params).fetchall()) == 1
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, payload) "
        "SELECT 'noop', '{}' FROM generate_series(1, 20000)"
    )
    plan = nested_plans(conn, Q["claim"], params)
    taking = plan[plan.index("Update on active_jobs") :]
    assert "Seq Scan" not in taking, plan
    assert re.search(r"(Index Scan using|Bitmap Index Scan on) active_jobs_pkey", taking), plan


def test_a_claim_planned_on_a_queue_vacuumed_empty_seeks_its_tenants_by_index_once_it_fills(
    conn: psycopg.Connection[Any],
) -> None:
    # A queue drained to nothing, then vacuumed: VACUUM cuts the heap to no pages and leaves
    # reltuples at 0, so the planner costs every scan of the table at nothing. A worker's idle
    # claim re-plans then (the vacuum's pg_class update invalidates its plans) and keeps the
    # generic plan for its connection: the untenanted probe and each tenant's skip probe a
    # sequential scan and sort of the whole queue, 50-140 ms a claim once 30,000 jobs arrive,
    # until the next ANALYZE (benchmarks.tenants' 0.18 ms of PostgreSQL CPU a job). Hence
    # enable_seqscan off for the whole claim (sql/functions/claim_deal.sql).
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, payload, tenant_id) "
        "SELECT 'noop', '{}', 't' || g % 10 FROM generate_series(1, 2000) AS g"
    )
    conn.execute("DELETE FROM pipeline.active_jobs")
    conn.execute("VACUUM ANALYZE pipeline.active_jobs")
    params = {**CLAIM_PARAMS, "cap_stages": [], "caps": []}
    with conn.transaction(force_rollback=True):
        assert conn.execute(Q["claim"], params).fetchall() == []
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, payload, tenant_id) "
        "SELECT 'noop', '{}', 't' || g % 10 FROM generate_series(1, 20000) AS g"
    )
    plan = nested_plans(conn, Q["claim"], params)
    assert "Seq Scan on active_jobs" not in plan, plan


def running_among_stale_statistics(
    conn: psycopg.Connection[Any], analyzed: int
) -> list[tuple[int, int]]:
    """200 running jobs (their fences) among 5,000, of which the statistics saw `analyzed`,
    all queued: the hot table as a drain leaves it between two autovacuum analyses."""
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, payload) "
        "SELECT 'noop', '{}' FROM generate_series(1, %s)",
        (analyzed,),
    )
    conn.execute("ANALYZE pipeline.active_jobs")
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, payload) "
        "SELECT 'noop', '{}' FROM generate_series(1, %s)",
        (5000 - analyzed,),
    )
    return conn.execute(
        "UPDATE pipeline.active_jobs SET status = 'running', claims = 1, leased_until = now() + "
        "interval '1h' "
        "WHERE id IN (SELECT id FROM pipeline.active_jobs ORDER BY id LIMIT 200) "
        "RETURNING id, claims"
    ).fetchall()


@pytest.mark.parametrize("analyzed", [5000, 0], ids=["all-queued", "empty"])
def test_the_acknowledgement_reads_its_jobs_by_key_whatever_the_statistics_say(
    conn: psycopg.Connection[Any], analyzed: int
) -> None:
    # The hot table as a drain leaves it between two autovacuum analyses: a few thousand jobs,
    # which the statistics say are all queued (or that the table is empty), and a batch of them
    # running. A join of the table with the batch's arrays was planned as a scan of the whole
    # table (joined to every job of the batch, or hashed), on every acknowledgement.
    fences = running_among_stale_statistics(conn, analyzed)
    fences.sort()
    params = {
        "ids": [f[0] for f in fences],
        "claims": [f[1] for f in fences],
        "started": None,
        "logs": None,
        "dropped": None,
        "wall_us": None,
        "cpu_us": None,
        "usage": None,
    }
    for mode in ("force_custom_plan", "force_generic_plan"):
        conn.execute(f"SET plan_cache_mode = {mode}")  # type: ignore[arg-type]
        plan = nested_plans(conn, Q["acknowledge"], params)
        deleting = plan[plan.index("Delete on active_jobs") : plan.index("Insert on job_history")]
        # The DELETE reads its rows by the primary key, and nothing else: no join.
        assert "Seq Scan" not in deleting, (mode, plan)
        by_key = r"(Index Scan using|Bitmap Index Scan on) active_jobs_pkey"
        assert re.search(by_key, deleting), (mode, plan)
        assert "Join" not in deleting and "Nested Loop" not in deleting, (mode, plan)
        plan = nested_plans(conn, Q["acknowledge_skipping"], params)
        assert "Seq Scan on active_jobs" not in plan, (mode, plan)
        assert "Index Scan using active_jobs_pkey on active_jobs" in plan, (mode, plan)
        # The DELETE reads each row the lock found by its ctid, not by the key again.
        assert "Tid Scan on active_jobs" in plan, (mode, plan)
    conn.execute("RESET plan_cache_mode")


@pytest.mark.parametrize("analyzed", [5000, 0], ids=["all-queued", "empty"])
def test_the_heartbeat_reads_its_jobs_by_key_whatever_the_statistics_say(
    conn: psycopg.Connection[Any], analyzed: int
) -> None:
    # As the acknowledgement's test above: planned on statistics that say the hot table is
    # empty, or that its jobs are all queued, joins of the table with the held jobs scanned the
    # whole table, once for each held job.
    fences = running_among_stale_statistics(conn, analyzed)
    params = {
        "worker_id": uuid.UUID(int=1),
        "hostname": "host",
        "pid": 1,
        "stages": ["noop"],
        "concurrency": 8,
        "versions": Jsonb({}),
        "ids": [f[0] for f in fences],
        "claims": [f[1] for f in fences],
    }
    for mode in ("force_custom_plan", "force_generic_plan"):
        conn.execute(f"SET plan_cache_mode = {mode}")  # type: ignore[arg-type]
        plan = nested_plans(conn, Q["heartbeat"], params)
        assert "Seq Scan on active_jobs" not in plan, (mode, plan)
        assert "Index Scan using active_jobs_pkey on active_jobs" in plan, (mode, plan)
        # The UPDATE finds each row the lock found by its ctid, not by the key again.
        assert "Tid Scan on active_jobs" in plan, (mode, plan)
    conn.execute("RESET plan_cache_mode")


@pytest.mark.parametrize("analyzed", [5000, 0], ids=["all-queued", "empty"])
def test_still_held_reads_its_jobs_by_key_whatever_the_statistics_say(
    conn: psycopg.Connection[Any], analyzed: int
) -> None:
    # As the heartbeat's: a join of the table with the arrays hashed a scan of the whole table.
    fences = running_among_stale_statistics(conn, analyzed)
    params = {"ids": [f[0] for f in fences], "claims": [f[1] for f in fences]}
    for mode in ("force_custom_plan", "force_generic_plan"):
        conn.execute(f"SET plan_cache_mode = {mode}")  # type: ignore[arg-type]
        plan = nested_plans(conn, Q["still_held"], params)
        assert "Seq Scan on active_jobs" not in plan, (mode, plan)
        assert "Index Scan using active_jobs_pkey on active_jobs" in plan, (mode, plan)
        assert "Hash" not in plan, (mode, plan)
    conn.execute("RESET plan_cache_mode")


def cancelled_among_stale_statistics(
    conn: psycopg.Connection[Any], analyzed: int
) -> tuple[list[str], list[tuple[int, int]]]:
    """Four days of the history, 5,000 finished jobs each (one in 25 cancelled), of which the
    statistics saw `analyzed` a day: each day as autovacuum last analyzed it, today's early
    on. The days that hold jobs, and the fences of 200 of today's jobs, cancelled or not."""

    def finished(jobs: int) -> None:
        conn.execute(
            "INSERT INTO pipeline.job_history (type, payload, status, claims, finished_at) "
            "SELECT 'noop', '{}', CASE WHEN g %% 25 = 0 THEN 'cancelled' ELSE 'done' END, 1, "
            "now() - make_interval(days => d) "
            "FROM generate_series(0, 3) AS d, generate_series(1, %s) AS g",
            (jobs,),
        )

    make_past_days(conn, 3)
    finished(analyzed)
    conn.execute("ANALYZE pipeline.job_history")
    finished(5000 - analyzed)
    days = [
        str(row[0])
        for row in conn.execute(
            "SELECT DISTINCT c.relname FROM pipeline.job_history AS h "
            "JOIN pg_class AS c ON c.oid = h.tableoid"
        )
    ]
    fences = conn.execute(
        "SELECT id, claims FROM pipeline.job_history ORDER BY finished_at DESC, id LIMIT 200"
    ).fetchall()
    return days, [(f[0], f[1]) for f in fences]


@pytest.mark.parametrize("analyzed", [5000, 0], ids=["all", "empty"])
def test_cancel_hints_are_read_by_id_whatever_the_statistics_say(
    conn: psycopg.Connection[Any], analyzed: int
) -> None:
    # A join of pipeline.jobs with the hints' arrays followed the statistics: on days analyzed
    # while few of their jobs were cancelled, it read every failed and cancelled job of every
    # day into a hash (of 100 M rows, say, a million), for a hint or two.
    days, fences = cancelled_among_stale_statistics(conn, analyzed)
    assert len(days) == 4, days
    params = {"ids": [f[0] for f in fences], "claims": [f[1] for f in fences]}
    for mode in ("force_custom_plan", "force_generic_plan"):
        conn.execute(f"SET plan_cache_mode = {mode}")  # type: ignore[arg-type]
        plan = nested_plans(conn, Q["cancelled_claims"], params)
        # Each day that holds jobs is probed by id, by one of its indexes (the days ahead,
        # empty, may be read whole: nothing); the hot table cannot hold a cancelled job.
        for day in days:
            probe = rf"Index Scan using \w+ on {day} \w+ .*\n\s*Index Cond: \(id = c\.id\)"
            assert re.search(probe, plan), (mode, day, plan)
            assert f"Seq Scan on {day}" not in plan, (mode, plan)
        assert "Hash" not in plan, (mode, plan)
        assert "active_jobs" not in plan, (mode, plan)
    conn.execute("RESET plan_cache_mode")


def test_the_rollups_fold_reads_the_unfolded_shards_alone(conn: psycopg.Connection[Any]) -> None:
    # Two days of rollups folded already (shard 0), as a million finished jobs a day leave
    # them, and a few minutes of other shards to fold. The fold runs in every worker at its
    # start: it read every row of the two days to find the unfolded ones, half a second of
    # Postgres CPU beside the jobs the worker started to run (benchmarks/scale.py).
    minutes = "generate_series(date_trunc('minute', now()) - interval '2 days', now(), '1 minute')"
    conn.execute(
        "INSERT INTO pipeline.finished_by_minute "
        "(minute, stage, status, shard, jobs, attempts, timed) "
        f"SELECT m, s, st, 0, 1, 1, 1 FROM {minutes} AS m, "
        "unnest(ARRAY['ocr', 'extract', 'classify', 'upload']) AS s, "
        "unnest(ARRAY['done', 'failed']) AS st"
    )
    conn.execute(
        "INSERT INTO pipeline.tenant_finished_by_minute "
        "(tenant_id, minute, stage, status, shard, jobs, attempts, timed) "
        f"SELECT 't' || t, m, 'ocr', 'done', 0, 1, 1, 1 FROM {minutes} AS m, "
        "generate_series(1, 20) AS t"
    )
    for table, key in (("finished_by_minute", ""), ("tenant_finished_by_minute", "'t1', ")):
        conn.execute(
            f"INSERT INTO pipeline.{table} "  # type: ignore[arg-type]
            f"({'tenant_id, ' if key else ''}minute, stage, status, shard, jobs, attempts, timed) "
            f"SELECT {key}m, 'ocr', 'done', 3, 1, 1, 1 FROM generate_series("
            "date_trunc('minute', now()) - interval '3 hours', now() - interval '2 hours', "
            "'1 minute') AS m"
        )
    conn.execute("ANALYZE pipeline.finished_by_minute, pipeline.tenant_finished_by_minute")
    plan = "\n".join(
        str(row[0]) for row in conn.execute("EXPLAIN " + Q["rollups_fold_shards"]).fetchall()
    )
    for table in ("finished_by_minute", "tenant_finished_by_minute"):
        assert re.search(rf"(using|on) {table}_unfolded\b", plan), plan
        assert f"Seq Scan on {table}" not in plan, plan


def test_a_jobs_list_by_stage_or_outcome_reads_only_the_days_that_may_hold_one(
    conn: psycopg.Connection[Any],
) -> None:
    # Half a million jobs over ten days, through the history as finishing statements write them
    # (the rollups count them), one in a hundred failed, none cancelled. One in ten is of a
    # stage retired a week ago, whole UTC days before that; the rest 'ocr'. The minutes over two
    # days old are dropped, folded into their days, as the Partitions service does. A filter by
    # stage or outcome walked every day's id index back until it had a page: for a stage or an
    # outcome no job has, the whole history.
    make_past_days(conn, 10)
    conn.execute(
        """
        INSERT INTO pipeline.job_history (type, payload, status, attempts, created_at,
                                          finished_at)
        SELECT CASE WHEN t < (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
                             - interval '7 days' AND g % 10 = 0
                    THEN 'retired' ELSE 'ocr' END,
               '{}', CASE WHEN g % 100 = 0 THEN 'failed' ELSE 'done' END, 1, t, t
        FROM generate_series(1, 500000) AS g,
             LATERAL (SELECT now() - (500000 - g) * interval '1.7 seconds') AS x(t)
        """
    )
    conn.execute(
        "INSERT INTO pipeline.finished_days VALUES ('retired', 'done', "
        "date_bin('1 day', now() - interval '100 days', timestamptz '2000-01-01 00:00+00'))"
    )
    assert drop_old_rollups(conn) > 0
    # A day retention dropped (no partition is that old) goes: it would widen every span.
    assert conn.execute(
        "SELECT count(*) FROM pipeline.finished_days WHERE day < now() - interval '20 days'"
    ).fetchone() == (0,)
    # Retention kept a row of a dropped day (its run lives on); a job of the retired stage is
    # queued again.
    conn.execute(
        "INSERT INTO pipeline.job_history_kept SELECT * FROM pipeline.job_history "
        "WHERE id = 1; UPDATE pipeline.job_history_kept SET type = 'kept', "
        "finished_at = now() - interval '40 days'"
    )
    [(queued,)] = conn.execute(
        "INSERT INTO pipeline.active_jobs (type, payload) VALUES ('retired', '{}') RETURNING id"
    ).fetchall()
    conn.execute(
        "VACUUM ANALYZE pipeline.active_jobs, pipeline.job_history, pipeline.finished_by_minute"
    )
    cases: list[dict[str, Any]] = [
        {"stage": "no such stage"},
        {"stage": "retired"},
        {"stage": "ocr", "status": "cancelled"},
        {"status": "cancelled"},
        {"stage": "kept"},
        {"stage": "no such stage", "after": 5},
        {"stage": "retired", "after": 5},
    ]
    for params in cases:
        plan = jobs_list_plan(conn, params)
        assert not big_seq_scans(plan), (params, plan)
        # A page's rows of the days that hold the stage: the walk read tens of thousands.
        assert pages_read(plan) < 500, (params, plan)

    # A stage of every day adds no bound: it would leave no day out.
    ocr = conn.execute(Q["jobs_finished_span"], {"stage": "ocr", "status": None}).fetchone()
    assert ocr == (None, None)

    # Every job of the filter, newest first, page after page, from the days folded, the
    # minutes, the kept rows and the hot table alike.
    cases_listed = [
        (JobQuery(stage="retired", status="failed", limit=100), "'retired', 'failed'"),
        (JobQuery(stage="retired", limit=2000), "'retired', NULL"),
        (JobQuery(stage="ocr", status="failed", limit=1000), "'ocr', 'failed'"),
        (JobQuery(stage="kept"), "'kept', NULL"),
    ]
    for query, filters in cases_listed:
        expected = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM pipeline.jobs WHERE type = %s AND status = coalesce(%s, status) "
                "ORDER BY id DESC",
                (query.stage, query.status),
            )
        ]
        assert every_page(conn, query) == expected, filters
        assert expected, filters
    first = page_jobs(conn, JobQuery(stage="retired", limit=5)).rows
    assert first[0].id == queued
    # Planned for its values every time: prepared (psycopg does on a statement's fifth run on a
    # connection), PostgreSQL settled on a generic plan that read every day.
    for _ in range(12):
        page_jobs(conn, JobQuery(stage="no such stage"))
        page_jobs(conn, JobQuery(stage="ocr", after=5))
    assert prepared_statements(conn, "last_error ILIKE") == 0


def test_a_jobs_list_by_stage_reads_a_page_whatever_the_other_stages_ran_since(
    conn: psycopg.Connection[Any],
) -> None:
    # 'extract' ran yesterday and this morning, a few thousand jobs, one in twenty failed and
    # one in ten a tenant's; 'late' ran yesterday alone; then 300,000 jobs of 'noop' finished
    # (newer ids, the last hour). The list by stage walked the id index back through the days
    # that may hold the stage, past every newer job of another: all the 'noop' ones.
    make_past_days(conn, 2)
    conn.execute(
        """
        INSERT INTO pipeline.job_history (type, tenant_id, payload, status, attempts,
                                          created_at, finished_at)
        SELECT CASE WHEN g <= 2000 AND g % 2 = 0 THEN 'late' ELSE 'extract' END,
               CASE WHEN g % 10 = 0 THEN 't1' END, '{}',
               CASE WHEN g % 20 = 1 THEN 'failed' ELSE 'done' END, 1, t, t
        FROM generate_series(1, 4000) AS g,
             LATERAL (SELECT CASE WHEN g <= 2000 THEN now() - interval '1 day'
                                  ELSE now() - interval '2 hours' END
                             + g * interval '1 millisecond') AS x(t)
        """
    )
    conn.execute(
        """
        INSERT INTO pipeline.job_history (type, payload, status, attempts, created_at,
                                          finished_at)
        SELECT 'noop', '{}', 'done', 1, t, t
        FROM generate_series(1, 300000) AS g,
             LATERAL (SELECT now() - interval '1 hour' + g * interval '10 milliseconds') AS x(t)
        """
    )
    conn.execute("VACUUM ANALYZE pipeline.active_jobs, pipeline.job_history")
    for params in (
        {"stage": "extract"},
        {"stage": "late"},
        {"stage": "extract", "status": "failed"},
        {"stage": "extract", "status": "done"},
        {"stage": "extract", "tenant": "t1"},
        {"stage": "late", "after": 5},
    ):
        plan = jobs_list_plan(conn, params)
        assert not big_seq_scans(plan), (params, plan)
        # A page's rows and their index entries: the walk read the 'noop' jobs' thousands.
        assert pages_read(plan) < 500, (params, plan)

    # Every job of the filter, newest first, page after page, none twice; and back from the
    # last page by the "newer" links.
    for stage, status, tenant in (
        ("extract", None, None),
        ("late", None, None),
        ("extract", "failed", None),
        ("extract", None, "t1"),
    ):
        expected = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM pipeline.jobs WHERE type = %s AND status = coalesce(%s, status) "
                "AND tenant_id IS NOT DISTINCT FROM coalesce(%s, tenant_id) ORDER BY id DESC",
                (stage, status, tenant),
            )
        ]
        query = JobQuery(stage=stage, status=status, tenant=tenant, limit=97)
        assert every_page(conn, query) == expected and expected, (stage, status, tenant)
        last = (len(expected) - 1) // 97 * 97  # where the last page starts
        page = page_jobs(conn, replace(query, before=expected[last - 1] if last else None))
        back = [row.id for row in page.rows]
        while page.newer is not None:
            page = page_jobs(conn, replace(query, after=page.newer))
            back = [row.id for row in page.rows] + back
        assert back == expected, (stage, status, tenant)


def test_the_statement_triggers_of_the_jobs_tables_keep_one_plan(
    conn: psycopg.Connection[Any],
) -> None:
    # They run once per statement that enqueues or finishes jobs: planned afresh on each of a
    # session's first five runs, they cost a fresh worker's acknowledger 0.75 ms a batch.
    rows = conn.execute(
        """
        SELECT t.tgrelid::regclass::text, p.proname,
               'plan_cache_mode=force_generic_plan' = ANY (coalesce(p.proconfig, '{}'))
        FROM pg_trigger AS t
        JOIN pg_proc AS p ON p.oid = t.tgfoid
        WHERE t.tgrelid IN ('pipeline.active_jobs'::regclass, 'pipeline.job_history'::regclass,
                            'pipeline.job_history_kept'::regclass)
          AND NOT t.tgisinternal
          AND t.tgtype & 1 = 0  -- FOR EACH STATEMENT
        """
    ).fetchall()
    assert len(rows) >= 8, rows
    assert [row for row in rows if not row[2]] == []
