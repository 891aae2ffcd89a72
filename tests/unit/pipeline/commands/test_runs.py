"""Bad input to `pipeline runs` is one line on stderr and exit 2, before any connection:
DATABASE_URL points at a closed port, so input that got through would exit 1 instead."""

from __future__ import annotations

import pytest

from pg_pipeline.commands.api import EXIT_FAILURE, EXIT_USAGE
from tests.unit.pipeline.commands.test_admin_input import UNREACHABLE, run


@pytest.fixture(autouse=True)
def unreachable_database(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", UNREACHABLE)
    monkeypatch.delenv("PIPELINE_LOG_LEVEL", raising=False)
    monkeypatch.setenv("PIPELINE_APP", "")


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["runs", "list", "--status", "queued"], "invalid choice"),  # a job's, not a run's
        (["runs", "list", "--limit", "0"], "--limit"),
        (["runs", "show"], "the following arguments are required: id"),
        (["runs", "show", "-3"], "id"),
        (["runs", "cancel", "x1"], "argument id"),
        (["runs"], "required"),
    ],
)
def test_bad_runs_input_is_a_usage_error_before_connecting(
    capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    code, err = run(capsys, *argv)
    assert code == EXIT_USAGE, err
    assert said in err and len(err.strip().splitlines()) == 1


def test_good_runs_input_gets_as_far_as_the_database(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(capsys, "runs", "list", "--status", "failed", "--json")
    assert code == EXIT_FAILURE and "s3cretPW" not in err
