"""`pipeline status` output and the metrics' label bounds, from hand-made snapshots."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from pg_pipeline.admin.metrics import merge_stages
from pg_pipeline.admin.status import (
    CAP_NOTE,
    ScheduleStatus,
    StageStatus,
    Status,
    TenantCapUse,
    TenantWeight,
    WorkerStatus,
)
from pg_pipeline.cli import build_parser
from pg_pipeline.commands.status import render
from pg_pipeline.settings import WorkerSettings
from pg_pipeline.worker.metrics import RESULTS

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def stage(name: str, **figures: object) -> StageStatus:
    values: dict[str, object] = {
        "queued": 0,
        "ready": 0,
        "running": 0,
        "expired_leases": 0,
        "oldest_ready_age_s": None,
        "failed_1h": 0,
        "failed_24h": 0,
        "completed_1h": 0,
        "avg_attempts_1h": None,
        "max_attempts_1h": None,
        "completed_24h": 0,
        "avg_attempts_24h": None,
        "max_attempts_24h": None,
        "p50_s": None,
        "p95_s": None,
        "max_s": None,
    }
    values.update(figures)
    return StageStatus(name, **values)  # type: ignore[arg-type]


def snapshot(**parts: object) -> Status:
    values: dict[str, object] = {
        "taken_at": NOW,
        "stages": [],
        "failures_hourly": [],
        "expired_leases": [],
        "expired_leases_total": 0,
        "tenants": [],
        "tenants_total": 0,
        "workers": [],
        "schedules": [],
        "schedules_total": 0,
    }
    values.update(parts)
    return Status(**values)  # type: ignore[arg-type]


def test_the_table_has_a_row_per_stage_and_lists_only_tenants_near_their_cap() -> None:
    text = render(
        snapshot(
            stages=[
                stage("ocr", queued=12, ready=10, running=4, oldest_ready_age_s=90.0),
                stage(
                    "extract",
                    completed_1h=3,
                    avg_attempts_1h=1.333,
                    max_attempts_1h=2,
                    p50_s=0.42,
                    p95_s=7200.0,
                ),
            ],
            tenants=[
                TenantCapUse("acme", "ocr", running=4, cap=5, queued=9),
                TenantCapUse("calm", "ocr", running=1, cap=10, queued=0),
                TenantCapUse("coded", "ocr", running=2, cap=None, queued=1),
            ],
            tenants_total=3,
            workers=[WorkerStatus(uuid.UUID(int=7), "box", 99, ["ocr"], 8, NOW, NOW, 3.5, 4)],
            notes=[CAP_NOTE],
        )
    )
    lines = text.splitlines()
    assert lines[1].split() == [
        "ocr",
        "12",
        "10",
        "4",
        "0",
        "1.5",
        "min",
        "0",
        "0",
        "0",
        "-",
        "-",
        "-",
    ]
    assert lines[2].split() == [
        "extract",
        "0",
        "0",
        "0",
        "0",
        "-",
        "0",
        "0",
        "3",
        "1.33/2",
        "0.42",
        "s",
        "2.0",
        "h",
    ]
    tenants = [line.split() for line in lines if line.startswith("  ") and "ocr" in line]
    assert tenants[:2] == [["acme", "ocr", "4", "5", "9"], ["coded", "ocr", "2", "*", "1"]]
    assert "calm" not in text
    assert "workers: 1 live" in text and "schedules: none" in text
    assert lines[-1] == f"note: {CAP_NOTE}"


def test_schedules_say_when_they_fire_or_how_late_they_are() -> None:
    def schedule(name: str, due_in_s: float, paused: bool = False) -> ScheduleStatus:
        return ScheduleStatus(
            name,
            "ocr",
            None,
            None,
            60.0,
            "UTC",
            paused,
            NOW + timedelta(seconds=due_in_s),
            due_in_s,
            None,
            None,
            None,
        )

    text = render(
        snapshot(
            schedules=[schedule("soon", 30), schedule("late", -600), schedule("held", 5, True)],
            schedules_total=3,
        )
    )
    assert "schedules: 3" in text
    assert "in 30 s" in text and "due 10.0 min ago" in text and "paused" in text


def test_an_empty_snapshot_serialises_to_the_stable_json_keys() -> None:
    shaped = json.loads(json.dumps(snapshot().to_json()))
    assert shaped == {
        "version": 1,
        "taken_at": NOW.isoformat(),
        "stages": [],
        "failures_hourly": [],
        "expired_leases": {"total": 0, "oldest": []},
        "tenants": {"total": 0, "rows": []},
        "workers": [],
        "schedules": {"total": 0, "rows": []},
        "notes": [],
        "runs": {},
        "waiting": [],
        "limits": [],
        "weights": {"total": 0, "rows": []},
        "budgets": {"total": 0, "rows": []},
    }


def test_weights_are_listed_with_every_other_tenant_at_one() -> None:
    assert "weight" not in render(snapshot())
    text = render(
        snapshot(
            weights=[TenantWeight("gold", None, 4.0), TenantWeight("free", "ocr", 0.5)],
            weights_total=2,
        )
    )
    assert "tenant weights (2 set; every other tenant weighs 1)" in text
    assert any(line.split() == ["gold", "(every)", "4"] for line in text.splitlines())
    assert any(line.split() == ["free", "ocr", "0.5"] for line in text.splitlines())


def test_stages_past_the_top_merge_into_other_with_weighted_averages() -> None:
    merged = merge_stages(
        [
            stage(
                "a",
                queued=1,
                completed_1h=1,
                avg_attempts_1h=1.0,
                max_attempts_1h=1,
                oldest_ready_age_s=5.0,
                p50_s=1.0,
            ),
            stage("b", queued=2, completed_1h=3, avg_attempts_1h=3.0, max_attempts_1h=4),
        ]
    )
    assert (merged.stage, merged.queued, merged.oldest_ready_age_s) == ("other", 3, 5.0)
    assert merged.avg_attempts_1h == pytest.approx(2.5)
    assert merged.max_attempts_1h == 4
    assert merged.p50_s is None  # quantiles of different stages do not add up


def test_every_result_the_completer_confirms_has_a_label() -> None:
    from pg_pipeline.worker.completer import Settled

    assert set(RESULTS) == {s.value for s in Settled} - {"batched"}


@pytest.mark.parametrize("port", ["-1", "65536", "http"])
def test_a_metrics_port_outside_0_to_65535_is_a_usage_error(
    port: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(["worker", "--metrics-port", port])
    assert stopped.value.code == 2
    assert "--metrics-port" in capsys.readouterr().err


def test_the_metrics_port_defaults_to_off() -> None:
    assert build_parser().parse_args(["worker"]).metrics_port is None
    assert build_parser().parse_args(["worker", "--metrics-port", "9100"]).metrics_port == 9100


def test_the_metrics_endpoint_binds_loopback_unless_told_otherwise() -> None:
    assert build_parser().parse_args(["worker"]).metrics_host == "127.0.0.1"
    assert WorkerSettings().metrics_host == "127.0.0.1"
    told = build_parser().parse_args(["worker", "--metrics-host", "0.0.0.0"])
    assert told.metrics_host == "0.0.0.0"
