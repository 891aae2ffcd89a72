"""The counts `pipeline jobs`, `pipeline runs` and `runs rerun`/`runs diff` print, in the singular
for one and the plural otherwise (pg_pipeline.wording.counted): the admin reads are replaced by
the counts they return, so no database."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from types import ModuleType

import pytest

from pg_pipeline.admin import jobs as admin_jobs
from pg_pipeline.admin import runs as admin_runs
from pg_pipeline.cli import main
from pg_pipeline.commands import jobs, reruns, runs
from pg_pipeline.output_versions import FieldDiff, OutputDiff, OutputVersion, PartDiff
from pg_pipeline.reruns import RerunResult


@pytest.fixture(autouse=True)
def no_database(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIPELINE_APP", "")
    for module in (jobs, runs):
        monkeypatch.setattr(module, "open_db", lambda: ("", contextlib.nullcontext()))


RETRY_FAILED = ["jobs", "retry", "--failed"]
CANCEL_QUEUED = ["jobs", "cancel", "--queued", "--stage", "ocr"]


def printed(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out.strip()


@pytest.mark.parametrize(
    ("admin", "read", "returns", "argv", "said"),
    [
        (admin_jobs, "retry_failed", 1, RETRY_FAILED, "queued again 1 failed job"),
        (admin_jobs, "retry_failed", 2, RETRY_FAILED, "queued again 2 failed jobs"),
        (admin_jobs, "cancel_queued", 1, CANCEL_QUEUED, "cancelled 1 queued job"),
        (admin_jobs, "cancel_queued", 0, CANCEL_QUEUED, "cancelled 0 queued jobs"),
        (admin_runs, "cancel_tree", [7], ["runs", "cancel", "7"], "7: cancelled 1 job"),
        (admin_runs, "cancel_tree", [7, 8, 9], ["runs", "cancel", "7"], "7: cancelled 3 jobs"),
    ],
)
def test_bulk_retries_and_cancels_count_the_jobs_they_changed(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    admin: ModuleType,
    read: str,
    returns: object,
    argv: list[str],
    said: str,
) -> None:
    monkeypatch.setattr(admin, read, lambda *a, **k: returns)
    assert printed(capsys, *argv) == said


@pytest.mark.parametrize(("n", "said"), [(1, "1 job of the stage"), (40, "40 jobs of the stage")])
def test_runs_rerun_counts_the_jobs_of_the_stage(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], n: int, said: str
) -> None:
    made = RerunResult(run_id=7, stage="ocr", code_version="v2", generation=1, jobs=n, created=True)
    monkeypatch.setattr(reruns, "rerun", lambda *a, **k: made)
    out = printed(capsys, "runs", "rerun", "7", "--from", "ocr")
    assert out == f"run 7: rerun from ocr at version v2 as generation 1: {said} enqueued"


def diff_of(unchanged: int) -> OutputDiff:
    """One changed field and `unchanged` fields that are the same on both sides."""
    fields = [FieldDiff("total", 1, 2), *(FieldDiff(f"same{i}", i, i) for i in range(unchanged))]
    left = {f.field: f.left for f in fields}
    right = {f.field: f.right for f in fields}
    at = datetime(2026, 12, 3, tzinfo=UTC)
    return OutputDiff(
        run_id=7,
        stage="extract",
        left=OutputVersion("extract", 0, "v1", 1, at),
        right=OutputVersion("extract", 1, "v2", 1, at),
        parts=[PartDiff(None, left, right, fields)],
    )


@pytest.mark.parametrize(
    ("unchanged", "said"), [(1, "(1 field unchanged)"), (3, "(3 fields unchanged)")]
)
def test_runs_diff_counts_the_fields_it_leaves_out(unchanged: int, said: str) -> None:
    assert reruns.diff_lines(diff_of(unchanged))[-1].strip() == said


@pytest.mark.parametrize(
    ("jobs", "failed", "said"),
    [
        (1, 1, ("· 1 job", "1 job of the fan-out of job 7 failed or was cancelled")),
        (3, 2, ("· 3 jobs", "2 jobs of the fan-out of job 7 failed or were cancelled")),
    ],
)
def test_runs_show_counts_the_run_s_jobs_and_a_fan_out_s_failed_children(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    jobs: int,
    failed: int,
    said: tuple[str, str],
) -> None:
    then = datetime(2026, 12, 3, tzinfo=UTC)
    root = admin_runs.RunJob(7, "ocr", None, "failed", 1, 1, None, None, then, then, then)
    blocked = admin_runs.BlockedStep("extract", 7, failed, True)
    run = admin_runs.Run(7, None, "blocked", 7, "boom", [blocked], root, [], jobs, [])
    monkeypatch.setattr(admin_runs, "read_run", lambda conn, run_id, tenant: run)
    monkeypatch.setattr(runs, "output_versions", lambda conn, run_id, tenant: [])

    out = printed(capsys, "runs", "show", "7").splitlines()

    assert out[0].endswith(said[0])
    assert out[-1].endswith(said[1])
