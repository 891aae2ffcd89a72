"""Bad input to the `pipeline` command is one line on stderr and exit 2, before any connection.

DATABASE_URL points at a closed port here: a check that let bad input through would reach the
connection and exit 1, never start the embedded server.
"""

from __future__ import annotations

import itertools
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from pg_pipeline.cli import _database_error, main
from pg_pipeline.commands.api import EXIT_FAILURE, EXIT_USAGE, load_apps
from pg_pipeline.paths import data_dir
from pg_pipeline_documents.cli import dedup_key

UNREACHABLE = "postgresql://app:s3cretPW@127.0.0.1:1/shop"


@pytest.fixture(autouse=True)
def unreachable_database(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", UNREACHABLE)
    monkeypatch.delenv("PIPELINE_LOG_LEVEL", raising=False)
    monkeypatch.setenv("PIPELINE_APP", "")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    try:
        code = main(list(argv))
    except SystemExit as exit:  # argparse's way out
        code = int(exit.code or 0)
    return code, capsys.readouterr().err


NOT_UTF8 = os.fsdecode(b"\xff")  # how Python hands over argv bytes that are not UTF-8

USAGE_ERRORS = [
    (["enqueue", "noop", "{}", "--priority", "40000"], "-32768..32767"),
    (["enqueue", "noop", "{}", "--priority", "-32769"], "-32768..32767"),
    (["enqueue", "noop", "{}", "--priority", "9" * 5000], "not an integer"),
    (["enqueue", "noop", '{"text": "a\\u0000b"}'], "NUL character in field 'text'"),
    (["enqueue", "noop", '{"scores": [1, NaN]}'], "NaN in field 'scores[1]'"),
    (["enqueue", "noop", '{"x": -Infinity}'], "-Infinity in field 'x'"),
    (["enqueue", "noop", '{"name": "\\udcff"}'], "unpaired surrogate"),
    (["enqueue", "noop", '{"n": 1' + "0" * 5000 + "}"], "payload cannot be read"),
    (["enqueue", "noop", "[" * 100_000], "payload cannot be read"),
    (["enqueue", "noop", "{seconds: 1}"], "not valid JSON"),
    (["enqueue", "noop", "{}", "--delay", "1e20"], "--delay"),
    (["enqueue", "noop", "{}", "--delay", "nan"], "--delay"),
    (["enqueue", "noop", "{}", "--delay", "inf"], "--delay"),
    (["enqueue", "noop", "{}", "--delay", "-5"], "--delay"),
    (["enqueue", "noop", "{}", "--delay", "soon"], "--delay"),
    (["enqueue", "noop", "{}", "--tenant", ""], "tenant cannot be empty"),
    (["enqueue", "noop", "{}", "--tenant", NOT_UTF8], "not valid UTF-8"),
    (["enqueue", "noop", "{}", "--dedup-key", NOT_UTF8], "not valid UTF-8"),
    (["jobs", "list", "--limit", "-1"], "1..10000"),
    (["jobs", "list", "--limit", "0"], "1..10000"),
    (["jobs", "list", "--limit", "99999999999999999999"], "1..10000"),
    (["jobs", "list", "--status", "bogus"], "invalid choice"),
    (["jobs", "list", "--type", NOT_UTF8], "not valid UTF-8"),
    (["jobs", "show", "99999999999999999999"], "1..9223372036854775807"),
    (["jobs", "show", "0"], "1..9223372036854775807"),
    (["jobs", "retry", "-3"], "1..9223372036854775807"),
    (["jobs", "cancel", "12", "--reason", NOT_UTF8], "not valid UTF-8"),
    (["--log-level", "bogus", "status"], "unknown log level 'bogus'"),
    (["worker", "--concurrency", "0"], "--concurrency"),
    (["worker", "--concurrency", "100000"], "--concurrency"),
    (["worker", "--claim-batch-max", "0"], "1..4096"),
    (["worker", "--claim-batch-max", "4097"], "1..4096"),
    (["worker", "--ack-batch-max", "10001"], "1..10000"),
    (["worker", "--grace", "nan"], "--grace"),
    (["worker", "--grace", "-1"], "--grace"),
    (["worker", "--poll-interval", "inf"], "--poll-interval"),
    (["worker", "--poll-interval", "0"], "--poll-interval"),
    (["worker", "--reclaim-interval", "1e300"], "--reclaim-interval"),
    (["submit", "x.pdf", "--tenant", "-", "--timeout", "nan"], "--timeout"),
    (["submit", "x.pdf", "--timeout", "-1"], "--timeout"),
    (["submit", "x.pdf", "--workers", "-1"], "--workers"),
    (["submit", "x.pdf", "--tenant", ""], "tenant cannot be empty"),
]


@pytest.mark.parametrize(("argv", "reason"), USAGE_ERRORS, ids=lambda v: repr(v)[:60])
def test_bad_input_exits_2_with_one_line_naming_the_problem(
    capsys: pytest.CaptureFixture[str], argv: list[str], reason: str
) -> None:
    code, err = run(capsys, *argv)
    assert code == EXIT_USAGE, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and reason in lines[0], err
    assert "Traceback" not in err and "s3cretPW" not in err


def test_a_bad_pipeline_log_level_variable_is_a_usage_error_naming_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIPELINE_LOG_LEVEL", "loud")
    code, err = run(capsys, "status")
    assert code == EXIT_USAGE and "PIPELINE_LOG_LEVEL" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("level", ["debug", "WARNING", " error "])
def test_log_levels_are_read_in_any_case(capsys: pytest.CaptureFixture[str], level: str) -> None:
    code, err = run(capsys, "--log-level", level, "status")
    assert code == EXIT_FAILURE and "cannot connect" in err, "parsed, then failed to connect"


@pytest.mark.parametrize(
    "argv",
    [
        ["enqueue", "noop", "{}", "--priority", "32767", "--delay", "0"],
        ["enqueue", "noop", "{}", "--priority", "-32768", "--delay", "3600", "--tenant", "-"],
        ["jobs", "list", "--limit", "10000", "--status", "failed"],
        ["jobs", "show", "9223372036854775807"],
        ["worker", "--grace", "0", "--concurrency", "1024", "--app", "documents"],
        ["worker", "--claim-batch-max", "4096", "--ack-batch-max", "10000", "--app", "documents"],
    ],
)
def test_input_at_the_edge_of_each_range_is_accepted(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, err = run(capsys, *argv)
    assert code == EXIT_FAILURE and "cannot connect to PostgreSQL at 127.0.0.1:1/shop" in err


def test_a_database_error_is_one_line_without_the_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    error = psycopg.ProgrammingError(f'invalid dsn: "{UNREACHABLE}"\nDETAIL: password=s3cretPW')
    assert _database_error(error) == EXIT_FAILURE
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "s3cretPW" not in err and "invalid dsn" in err


# -- submit's dedup key --------------------------------------------------------------------------

SHA = "ab" * 32


def test_dedup_keys_never_collide_across_tenants() -> None:
    tenants = [None, "-", "", "\\", "\\-", "\\\\-", "acme", "-:x", "a:b", ":", "\\acme"]
    keys = [dedup_key(t, SHA) for t in tenants]
    assert len(set(keys)) == len(keys), keys
    for (a, ka), (b, kb) in itertools.combinations(zip(tenants, keys, strict=True), 2):
        assert ka != kb, (a, b)


def test_dedup_keys_of_ordinary_tenants_are_what_they_were() -> None:
    # Files submitted before the change must still be found again.
    assert dedup_key(None, SHA) == f"-:{SHA}"
    assert dedup_key("acme", SHA) == f"acme:{SHA}"
    assert dedup_key("7", SHA) == f"7:{SHA}"


def test_a_tenant_named_dash_gets_a_key_of_its_own() -> None:
    assert dedup_key("-", SHA) != dedup_key(None, SHA)


# -- where apps are imported from, and where state is kept --------------------------------------


@pytest.fixture
def isolated_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


def test_load_apps_finds_an_app_in_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_path: None
) -> None:
    (tmp_path / "shop_app_for_test.py").write_text("LOADED = True\n")
    monkeypatch.chdir(tmp_path)
    load_apps(["shop_app_for_test"])
    assert sys.modules["shop_app_for_test"].LOADED is True


def test_the_current_directory_cannot_shadow_an_installed_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_path: None
) -> None:
    installed, project = tmp_path / "site-packages", tmp_path / "project"
    for root, body in ((installed, "WHERE = 'installed'\n"), (project, "raise RuntimeError\n")):
        (root / "shadowed_pkg_for_test").mkdir(parents=True)
        (root / "shadowed_pkg_for_test" / "__init__.py").write_text(body)
    sys.path.append(str(installed))
    monkeypatch.chdir(project)
    load_apps(["shadowed_pkg_for_test"])
    assert sys.modules["shadowed_pkg_for_test"].WHERE == "installed"
    assert sys.path.index(str(project)) > sys.path.index(str(installed))


def test_the_data_directory_is_created_readable_by_its_user_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIPELINE_HOME", str(tmp_path / "new" / "home"))
    assert stat.S_IMODE(data_dir().stat().st_mode) == 0o700
    monkeypatch.delenv("PIPELINE_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert data_dir() == (tmp_path / "xdg" / "pg-pipeline").resolve()
    assert stat.S_IMODE(data_dir().stat().st_mode) == 0o700


def test_an_existing_data_directory_keeps_its_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o750)
    monkeypatch.setenv("PIPELINE_HOME", str(shared))
    assert stat.S_IMODE(data_dir().stat().st_mode) == 0o750


def test_a_broken_pipe_that_is_not_standard_output_still_shows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Only a reader of stdout that left ends the command quietly: a pipe of the command's own
    # that breaks is a bug, and its traceback is how one hears of it.
    from pg_pipeline.commands import db_url

    def broken(args: object) -> int:
        raise BrokenPipeError("the OCR child's pipe")

    monkeypatch.setattr(db_url, "run", broken)
    with pytest.raises(BrokenPipeError, match="OCR child"):
        main(["db-url"])
