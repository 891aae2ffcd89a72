"""`pipeline schedule` and `pipeline enqueue --at` through the real CLI: schedules added,
listed, paused, resumed and removed; bad input refused in one line with exit 2, changing
nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

import tests.support.apps.jobs_app  # noqa: F401  registers the stages the scheduler fires
from pg_pipeline.db import make_pool
from pg_pipeline.maintenance import Scheduler
from pg_pipeline.schedules import Schedule, save_schedule
from tests.acceptance.cli import run_cli

Conn = psycopg.Connection[Any]


def schedules(conn: Conn) -> list[tuple[Any, ...]]:
    return conn.execute("SELECT * FROM pipeline.schedules ORDER BY name").fetchall()


def listed(env: dict[str, str]) -> dict[str, dict[str, Any]]:
    result = run_cli(env, "schedule", "list", "--json")
    assert result.returncode == 0, result.stderr
    return {row["name"]: row for row in map(json.loads, result.stdout.splitlines())}


def ok(env: dict[str, str], *args: str) -> str:
    result = run_cli(env, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_add_list_pause_resume_and_remove_schedules(env: dict[str, str], conn: Conn) -> None:
    added = ok(
        env,
        "schedule",
        "add",
        "nightly-report",
        "--stage",
        "effect",
        "--cron",
        "0 2 * * *",
        "--timezone",
        "Europe/Berlin",
        "--payload",
        '{"n": 7}',
        "--tenant",
        "acme",
    )
    assert added.startswith("schedule nightly-report added: effect, 0 2 * * * (Europe/Berlin)")
    # The next fire time reads as the cron says it: 02:00, Berlin's offset attached.
    assert "T02:00:00+01:00" in added
    ok(env, "schedule", "add", "fast", "--stage", "noop", "--every", "15", "--catch-up", "3")

    rows = listed(env)
    assert set(rows) == {"nightly-report", "fast"}
    nightly = rows["nightly-report"]
    assert (nightly["stage"], nightly["cron"], nightly["timezone"]) == (
        "effect",
        "0 2 * * *",
        "Europe/Berlin",
    )
    assert (nightly["payload"], nightly["tenant_id"], nightly["source"]) == (
        {"n": 7},
        "acme",
        "cli",
    )
    assert nightly["paused"] is False and nightly["last_fired_at"] is None
    fast = rows["fast"]
    assert (fast["every_s"], fast["catch_up"]) == (15.0, 3)
    next_fire = datetime.fromisoformat(fast["next_fire_at"])
    assert timedelta(0) < next_fire - datetime.now(UTC) <= timedelta(seconds=16)

    table = ok(env, "schedule", "list")
    header, *lines = table.splitlines()
    assert header.split() == ["name", "stage", "schedule", "next", "fire", "paused", "last",
                              "fired", "source"]  # fmt: skip
    assert any(line.startswith("fast") and "every 15 s" in line for line in lines)

    assert (
        ok(env, "schedule", "pause", "nightly-report").strip() == "schedule nightly-report paused"
    )
    assert listed(env)["nightly-report"]["paused"] is True
    assert "  yes  " in ok(env, "schedule", "list")
    assert "resumed: next fire" in ok(env, "schedule", "resume", "nightly-report")
    assert listed(env)["nightly-report"]["paused"] is False

    # add again replaces a CLI schedule.
    assert "schedule fast updated" in ok(
        env, "schedule", "add", "fast", "--stage", "noop", "--every", "0.5"
    )
    assert listed(env)["fast"]["every_s"] == 0.5

    assert ok(env, "schedule", "remove", "fast").strip() == "schedule fast removed"
    assert set(listed(env)) == {"nightly-report"}
    for verb in ("remove", "pause", "resume"):
        gone = run_cli(env, "schedule", verb, "fast")
        assert gone.returncode == 1
        assert gone.stderr.strip() == "pipeline: no schedule 'fast'"


BAD_ADDS = {
    "bad cron": (["--cron", "61 * * * *"], "invalid cron expression '61 * * * *': Bad minute"),
    "cron with too few fields": (["--cron", "0 2 * *"], "Wrong number of fields"),
    "every 0": (["--every", "0"], "every must be more than 0 seconds"),
    "every negative": (["--every", "-5"], "every must be more than 0 seconds"),
    "every not a number": (["--every", "hourly"], "'hourly' is not a number of seconds"),
    "cron and every": (["--cron", "@daily", "--every", "5"], "not allowed with argument"),
    "neither cron nor every": ([], "one of the arguments --cron --every is required"),
    "unknown stage": (["--every", "5", "--stage", "nope"], "unknown stage 'nope'"),
    "unknown timezone": (
        ["--cron", "@daily", "--timezone", "Mars/Olympus"],
        "unknown timezone 'Mars/Olympus'",
    ),
    "timezone with every": (
        ["--every", "5", "--timezone", "Europe/Berlin"],
        "a timezone applies to cron schedules only",
    ),
    "payload not JSON": (["--every", "5", "--payload", "{n: 1}"], "payload is not valid JSON"),
    "payload not the model": (
        ["--every", "5", "--payload", '{"n": "many"}'],
        "invalid payload for stage 'noop': n: Input should be a valid integer",
    ),
    "catch-up 0": (["--every", "5", "--catch-up", "0"], "must be a whole number within 1..1000"),
    "empty tenant": (["--every", "5", "--tenant", ""], "the tenant cannot be empty"),
}


@pytest.mark.parametrize(("extra", "message"), BAD_ADDS.values(), ids=BAD_ADDS.keys())
def test_bad_schedule_input_is_one_line_exit_2_and_changes_nothing(
    env: dict[str, str], conn: Conn, extra: list[str], message: str
) -> None:
    save_schedule(conn, Schedule.define("existing", stage="noop", every=60))
    before = schedules(conn)
    args = ["schedule", "add", "existing"]
    if "--stage" not in extra:
        args += ["--stage", "noop"]
    result = run_cli(env, *args, *extra)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert message in lines[0]
    assert result.stdout == ""
    assert schedules(conn) == before


def test_schedule_list_shows_a_schedule_this_system_cannot_load_with_its_error(
    env: dict[str, str], conn: Conn, db_url: str
) -> None:
    save_schedule(conn, Schedule.define("alien", stage="noop", cron="0 2 * * *"))
    save_schedule(conn, Schedule.define("fast", stage="noop", every=60))
    # Written by a worker whose tzdata has a zone this one lacks, and due.
    conn.execute(
        "UPDATE pipeline.schedules SET timezone = 'Mars/Olympus', next_fire_at = now() "
        "WHERE name = 'alien'"
    )
    with make_pool(db_url, max_size=1, name="scheduler") as pool:
        Scheduler(pool).run_once()
    result = run_cli(env, "schedule", "list")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    alien = [line for line in result.stdout.splitlines() if line.startswith("alien")]
    assert "0 2 * * * (Mars/Olympus)" in alien[0]
    assert "+00:00" in alien[0]  # its next fire time, shown in UTC here
    assert "stays due" in alien[1] and "unknown timezone 'Mars/Olympus'" in alien[1]
    ok(env, "schedule", "pause", "alien")
    resumed = run_cli(env, "schedule", "resume", "alien")
    assert resumed.returncode == 1
    assert resumed.stderr.strip().splitlines() == [
        "pipeline: schedule 'alien' cannot be resumed here: unknown timezone 'Mars/Olympus': "
        "use an IANA name such as 'Europe/Berlin' or 'UTC'"
    ]


def test_enqueue_at_a_time_with_an_offset_and_refuse_one_without(
    env: dict[str, str], conn: Conn
) -> None:
    later = (datetime.now(UTC) + timedelta(hours=2)).replace(microsecond=0)
    local = later.astimezone(datetime.now().astimezone().tzinfo).isoformat()
    job_id = int(ok(env, "enqueue", "noop", "{}", "--at", local))
    found = conn.execute("SELECT run_after FROM pipeline.jobs WHERE id = %s", (job_id,)).fetchone()
    assert found == (later,)

    # A time already past runs now, in its turn, not ahead of the queue.
    past = int(ok(env, "enqueue", "noop", "{}", "--at", "2001-01-01T00:00:00Z"))
    run_after = conn.execute(
        "SELECT run_after FROM pipeline.jobs WHERE id = %s", (past,)
    ).fetchone()
    assert run_after is not None and run_after[0] > datetime.now(UTC) - timedelta(minutes=5)

    for args, message in (
        (["--at", "2026-12-01T09:30:00"], "has no UTC offset"),
        (["--at", "next tuesday"], "is not an ISO 8601 time"),
        (["--at", later.isoformat(), "--delay", "5"], "not allowed with argument"),
    ):
        result = run_cli(env, "enqueue", "noop", "{}", *args)
        assert result.returncode == 2, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr
    assert conn.execute("SELECT count(*) FROM pipeline.jobs").fetchone() == (2,)
