"""The progress line `pipeline submit --wait` shows while a document runs."""

from __future__ import annotations

from pg_pipeline.runs import StageProgress
from pg_pipeline_documents.cli import bar, describe_progress


def test_bar_fills_in_proportion() -> None:
    assert bar(0, 4, width=8) == "[........]"
    assert bar(1, 4, width=8) == "[##......]"
    assert bar(4, 4, width=8) == "[########]"
    assert bar(0, 0, width=4) == "[....]"


def test_progress_names_every_stage_in_pipeline_order() -> None:
    line = describe_progress(
        [
            StageProgress("ocr", {"done": 3, "running": 2, "queued": 5}),
            StageProgress("upload", {"done": 1}),
        ]
    )
    assert line == "upload done | ocr [######..............] 3/10 pages | extract -"


def test_a_failed_stage_says_so() -> None:
    line = describe_progress([StageProgress("upload", {"failed": 1}, error="encrypted")])
    assert line == "upload FAILED | ocr - | extract -"
