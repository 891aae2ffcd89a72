"""The worker's metrics."""

from __future__ import annotations

from prometheus_client import generate_latest

from pg_pipeline.usage import Usage
from pg_pipeline.worker.completer import Settled
from pg_pipeline.worker.metrics import RESULTS, WorkerMetrics


def test_every_settlement_but_a_batched_one_is_counted_under_a_metrics_result() -> None:
    assert set(RESULTS) == {s.value for s in Settled} - {Settled.BATCHED.value}
    assert Settled.DONE == "done" and f"{Settled.LOST}" == "lost", "not the word a log says"


def test_run_durations_are_a_histogram_by_stage_and_result_beside_process_metrics() -> None:
    metrics = WorkerMetrics("w1")
    metrics.ran("resize", "completed", 0.02)
    metrics.ran("resize", "completed", 7.0)
    metrics.ran("resize", "retried", 0.5)
    text = generate_latest(metrics.registry).decode()
    count = 'pipeline_job_duration_seconds_count{result="completed",stage="resize"} 2.0'
    under_a_second = (
        'pipeline_job_duration_seconds_bucket{le="1.0",result="completed",stage="resize"} 1.0'
    )
    assert count in text and under_a_second in text
    assert 'pipeline_job_duration_seconds_count{result="retried",stage="resize"} 1.0' in text
    assert "process_resident_memory_bytes" in text


def test_usage_is_counted_by_stage_and_counter_numbers_only() -> None:
    metrics = WorkerMetrics("w1")
    for pages in (2, 3):
        usage = Usage()
        usage.add({"pages": pages, "model": "m", "child_cpu_s": 0.5})
        usage.wall_s, usage.cpu_s = 1.0, 0.25
        metrics.used("ocr", usage)
    value = metrics.registry.get_sample_value
    assert value("pipeline_usage_total", {"stage": "ocr", "counter": "pages"}) == 5.0
    assert value("pipeline_usage_total", {"stage": "ocr", "counter": "wall_s"}) == 2.0
    # The thread's CPU and its children's, which also count under their own name.
    assert value("pipeline_usage_total", {"stage": "ocr", "counter": "cpu_s"}) == 1.5
    assert value("pipeline_usage_total", {"stage": "ocr", "counter": "child_cpu_s"}) == 1.0
    assert value("pipeline_usage_total", {"stage": "ocr", "counter": "model"}) is None
