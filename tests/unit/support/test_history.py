# ruff: noqa: E501  (plans are quoted as PostgreSQL prints them, a node a line)
"""The plan tests' judge of sequential scans: a scan is big by the rows it reads and does not
want, whatever the time of day puts in today's day of the history."""

from __future__ import annotations

from tests.support.history import big_seq_scans

# Plans as PostgreSQL 18 prints them (EXPLAIN ANALYZE, text).
TODAY_INSIDE_THE_WINDOW = """Limit  (cost=0..9 rows=50) (actual time=6..7 rows=50.00 loops=1)
  ->  Append  (cost=0..9 rows=3600) (actual time=0.1..5.0 rows=3600.00 loops=1)
        ->  Bitmap Heap Scan on job_history_20261203  (cost=0..9 rows=1800) (actual time=0.1..2.0 rows=1800.00 loops=1)
              Recheck Cond: (created_at >= (now() - '01:00:00'::interval))
        ->  Seq Scan on job_history_20261204  (cost=0..9 rows=1800) (actual time=0.01..0.5 rows=1800.00 loops=1)
              Filter: (created_at >= (now() - '01:00:00'::interval))"""

A_DAY_READ_FOR_A_FEW_ROWS = """Limit  (cost=0..9 rows=50) (actual time=6..7 rows=50.00 loops=1)
  ->  Seq Scan on job_history_20261202  (cost=0..9 rows=50) (actual time=0.01..9.5 rows=50.00 loops=1)
        Filter: (tenant_id = 't7'::text)
        Rows Removed by Filter: 86350"""

A_LOOP_THROWING_AWAY_A_LITTLE_EACH_TIME = """Nested Loop  (cost=0..9 rows=10) (actual time=0.1..1.0 rows=10.00 loops=1)
  ->  Seq Scan on active_jobs j  (cost=0..9 rows=1) (actual time=0.01..0.1 rows=1.00 loops=10)
        Filter: (id = x.id)
        Rows Removed by Filter: 200"""

ESTIMATED_ONLY = """Seq Scan on active_jobs  (cost=0..9 rows=5000)
  Filter: (status = 'queued'::text)"""


def test_a_day_whose_rows_are_all_wanted_is_not_a_big_scan() -> None:
    assert big_seq_scans(TODAY_INSIDE_THE_WINDOW) == []


def test_a_day_read_whole_for_a_few_of_its_rows_is_a_big_scan() -> None:
    assert big_seq_scans(A_DAY_READ_FOR_A_FEW_ROWS) == ["job_history_20261202"]


def test_rows_thrown_away_count_over_every_loop() -> None:
    assert big_seq_scans(A_LOOP_THROWING_AWAY_A_LITTLE_EACH_TIME) == ["active_jobs"]


def test_a_plan_not_run_is_judged_by_the_rows_expected() -> None:
    assert big_seq_scans(ESTIMATED_ONLY) == ["active_jobs"]
    assert big_seq_scans(ESTIMATED_ONLY.replace("rows=5000", "rows=500")) == []
