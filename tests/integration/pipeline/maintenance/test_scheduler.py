"""Recurring schedules against real Postgres: the scheduler's run_once() driven with explicit
clocks, the sync of code-declared schedules, and schedulers racing each other."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool
from pydantic import BaseModel, ConfigDict

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import (
    Context,
    InvalidPayload,
    Registry,
    ScheduleRegistry,
    UnknownStage,
    schedule,
    stage,
    sync_schedules,
)
from pg_pipeline.db import make_pool
from pg_pipeline.maintenance import Fired, Scheduler
from pg_pipeline.schedules import (
    Schedule,
    ScheduleOwnedByCode,
    fire_key,
    list_schedules,
    pause_schedule,
    remove_schedule,
    resume_schedule,
    save_schedule,
)
from tests.support.apps.jobs_app import Nothing

Conn = psycopg.Connection[Any]
T0 = datetime(2026, 6, 1, 10, 2, tzinfo=UTC)


def at(**delta: float) -> datetime:
    return T0 + timedelta(**delta)


def row(conn: Conn, name: str) -> dict[str, Any]:
    cur = conn.execute("SELECT * FROM pipeline.schedules WHERE name = %s", (name,))
    found = cur.fetchone()
    assert found is not None, f"no schedule {name}"
    return dict(zip([d.name for d in cur.description or []], found, strict=True))


def jobs(conn: Conn) -> list[tuple[str, str | None, datetime, Any, str | None]]:
    """(type, dedup_key, run_after, payload, tenant_id) of every job, in fire-time order."""
    return [
        (t, k, r, p, tenant)
        for t, k, r, p, tenant in conn.execute(
            "SELECT type, dedup_key, run_after, payload, tenant_id FROM pipeline.jobs ORDER BY "
            "run_after, id"
        ).fetchall()
    ]


def add(conn: Conn, name: str, now: datetime = T0, **kwargs: Any) -> Schedule:
    item = Schedule.define(name, stage=kwargs.pop("stage", "noop"), **kwargs)
    save_schedule(conn, item, now=now)
    return item


def fires(result: list[Fired]) -> list[tuple[str, datetime]]:
    return [(f.schedule, f.fire_at) for f in result]


# -- firing -------------------------------------------------------------------------------------


def test_cron_schedule_enqueues_one_job_per_fire_time_and_advances(
    conn: Conn, pool: ConnectionPool
) -> None:
    add(conn, "five", cron="*/5 * * * *", payload={"n": 3}, tenant_id="acme")
    assert row(conn, "five")["next_fire_at"] == at(minutes=3)
    scheduler = Scheduler(pool)
    assert scheduler.run_once(now=at(minutes=2, seconds=59)) == []
    first = scheduler.run_once(now=at(minutes=3))
    assert fires(first) == [("five", at(minutes=3))]
    assert scheduler.run_once(now=at(minutes=3, seconds=30)) == []
    assert fires(scheduler.run_once(now=at(minutes=8))) == [("five", at(minutes=8))]
    assert jobs(conn) == [
        ("noop", fire_key("five", at(minutes=3)), at(minutes=3), {"n": 3}, "acme"),
        ("noop", fire_key("five", at(minutes=8)), at(minutes=8), {"n": 3}, "acme"),
    ]
    state = row(conn, "five")
    assert state["next_fire_at"] == at(minutes=13)
    assert state["last_fired_at"] == at(minutes=8) and state["last_error"] is None
    assert state["last_job_id"] not in (None, first[0].job_id)


def test_every_schedule_fires_each_period_and_keeps_its_phase(
    conn: Conn, pool: ConnectionPool
) -> None:
    add(conn, "ninety", every=90)
    scheduler = Scheduler(pool)
    assert fires(scheduler.run_once(now=at(seconds=90))) == [("ninety", at(seconds=90))]
    # A late tick fires the time that passed, and the next one stays on the 90 s grid.
    assert fires(scheduler.run_once(now=at(seconds=200))) == [("ninety", at(seconds=180))]
    assert row(conn, "ninety")["next_fire_at"] == at(seconds=270)


def test_sub_minute_every_fires_every_few_seconds(conn: Conn, pool: ConnectionPool) -> None:
    add(conn, "fast", every=2.5)
    scheduler = Scheduler(pool)
    fired = [f for tick in range(1, 9) for f in scheduler.run_once(now=at(seconds=tick * 1.25))]
    assert [f.fire_at for f in fired] == [at(seconds=2.5 * k) for k in range(1, 5)]


def test_nightly_cron_in_berlin_fires_at_local_two_across_the_spring_dst_change(
    conn: Conn, pool: ConnectionPool
) -> None:
    start = datetime(2026, 3, 27, 12, tzinfo=UTC)
    add(conn, "nightly", now=start, cron="0 2 * * *", timezone="Europe/Berlin")
    scheduler = Scheduler(pool)
    fired = [f for day in range(4) for f in scheduler.run_once(now=start + timedelta(days=day + 1))]
    # 02:00 CET is 01:00 UTC; on 29 March 02:00 does not exist and the job runs at the jump
    # (03:00 CEST, still 01:00 UTC); from then on 02:00 CEST is 00:00 UTC.
    assert [f.fire_at for f in fired] == [
        datetime(2026, 3, 28, 1, tzinfo=UTC),
        datetime(2026, 3, 29, 1, tzinfo=UTC),
        datetime(2026, 3, 30, 0, tzinfo=UTC),
        datetime(2026, 3, 31, 0, tzinfo=UTC),
    ]


def test_a_cron_time_repeated_by_the_autumn_dst_change_fires_once(
    conn: Conn, pool: ConnectionPool
) -> None:
    start = datetime(2026, 10, 24, 12, tzinfo=UTC)
    add(conn, "half-two", now=start, cron="30 2 * * *", timezone="Europe/Berlin")
    scheduler = Scheduler(pool)
    hourly = [start + timedelta(hours=h) for h in range(1, 48)]
    fired = [f for moment in hourly for f in scheduler.run_once(now=moment)]
    assert [f.fire_at for f in fired] == [
        datetime(2026, 10, 25, 0, 30, tzinfo=UTC),  # 02:30 CEST; 02:30 CET an hour later: no
        datetime(2026, 10, 26, 1, 30, tzinfo=UTC),  # 02:30 CET
    ]


def test_the_scheduled_job_is_the_stages_job_with_its_defaults(
    conn: Conn, pool: ConnectionPool
) -> None:
    add(conn, "nap", stage="nap", every=60, payload={"seconds": 0.1})
    (fired,) = Scheduler(pool).run_once(now=at(minutes=1))
    found = conn.execute(
        "SELECT type, status, max_attempts, lease_seconds FROM pipeline.jobs WHERE id = %s",
        (fired.job_id,),
    ).fetchone()
    assert found == ("nap", "queued", 5, 2)


def test_an_every_schedule_keeps_exact_periods_across_dst_whatever_the_session_timezone(
    conn: Conn, db_url: str
) -> None:
    # psycopg hands timestamptz back in the session's zone; periods must still be absolute.
    conn.execute("SELECT set_config('timezone', 'Europe/Berlin', false)")
    conn.execute("DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET timezone = %L', "
                 "current_database(), 'Europe/Berlin'); END $$")  # fmt: skip
    # 01:30 CEST on 25 October 2026; at 03:00 CEST the clocks go back to 02:00 CET.
    start = datetime(2026, 10, 24, 23, 30, tzinfo=UTC)
    add(conn, "hourly", now=start, every=3600)
    berlin_pool = make_pool(db_url, max_size=2, name="berlin")
    try:
        scheduler = Scheduler(berlin_pool)
        fired = [f for h in range(1, 6) for f in scheduler.run_once(now=start + timedelta(hours=h))]
    finally:
        berlin_pool.close()
    assert [f.fire_at for f in fired] == [start + timedelta(hours=h) for h in range(1, 6)]
    assert row(conn, "hourly")["next_fire_at"] == start + timedelta(hours=6)


# -- missed ticks -------------------------------------------------------------------------------


def test_missed_fire_times_run_the_latest_one_once_by_default(
    conn: Conn, pool: ConnectionPool
) -> None:
    add(conn, "minutely", every=60)
    add(conn, "hourly", cron="0 * * * *")
    scheduler = Scheduler(pool)
    # Every worker was down for five hours and a bit.
    fired = scheduler.run_once(now=at(hours=5, minutes=30))
    assert sorted(fires(fired)) == [
        ("hourly", datetime(2026, 6, 1, 15, tzinfo=UTC)),
        ("minutely", at(hours=5, minutes=30)),
    ]
    # Then the normal rhythm resumes.
    assert row(conn, "minutely")["next_fire_at"] == at(hours=5, minutes=31)
    assert fires(scheduler.run_once(now=at(hours=5, minutes=31))) == [
        ("minutely", at(hours=5, minutes=31))
    ]
    assert row(conn, "hourly")["next_fire_at"] == datetime(2026, 6, 1, 16, tzinfo=UTC)


def test_catch_up_replays_up_to_n_missed_fire_times_oldest_first(
    conn: Conn, pool: ConnectionPool
) -> None:
    add(conn, "three", every=60, catch_up=3)
    add(conn, "all", cron="0 * * * *", catch_up=20)
    fired = Scheduler(pool).run_once(now=at(minutes=10, seconds=5))
    assert [f.fire_at for f in fired if f.schedule == "three"] == [
        at(minutes=8),
        at(minutes=9),
        at(minutes=10),
    ]
    assert [f.fire_at for f in fired if f.schedule == "all"] == []  # 11:00 is not due yet
    fired = Scheduler(pool).run_once(now=datetime(2026, 6, 1, 14, 0, 1, tzinfo=UTC))
    assert [f.fire_at for f in fired if f.schedule == "all"] == [
        datetime(2026, 6, 1, h, tzinfo=UTC) for h in (11, 12, 13, 14)
    ]
    run_afters = [r for t, _, r, _, _ in jobs(conn) if t == "noop"]
    assert run_afters == sorted(run_afters)


# -- pause and resume ---------------------------------------------------------------------------


def test_a_paused_schedule_does_not_fire_and_resumes_from_the_next_fire_time(
    conn: Conn, pool: ConnectionPool
) -> None:
    add(conn, "minutely", every=60)
    scheduler = Scheduler(pool)
    assert pause_schedule(conn, "minutely")
    assert scheduler.run_once(now=at(minutes=5)) == []
    assert row(conn, "minutely")["paused"] is True
    # Fire times that passed during the pause are skipped, not caught up.
    assert resume_schedule(conn, "minutely", now=at(minutes=5, seconds=10)) == at(minutes=6)
    assert scheduler.run_once(now=at(minutes=5, seconds=30)) == []
    assert fires(scheduler.run_once(now=at(minutes=6))) == [("minutely", at(minutes=6))]
    # Resuming a running schedule changes nothing.
    assert resume_schedule(conn, "minutely", now=at(hours=1)) == at(minutes=7)
    assert not pause_schedule(conn, "nope") and resume_schedule(conn, "nope") is None


# -- exactly once -------------------------------------------------------------------------------


def test_three_schedulers_ticking_at_once_enqueue_exactly_one_job_per_fire_time(
    conn: Conn, pool: ConnectionPool
) -> None:
    names = [f"s{i}" for i in range(6)]
    for name in names[:3]:
        add(conn, name, every=1)
    for name in names[3:]:
        add(conn, name, cron="* * * * * *")  # every second, as a six-field cron
    steps = 25
    barrier = threading.Barrier(3)
    results: list[list[Fired]] = [[], [], []]
    errors: list[BaseException] = []

    def tick(me: int) -> None:
        scheduler = Scheduler(pool, batch=2)  # small batches: more transactions to interleave
        try:
            for step in range(1, steps + 1):
                barrier.wait(timeout=30)
                results[me].extend(scheduler.run_once(now=at(seconds=step)))
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=tick, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    every_fire = [(f.schedule, f.fire_at) for r in results for f in r]
    expected = {(name, at(seconds=s)) for name in names for s in range(1, steps + 1)}
    assert len(every_fire) == len(expected) and set(every_fire) == expected
    assert sorted((k, r) for _, k, r, _, _ in jobs(conn)) == sorted(
        (fire_key(name, when), when) for name, when in expected
    )
    # More than one scheduler did the work: the lock passes between them, it is not a leader.
    assert sum(1 for r in results if r) >= 2


def test_the_unique_key_rejects_a_forced_duplicate_fire(conn: Conn, pool: ConnectionPool) -> None:
    add(conn, "once", every=60)
    scheduler = Scheduler(pool)
    (fired,) = scheduler.run_once(now=at(minutes=1))
    # A second key for the same fire time, forced in by hand, is refused by pipeline.dedup_keys.
    with pytest.raises(psycopg.errors.UniqueViolation):
        conn.execute(
            "INSERT INTO pipeline.dedup_keys (type, dedup_key, job_id) VALUES ('noop', %s, 0)",
            (fire_key("once", at(minutes=1)),),
        )
    # A scheduler that sees the fire time as due again (its row rewound, as a lost update
    # would) enqueues nothing new either.
    conn.execute(
        "UPDATE pipeline.schedules SET next_fire_at = %s WHERE name = 'once'", (at(minutes=1),)
    )
    assert scheduler.run_once(now=at(minutes=1)) == []
    assert [k for _, k, _, _, _ in jobs(conn)] == [fire_key("once", at(minutes=1))]
    assert row(conn, "once")["next_fire_at"] == at(minutes=2)
    assert row(conn, "once")["last_job_id"] == fired.job_id


# -- what a scheduler leaves alone --------------------------------------------------------------


def test_a_scheduler_fires_only_schedules_of_stages_its_code_knows(
    conn: Conn, pool: ConnectionPool
) -> None:
    add(conn, "minutely", every=60)
    assert Scheduler(pool, registry=Registry()).run_once(now=at(minutes=1)) == []
    assert row(conn, "minutely")["next_fire_at"] == at(minutes=1)  # left for a worker that does
    assert len(Scheduler(pool).run_once(now=at(minutes=1))) == 1


class OldNothing(BaseModel):
    """noop's input as an older release had it: no field it does not know."""

    model_config = ConfigDict(extra="forbid")
    n: int = 0


def old_registry() -> Registry:
    """The stages of a worker one release behind, during a rolling deploy."""
    old = Registry()

    @stage("noop", registry=old)
    def old_noop(job: OldNothing, ctx: Context) -> None:
        return None

    return old


def test_a_worker_that_cannot_validate_a_due_payload_leaves_it_to_one_that_can(
    conn: Conn, pool: ConnectionPool
) -> None:
    add(conn, "reindex", every=60, payload={"n": 1, "mode": "fast"})
    assert Scheduler(pool, registry=old_registry()).run_once(now=at(minutes=1)) == []
    state = row(conn, "reindex")
    assert state["next_fire_at"] == at(minutes=1) and jobs(conn) == []  # still due
    assert "stays due for up to 300 s for another worker" in state["last_error"]
    assert "invalid payload for stage 'noop'" in state["last_error"]
    # The new worker, a moment later, fires the fire time the old one left.
    fired = Scheduler(pool).run_once(now=at(minutes=1, seconds=1))
    assert fires(fired) == [("reindex", at(minutes=1))]
    assert row(conn, "reindex")["last_error"] is None


def test_a_due_payload_no_worker_can_validate_is_skipped_after_the_bound_and_says_why(
    conn: Conn, pool: ConnectionPool
) -> None:
    add(conn, "stale", every=60, payload={"n": 1})
    conn.execute("UPDATE pipeline.schedules SET payload = '{\"n\": \"many\"}' WHERE name = 'stale'")
    scheduler = Scheduler(pool, leave_for_others_s=120)
    for tick in (at(minutes=1), at(minutes=2), at(minutes=2, seconds=59)):
        assert scheduler.run_once(now=tick) == []
        assert row(conn, "stale")["next_fire_at"] == at(minutes=1)
    assert scheduler.run_once(now=at(minutes=3)) == []
    state = row(conn, "stale")
    assert state["next_fire_at"] == at(minutes=4) and jobs(conn) == []
    assert "no worker could fire it within 120 s" in state["last_error"]
    assert "invalid payload for stage 'noop'" in state["last_error"]
    assert list_schedules(conn)[0].last_error == state["last_error"]


UNLOADABLE = {
    # Written by a worker whose tzdata knows the zone, or whose cronsim reads the expression.
    "timezone": "UPDATE pipeline.schedules SET timezone = 'Mars/Olympus' WHERE name = 'a-alien'",
    "cron": "UPDATE pipeline.schedules SET cron = '61 * * * *' WHERE name = 'a-alien'",
}


@pytest.mark.parametrize("change", UNLOADABLE.values(), ids=UNLOADABLE.keys())
def test_a_schedule_this_worker_cannot_load_holds_back_no_other_and_records_why(
    conn: Conn, pool: ConnectionPool, change: str
) -> None:
    add(conn, "a-alien", cron="* * * * *")
    add(conn, "b-healthy", every=60)
    conn.execute(change)
    scheduler = Scheduler(pool, leave_for_others_s=150)
    for minute in (1, 2, 3):
        assert fires(scheduler.run_once(now=at(minutes=minute))) == [
            ("b-healthy", at(minutes=minute))
        ]
        assert row(conn, "a-alien")["next_fire_at"] == at(minutes=1)
        assert "stays due" in row(conn, "a-alien")["last_error"]
    assert fires(scheduler.run_once(now=at(minutes=4))) == [("b-healthy", at(minutes=4))]
    state = row(conn, "a-alien")
    assert "no worker could fire it within 150 s" in state["last_error"]
    assert ("Mars/Olympus" in state["last_error"]) or ("Bad minute" in state["last_error"])
    # Its next fire time cannot be read here: it is tried again after the same bound.
    assert state["next_fire_at"] == at(minutes=4, seconds=150)


def test_rows_left_for_another_worker_do_not_hide_the_due_rows_behind_them(
    conn: Conn, pool: ConnectionPool
) -> None:
    for name in ("a", "b", "c"):
        add(conn, name, cron="* * * * *")
    conn.execute("UPDATE pipeline.schedules SET timezone = 'Mars/Olympus'")
    add(conn, "d-healthy", every=60)
    # Batches of two: the three rows left due come first (fire time, then name) every time.
    fired = Scheduler(pool, batch=2).run_once(now=at(minutes=1))
    assert fires(fired) == [("d-healthy", at(minutes=1))]


def test_a_job_the_database_refuses_skips_that_fire_and_holds_back_no_other_schedule(
    conn: Conn, pool: ConnectionPool
) -> None:
    conn.execute(
        """
        CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'no jobs for tenant poison';
        END $$;
        CREATE TRIGGER refuse_poison BEFORE INSERT ON pipeline.active_jobs
            FOR EACH ROW WHEN (NEW.tenant_id = 'poison') EXECUTE FUNCTION refuse_poison();
        """
    )
    add(conn, "a-poisoned", every=60, tenant_id="poison")
    add(conn, "b-healthy", every=60)
    assert fires(Scheduler(pool).run_once(now=at(minutes=1))) == [("b-healthy", at(minutes=1))]
    state = row(conn, "a-poisoned")
    assert "the database refused the job: no jobs for tenant poison" in state["last_error"]
    assert state["next_fire_at"] == at(minutes=2)


# -- code-declared schedules --------------------------------------------------------------------


def test_sync_upserts_code_schedules_keeps_their_fire_times_and_their_pause(conn: Conn) -> None:
    code = ScheduleRegistry()
    schedule("report", stage="noop", cron="0 2 * * *", payload={"n": 1}, registry=code)
    schedule("tick", stage="noop", every=60, registry=code)
    result = sync_schedules(conn, code, now=T0)
    assert result.upserted == ["report", "tick"] and result.removed == []
    assert row(conn, "report")["source"] == "code"
    assert row(conn, "report")["next_fire_at"] == datetime(2026, 6, 2, 2, tzinfo=UTC)
    assert row(conn, "tick")["next_fire_at"] == at(minutes=1)
    pause_schedule(conn, "tick")

    # A restart an hour later with the same code: same fire times, still paused.
    sync_schedules(conn, code, now=at(hours=1))
    assert row(conn, "tick")["next_fire_at"] == at(minutes=1)
    assert row(conn, "tick")["paused"] is True

    # New code: a changed payload keeps the fire time; a changed timing starts afresh.
    changed = ScheduleRegistry()
    schedule("report", stage="noop", cron="0 2 * * *", payload={"n": 2}, registry=changed)
    schedule("tick", stage="noop", every=300, registry=changed)
    sync_schedules(conn, changed, now=at(hours=1))
    assert row(conn, "report")["payload"] == {"n": 2}
    assert row(conn, "report")["next_fire_at"] == datetime(2026, 6, 2, 2, tzinfo=UTC)
    assert row(conn, "tick")["next_fire_at"] == at(hours=1, minutes=5)
    assert row(conn, "tick")["paused"] is True


def test_sync_deletes_undeclared_code_schedules_of_its_stages_but_never_cli_ones(
    conn: Conn,
) -> None:
    other_app = Registry()

    @stage("other", registry=other_app)
    def other(job: Nothing, ctx: Context) -> None: ...

    add(conn, "by-hand", every=60)
    sync_schedules(conn, _registry(("gone", "noop"), ("kept", "noop")), now=T0)
    sync_schedules(
        conn, _registry(("theirs", "other")), stages=other_app, now=T0
    )  # another app's worker, sharing the database
    result = sync_schedules(conn, _registry(("kept", "noop")), now=T0)
    assert result.removed == ["gone"]
    assert {r.name: r.source for r in list_schedules(conn)} == {
        "by-hand": "cli",
        "kept": "code",
        "theirs": "code",
    }


def _registry(*items: tuple[str, str]) -> ScheduleRegistry:
    registry = ScheduleRegistry()
    for name, stage_name in items:
        schedule(name, stage=stage_name, every=60, registry=registry, stages=Registry())
    return registry


def test_sync_refuses_an_unknown_stage_or_a_bad_payload_and_writes_nothing(conn: Conn) -> None:
    unknown = _registry(("fine", "noop"), ("lost", "no-such-stage"))
    with pytest.raises(UnknownStage, match="no-such-stage"):
        sync_schedules(conn, unknown, now=T0)
    bad = ScheduleRegistry()
    schedule("fine", stage="noop", every=60, registry=bad)
    schedule("bad", stage="noop", every=60, payload={"n": "x"}, registry=bad, stages=Registry())
    with pytest.raises(InvalidPayload, match="n"):
        sync_schedules(conn, bad, now=T0)
    assert list_schedules(conn) == []


def test_code_takes_over_a_cli_schedule_and_the_cli_cannot_overwrite_a_code_one(
    conn: Conn,
) -> None:
    add(conn, "shared", every=60)
    sync_schedules(conn, _registry(("shared", "noop")), now=T0)
    assert row(conn, "shared")["source"] == "code"
    with pytest.raises(ScheduleOwnedByCode, match="declared in code"):
        add(conn, "shared", every=5)
    assert row(conn, "shared")["every_s"] == 60
    assert remove_schedule(conn, "shared") == "code" and remove_schedule(conn, "shared") is None


def test_cli_add_replaces_its_own_schedule(conn: Conn) -> None:
    assert save_schedule(conn, Schedule.define("mine", stage="noop", every=60), now=T0) == (
        True,
        at(minutes=1),
    )
    new, next_fire_at = save_schedule(
        conn, Schedule.define("mine", stage="noop", cron="0 * * * *", catch_up=5), now=T0
    )
    assert (new, next_fire_at) == (False, datetime(2026, 6, 1, 11, tzinfo=UTC))
    assert row(conn, "mine")["catch_up"] == 5 and row(conn, "mine")["every_s"] is None
