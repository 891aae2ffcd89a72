"""The `pipeline` command fails the way the README says: one line, the right exit code, no
password, nothing stored, and never a hang."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.acceptance.cli import REPO, pipeline_exe, run_cli
from tests.support.fake_llm_server import FakeLlmServer, Reply
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
TENDER = REPO / "sample_docs" / "tender.pdf"
SECRET = "s3cretPW"


def count(conn: Conn, sql: str) -> int:
    row = conn.execute(sql).fetchone()
    assert row is not None
    return int(row[0])


# -- a malformed DATABASE_URL -------------------------------------------------------------------

MALFORMED = [
    (f"postgresql://user:{SECRET}@dbhost:notaport/app", "dbhost"),
    (f"postgres://user:{SECRET}@[::1", "::1"),
    (f"postgresql://user:{SECRET}@dbhost/app?bogus=1", "dbhost"),
    (f"host=dbhost password='{SECRET}", "dbhost"),
    (f"host=dbhost password={SECRET} bogus=1", "dbhost"),
    (f"postgresql://user:{SECRET[:3]}/{SECRET[3:]}@127.0.0.1:1/app", "127.0.0.1"),
]


@pytest.mark.parametrize(("dsn", "host"), MALFORMED, ids=[d for d, _ in MALFORMED])
def test_a_malformed_database_url_is_one_line_naming_the_host_never_the_password(
    env: dict[str, str], dsn: str, host: str
) -> None:
    result = run_cli({**env, "DATABASE_URL": dsn}, "status")
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert host in lines[0]
    assert SECRET[:3] not in result.stderr + result.stdout
    assert SECRET[3:] not in result.stderr + result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["enqueue", "noop", "{}"],
        ["worker"],
        ["migrate"],
        ["jobs", "list"],
        ["submit", str(TENDER)],
    ],
)
def test_every_command_hides_the_password_of_a_url_the_driver_quotes(
    env: dict[str, str], args: list[str]
) -> None:
    # psycopg's own message for this URL quotes it whole.
    result = run_cli({**env, "DATABASE_URL": f"postgres://user:{SECRET}@[::1"}, *args)
    assert result.returncode == 1, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "::1" in result.stderr and SECRET not in result.stderr + result.stdout


def test_doctor_reports_a_malformed_database_url_without_its_password(
    env: dict[str, str],
) -> None:
    result = run_cli({**env, "DATABASE_URL": f"host=dbhost password='{SECRET}"}, "doctor")
    assert result.returncode == 1
    assert "FAIL" in result.stdout and "dbhost" in result.stdout
    assert SECRET not in result.stdout + result.stderr and "Traceback" not in result.stderr


# -- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["enqueue", "noop", "{}", "--priority", "40000"],
        ["enqueue", "noop", '{"text": "a\\u0000b"}'],
        ["enqueue", "noop", '{"x": NaN}'],
        ["enqueue", "noop", "{}", "--delay", "1e20"],
        ["jobs", "list", "--limit", "-1"],
        ["jobs", "show", "99999999999999999999"],
        ["enqueue", "noop", "{}", "--dedup-key", "k" * 1025],
        ["enqueue", "noop", "{}", "--tenant", "\u00e9" * 257],
    ],
)
def test_bad_input_exits_2_with_one_line_and_inserts_nothing(
    env: dict[str, str], conn: Conn, args: list[str]
) -> None:
    result = run_cli(env, *args)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert count(conn, "SELECT count(*) FROM pipeline.jobs") == 0


@pytest.mark.parametrize(
    "args",
    [
        ["enqueue", "hostile"],
        ["schedule", "add", "big", "--stage", "hostile", "--every", "60", "--payload"],
    ],
    ids=["enqueue", "schedule add"],
)
def test_a_payload_over_the_limit_exits_2_naming_the_limit_and_blob_storage(
    env: dict[str, str], conn: Conn, args: list[str]
) -> None:
    payload = json.dumps({"mode": "x" * 200})
    result = run_cli({**env, "PIPELINE_MAX_PAYLOAD_BYTES": "100"}, *args, payload)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "over the limit of 100 (PIPELINE_MAX_PAYLOAD_BYTES)" in lines[0]
    assert "blob storage" in lines[0]
    assert count(conn, "SELECT count(*) FROM pipeline.jobs") == 0
    assert count(conn, "SELECT count(*) FROM pipeline.schedules") == 0


def test_the_extreme_priorities_are_stored_as_given(env: dict[str, str], conn: Conn) -> None:
    for priority in ("32767", "-32768"):
        result = run_cli(env, "enqueue", "noop", "{}", "--priority", priority)
        assert result.returncode == 0, result.stderr
        shown = json.loads(run_cli(env, "jobs", "show", result.stdout.strip()).stdout)
        assert shown["priority"] == int(priority)


def test_a_file_name_that_is_not_utf8_is_refused_before_anything_is_stored(
    env: dict[str, str], conn: Conn, tmp_path: Path
) -> None:
    folder = tmp_path / "incoming"
    folder.mkdir()
    name = os.path.join(os.fsencode(folder), b"\xff.pdf")
    with open(name, "wb") as out:
        out.write(TENDER.read_bytes())
    result = subprocess.run(
        [*map(os.fsencode, pipeline_exe()), b"submit", name, b"--wait"],
        env=env,
        cwd=REPO,
        capture_output=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    stderr = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 2, stderr
    assert len(stderr.strip().splitlines()) == 1 and "not valid UTF-8" in stderr
    assert "\\xff.pdf" in stderr
    stored = [p for p in (tmp_path / "home").rglob("*") if p.is_file() and "blobs" in p.parts]
    assert stored == []
    assert count(conn, "SELECT count(*) FROM pipeline.jobs") == 0


# -- the worker `submit --wait` starts ----------------------------------------------------------


def bogus_project(root: Path) -> Path:
    """A user's project whose own `stages` and `pipeline` packages must not be imported."""
    for package in ("stages", "pipeline"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text(
            f"raise RuntimeError('the project folder {package}/ was imported')\n"
        )
    return root


def test_submit_wait_works_from_a_folder_with_its_own_stages_and_pipeline_packages(
    env: dict[str, str], tmp_path: Path
) -> None:
    project = bogus_project(tmp_path / "project")
    result = subprocess.run(
        [*pipeline_exe(), "submit", str(TENDER), "--wait", "--timeout", "90", "--workers", "1"],
        env={**env, "PIPELINE_APP": ""},
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["fields"]["title"]


def test_submit_wait_fails_at_once_with_the_log_when_its_worker_cannot_start(
    env: dict[str, str], tmp_path: Path
) -> None:
    project = bogus_project(tmp_path / "project")
    # --timeout is the default 1800 s: only noticing the worker's exit ends this in time.
    result = subprocess.run(
        [*pipeline_exe(), "submit", str(TENDER), "--wait"],
        # Read by the worker alone (submit has no such flag), which refuses it at start.
        env={**env, "PIPELINE_LOG_FORMAT": "broken"},
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 1, result.stderr
    assert "worker this command started exited with code 2" in result.stderr
    assert "unknown log format 'broken'" in result.stderr
    log = next((tmp_path / "home" / "logs").glob("submit-worker-*.log"))
    assert str(log) in result.stderr
    assert "no worker of this command is left" in result.stderr


def test_submit_wait_fails_at_once_when_its_worker_is_killed(
    env: dict[str, str], conn: Conn
) -> None:
    release = threading.Event()
    with FakeLlmServer() as llm:
        llm.reply(Reply(content="{}", hold=release))  # extract hangs until the worker dies
        submit = subprocess.Popen(
            [*pipeline_exe(), "submit", str(TENDER), "--wait", "--workers", "1"],
            env={**env, "PIPELINE_LLM_BASE_URL": llm.base_url, "PIPELINE_LLM_MODEL": "m"},
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        try:
            wait_for(lambda: llm.requests, timeout=60, what="the extract stage to ask the LLM")
            row = conn.execute("SELECT pid FROM pipeline.workers").fetchone()
            assert row is not None
            os.kill(row[0], signal.SIGKILL)
            _, stderr = submit.communicate(timeout=30)
        finally:
            release.set()
            if submit.poll() is None:
                submit.kill()
                submit.communicate()
    assert submit.returncode == 1, stderr
    assert "worker this command started was killed by SIGKILL" in stderr
    assert "submit-worker-" in stderr and ".log" in stderr


def test_a_file_that_cannot_be_read_is_refused_with_the_reason(
    env: dict[str, str], conn: Conn, tmp_path: Path
) -> None:
    too_long = tmp_path / ("x" * 300 + ".pdf")
    result = run_cli(env, "submit", str(too_long))
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "cannot read it: File name too long" in result.stderr
    assert count(conn, "SELECT count(*) FROM pipeline.jobs") == 0


# -- a reader that leaves early -----------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["jobs", "show", "{job}"], ["jobs", "list", "--json", "--limit", "300"]],
    ids=["show", "list"],
)
def test_a_reader_that_leaves_early_ends_the_command_quietly_as_head_ends_cat(
    env: dict[str, str], conn: Conn, args: list[str]
) -> None:
    # Output far past a pipe's buffer (64 KiB), so the command is still writing when the
    # reader leaves: `pipeline jobs show 79 | head -n 1`.
    [(job,)] = conn.execute(
        "INSERT INTO pipeline.active_jobs (type, payload, last_error) "
        "SELECT 'hostile', jsonb_build_object('mode', repeat('x', 200000)), repeat('e', 400) "
        "FROM generate_series(1, 300) RETURNING id"
    ).fetchall()[-1:]
    command = subprocess.Popen(
        [*pipeline_exe(), *(a.format(job=job) for a in args)],
        env=env,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert command.stdout is not None and command.stderr is not None
    first = command.stdout.readline()
    command.stdout.close()  # what head does after its lines
    err = command.stderr.read().decode()
    code = command.wait(timeout=60)

    assert first  # it did print, and the reader took its first line
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception ignored" not in err
    assert code == 128 + signal.SIGPIPE, err  # what a shell shows for `cat file | head`
