"""`pipeline worker`'s log format: text unless --log-format or PIPELINE_LOG_FORMAT says json; and
the heap the worker settles before it runs."""

from __future__ import annotations

import gc

import pytest

from pg_pipeline.cli import build_parser
from pg_pipeline.commands.worker import YOUNG_GC_THRESHOLD, settings_of, settle_heap
from pg_pipeline.settings import WorkerSettings


def test_the_log_format_is_text_unless_the_flag_or_the_environment_says_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PIPELINE_LOG_FORMAT", raising=False)
    assert build_parser().parse_args(["worker"]).log_format == "text"
    assert build_parser().parse_args(["worker", "--log-format", "json"]).log_format == "json"
    monkeypatch.setenv("PIPELINE_LOG_FORMAT", "json")
    assert build_parser().parse_args(["worker"]).log_format == "json"


def test_an_unknown_log_format_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PIPELINE_LOG_FORMAT", "xml")
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["worker"])
    assert exited.value.code == 2
    assert "unknown log format 'xml'; expected one of text, json" in capsys.readouterr().err


def test_the_worker_freezes_its_start_up_heap_and_waits_longer_between_young_collections() -> None:
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    try:
        settle_heap()
        assert gc.get_threshold() == (YOUNG_GC_THRESHOLD, before[1], before[2])
        assert gc.get_freeze_count() > frozen
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_the_batch_flags_set_the_worker_s_statement_sizes_and_default_to_its_settings() -> None:
    defaults = WorkerSettings()
    plain = settings_of(build_parser().parse_args(["worker"]))
    assert (plain.claim_batch_max, plain.ack_batch_max) == (
        defaults.claim_batch_max,
        defaults.ack_batch_max,
    )
    given = settings_of(
        build_parser().parse_args(["worker", "--claim-batch-max", "50", "--ack-batch-max", "70"])
    )
    assert (given.claim_batch_max, given.ack_batch_max) == (50, 70)


def test_the_hot_vacuum_flag_sets_its_threshold_or_leaves_the_table_to_autovacuum(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def dead_rows(*flags: str) -> int | None:
        return settings_of(build_parser().parse_args(["worker", *flags])).hot_vacuum_dead_rows

    assert dead_rows() == WorkerSettings().hot_vacuum_dead_rows is not None
    assert dead_rows("--hot-vacuum-dead-rows", "250000") == 250_000
    assert dead_rows("--hot-vacuum-dead-rows", "off") is None
    with pytest.raises(SystemExit) as exited:
        dead_rows("--hot-vacuum-dead-rows", "0")
    assert exited.value.code == 2
    assert "--hot-vacuum-dead-rows" in capsys.readouterr().err
