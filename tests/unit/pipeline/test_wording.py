"""Counts in words: the singular for one, the plural for every other count."""

from __future__ import annotations

from pg_pipeline.wording import counted


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert [counted(n, "blob") for n in (0, 1, 2)] == ["0 blobs", "1 blob", "2 blobs"]


def test_a_plural_not_made_with_s_is_given() -> None:
    assert counted(1, "batch", "batches") == "1 batch"
    assert counted(3, "batch", "batches") == "3 batches"
