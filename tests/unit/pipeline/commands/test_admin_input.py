"""Bad input to `pipeline jobs`, `pipeline prune` and `worker --retention` is one line on stderr
and exit 2, before any connection: DATABASE_URL points at a closed port, so input that got
through would exit 1 instead."""

from __future__ import annotations

import argparse

import pydantic
import pytest

from pg_pipeline.cli import main
from pg_pipeline.commands.api import EXIT_FAILURE, EXIT_USAGE, duration_arg
from pg_pipeline.settings import WorkerSettings

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


BAD_INPUT = [
    (["jobs", "list", "--since", "5x"], "not a duration"),
    (["jobs", "list", "--since", "1.5h"], "not a duration"),
    (["jobs", "list", "--since=-1h"], "not a duration"),
    (["jobs", "list", "--since", "-1h"], "--since"),  # argparse reads -1h as an option
    (["jobs", "list", "--since", "7 d"], "not a duration"),
    (["jobs", "list", "--since", "٣d"], "not a duration"),  # not an ASCII digit
    (["jobs", "list", "--since", "0s"], "more than 0"),
    (["jobs", "list", "--limit", "0"], "1..10000"),
    (["jobs", "list", "--limit", "-5"], "1..10000"),
    (["jobs", "list", "--before", "0"], "1..9223372036854775807"),
    (["jobs", "list", "--status", "stuck"], "invalid choice"),
    (["jobs", "list", "--tenant", ""], "tenant cannot be empty"),
    (["jobs", "show", "12", "--tenant", ""], "tenant cannot be empty"),
    (["jobs", "retry"], "give a job id or --failed"),
    (["jobs", "retry", "5", "--failed"], "not both"),
    (["jobs", "retry", "5", "--stage", "noop"], "--stage goes with --failed"),
    (["jobs", "retry", "--failed", "--batch", "0"], "1..10000"),
    (["jobs", "cancel"], "give a job id or --queued"),
    (["jobs", "cancel", "--queued"], "--queued needs --stage"),
    (["jobs", "cancel", "5", "--queued", "--stage", "noop"], "not both"),
    (["jobs", "cancel", "5", "--stage", "noop"], "--stage goes with --queued"),
    (["prune"], "--older-than"),
    (["prune", "--older-than", "7"], "not a duration"),
    (["prune", "--older-than", "7w"], "not a duration"),
    (["prune", "--older-than", "0d"], "more than 0"),
    (["prune", "--older-than", "99999999d"], "at most 36500d"),
    (["prune", "--older-than", "9" * 5000 + "d"], "not a duration"),
    (["prune", "--older-than", "7d", "--batch", "-1"], "1..100000"),
    (["worker", "--retention", "soon"], "not a duration"),
    (["worker", "--retention", "0m"], "more than 0"),
    (["prune", "--older-than", "7d", "--blob-grace", "1"], "not a duration"),
    (["prune", "--older-than", "7d", "--blob-grace", "0s"], "more than 0"),
    (["worker", "--blob-grace", "0s"], "more than 0"),
]


@pytest.mark.parametrize(("argv", "reason"), BAD_INPUT, ids=lambda v: repr(v)[:60])
def test_bad_input_exits_2_with_one_line_naming_the_problem(
    capsys: pytest.CaptureFixture[str], argv: list[str], reason: str
) -> None:
    code, err = run(capsys, *argv)
    assert code == EXIT_USAGE, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and reason in lines[0], err
    assert "Traceback" not in err and "s3cretPW" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["jobs", "list", "--since", "36500d", "--limit", "10000", "--json"],
        ["jobs", "list", "--type", "noop", "--stage", "ocr", "--before", "1"],
        ["jobs", "show", "1", "--tenant", "acme"],
        ["jobs", "retry", "--failed", "--stage", "ocr", "--tenant", "acme", "--batch", "10000"],
        ["jobs", "cancel", "--queued", "--stage", "ocr", "--reason", "drop"],
        ["jobs", "cancel", "3", "--tenant", "acme"],
        ["prune", "--older-than", "1s", "--keep-failed", "--batch", "100000"],
        ["prune", "--older-than", "1s", "--blob-grace", "36500d"],
    ],
)
def test_input_at_the_edge_of_each_range_is_accepted(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, err = run(capsys, *argv)
    assert code == EXIT_FAILURE and "cannot connect to PostgreSQL at 127.0.0.1:1/shop" in err


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("15m", 900), ("2h", 7200), ("7d", 604_800)]
)
def test_durations_read_in_seconds(text: str, seconds: float) -> None:
    assert duration_arg(text) == seconds


@pytest.mark.parametrize("text", ["", "7", "d", "7D", "1h30m", "+7d", "7d\n", "1e3s"])
def test_malformed_durations_are_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="not a duration"):
        duration_arg(text)


def test_a_retention_of_nothing_is_not_a_setting() -> None:
    assert WorkerSettings().retention_s is None
    assert WorkerSettings(retention_s=3600).retention_s == 3600
    with pytest.raises(pydantic.ValidationError):
        WorkerSettings(retention_s=0)
