"""What `pipeline prune` and the worker's log say a pass and its blob sweep did: counts in the
singular where there is one, and the empty days a pass dropped told apart from the days it
deleted jobs with."""

from __future__ import annotations

from pg_pipeline.maintenance.blob_sweep import SweepReport, swept
from pg_pipeline.maintenance.retention import PruneReport, said


def test_a_pass_of_one_of_everything_says_each_in_the_singular() -> None:
    one = PruneReport(jobs=1, outputs=1, joins=1, batches=1, partitions=1, kept=1, runs=1)

    assert said(one) == (
        "deleted 1 finished job, 1 output and 1 join (1 day of history dropped whole, 1 of its"
        " rows kept for runs still going; 1 run deleted one by one in 1 batch)"
    )


def test_a_pass_of_several_says_each_in_the_plural() -> None:
    many = PruneReport(jobs=5, outputs=0, joins=2, batches=3, partitions=2, kept=0, runs=4)

    assert said(many) == (
        "deleted 5 finished jobs, 0 outputs and 2 joins (2 days of history dropped whole, 0 of"
        " their rows kept for runs still going; 4 runs deleted one by one in 3 batches)"
    )


def test_a_pass_that_ran_no_batch_says_no_run_was_left_to_delete_one_by_one() -> None:
    text = said(PruneReport(jobs=2, partitions=1))

    assert text.endswith("rows kept for runs still going; no run left to delete one by one)")
    assert "batch" not in text


def test_empty_days_dropped_are_said_apart_from_the_days_dropped_with_their_jobs() -> None:
    assert "; 1 empty day dropped;" in said(PruneReport(jobs=3, partitions=1, empty_partitions=1))
    text = said(PruneReport(batches=1, empty_partitions=3))
    assert text.startswith("deleted 0 finished jobs, 0 outputs and 0 joins (0 days of history")
    assert "; 3 empty days dropped;" in text
    assert "empty" not in said(PruneReport(jobs=3, partitions=1)), "none: not said"


def test_a_sweep_of_one_blob_says_it_in_the_singular() -> None:
    assert swept(SweepReport(deleted=1, referenced=1, recent=1, missing=1)) == (
        "deleted 1 blob no run references (kept 1 another run references and 1 put within the"
        " grace period; 1 was not in the store)"
    )
    assert swept(SweepReport(deleted=2, missing=2)) == (
        "deleted 2 blobs no run references (kept 0 another run references and 0 put within the"
        " grace period; 2 were not in the store)"
    )
