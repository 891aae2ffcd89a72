"""Whatever tenants, errors and names hold, the real CLI's human-readable output carries no
control character a terminal would obey (window title, clipboard, line rewrites, fake rows):
each is shown escaped. JSON output stays the same JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.acceptance.cli import run_cli

Conn = psycopg.Connection[Any]

#: What a terminal acts on; a newline between lines is the output's own
ACTS_ON = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

TITLE = "\x1b]0;owned\x07"  # OSC 0 sets the window title
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"  # OSC 52 writes the clipboard
REWRITE = "\r\x1b[2K    42  noop  acme  done"  # rewrites the line: a fake row
TENANT = f"acme{TITLE}"
ERROR = f"boom{CLIPBOARD}{REWRITE}\n\u009b2J\u202eevil"
SCHEDULE = f"nightly{TITLE}"


def seed(conn: Conn) -> None:
    conn.execute(
        """INSERT INTO pipeline.job_history (type, tenant_id, payload, status, attempts,
            finished_at, last_error)
           VALUES ('noop', %(t)s, '{}', 'failed', 3, now(), %(e)s)""",
        {"t": TENANT, "e": ERROR},
    )
    conn.execute(
        "INSERT INTO pipeline.active_jobs (type, tenant_id, payload) VALUES (%s, %s, '{}')",
        ("noop", TENANT),
    )
    conn.execute(
        "INSERT INTO pipeline.tenant_caps (tenant_id, stage, cap) VALUES (%s, 'noop', 1)", (TENANT,)
    )
    conn.execute(
        """INSERT INTO pipeline.tenant_slots (tenant_id, stage, running) VALUES (%s, 'noop', 1)
           ON CONFLICT (tenant_id, stage) DO UPDATE SET running = excluded.running""",
        (TENANT,),
    )
    conn.execute(
        """INSERT INTO pipeline.workers (id, hostname, pid, stages, concurrency)
           VALUES (gen_random_uuid(), %s, 4242, '{noop}', 2)""",
        (f"box{TITLE}",),
    )
    conn.execute(
        """INSERT INTO pipeline.schedules (name, stage, every_s, tenant_id, source, next_fire_at,
                                           last_error)
           VALUES (%s, 'noop', 60, %s, 'cli', now() - interval '1 minute', %s)""",
        (SCHEDULE, TENANT, ERROR),
    )


def assert_inert(result: Any, *shown: str) -> None:
    """Nothing a terminal would obey on either stream, and each of `shown` printed escaped."""
    for stream in (result.stdout, result.stderr):
        found = ACTS_ON.search(stream)
        assert found is None, f"{found.group()!r} reached the terminal in {stream!r}"
    for text in shown:
        assert text in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (("jobs", "list"), ["acme\\x1b]0;", "boom\\x1b]52;c;"]),
        (("tenants", "list"), ["acme\\x1b]0;owned\\x07"]),
        (("schedule", "list"), ["nightly\\x1b]0;owned\\x07", "\\x1b[2K", "\\u202eevil"]),
        (("status",), ["acme\\x1b]0;owned\\x07", "box\\x1b]0;owned\\x07", "nightly\\x1b]0;"]),
        (("tenants", "set-cap", TENANT, "3", "--stage", "noop"), ["acme\\x1b]0;owned\\x07"]),
        (("schedule", "pause", SCHEDULE), ["nightly\\x1b]0;owned\\x07 paused"]),
        (("jobs", "show", TITLE), ["\\x1b]0;owned\\x07"]),  # a usage error quotes the argument
    ],
    ids=lambda v: v[0] if isinstance(v, tuple) else None,
)
def test_human_readable_output_shows_control_characters_escaped(
    env: dict[str, str], conn: Conn, args: tuple[str, ...], shown: list[str]
) -> None:
    seed(conn)
    result = run_cli(env, *args)
    assert result.returncode in (0, 2), result.stderr
    assert_inert(result, *shown)


def test_submit_shows_a_file_name_escaped(env: dict[str, str], tmp_path: Path) -> None:
    named = tmp_path / f"scan{TITLE}.pdf"
    named.write_bytes(b"not a pdf")
    result = run_cli(env, "submit", str(named))
    assert result.returncode == 2
    assert_inert(result, "scan\\x1b]0;owned\\x07.pdf")


def test_json_output_stays_the_same_json(env: dict[str, str], conn: Conn) -> None:
    seed(conn)
    jobs = run_cli(env, "jobs", "list", "--json")
    assert [j["tenant_id"] for j in json.loads(jobs.stdout)] == [TENANT, TENANT]
    schedules = run_cli(env, "schedule", "list", "--json")
    assert json.loads(schedules.stdout)["last_error"] == ERROR
    status = run_cli(env, "status", "--json")
    assert json.loads(status.stdout)["schedules"]["rows"][0]["name"] == SCHEDULE
    for result in (jobs, schedules, status):
        assert_inert(result)
