"""The compare benchmark's report, rendered from results made up here: no database."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from benchmarks.compare import nodejs, report
from benchmarks.compare.__main__ import make_sides
from benchmarks.compare.cpu import Usage, ahead_of_workers
from benchmarks.compare.graphile_worker_side import GraphileWorkerSide
from benchmarks.compare.measure import POLL_MOST_S, Drain, next_poll_in
from benchmarks.compare.pgboss_side import PgBossSide
from benchmarks.compare.report import MAIN
from benchmarks.compare.results import Results
from benchmarks.compare.runner import QUICK
from benchmarks.compare.server import Server
from benchmarks.compare.sides import Side, WorkerConfig

USAGE = Usage(1.0, 0.5, 0.5, 0.0, 0.0, 0.0)
CONFIGS = {
    "pg-pipeline": [WorkerConfig("1 proc", 1, default=True), WorkerConfig("2 proc", 2)],
    "PgQueuer": [WorkerConfig("batch 10", 1, default=True), WorkerConfig("batch 200", 2)],
}


def results(rates: dict[tuple[str, str], list[float]]) -> Results:
    out = Results()
    for key, values in rates.items():
        out.drains[key] = [Drain(v, 0.02, 0.03, USAGE) for v in values]
    return out


def row(lines: list[str], name: str) -> list[str]:
    line = next(x for x in lines if x.startswith(f"| {name}"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_the_best_config_is_the_highest_median_and_its_ratio_is_shown() -> None:
    measured = results(
        {
            ("pg-pipeline", "1 proc"): [30_000, 10_000, 31_000],
            ("pg-pipeline", "2 proc"): [40_000, 20_000, 21_000],  # a higher max, a lower median
            ("PgQueuer", "batch 10"): [5_000],
            ("PgQueuer", "batch 200"): [20_000],
        }
    )
    lines = report.table(measured, ["pg-pipeline", "PgQueuer"], CONFIGS)
    best = row(lines, "drain, best config")
    assert best[1].startswith("30,000 (1 proc)") and best[2].startswith("20,000 (batch 200)")
    assert best[3] == "1.50x"


def test_a_run_without_pg_pipeline_renders_without_ratios() -> None:
    measured = results({("PgQueuer", "batch 10"): [5_000], ("PgQueuer", "batch 200"): [9_000]})
    lines = report.table(measured, ["PgQueuer"], {"PgQueuer": CONFIGS["PgQueuer"]})
    assert lines[0] == "| figure | PgQueuer |"
    assert row(lines, "drain, best config")[1:] == ["9,000 (batch 200)"]


def node_sides(tmp_path: Path) -> list[Side]:
    """The Node.js sides as the benchmark makes them; making them needs no Node.js."""
    node = tmp_path / "node"
    return [GraphileWorkerSide(node, tmp_path, 2_000), PgBossSide(node, tmp_path, 2_000, 4)]


def node_results(sides: list[Side]) -> Results:
    out = Results()
    for side, rates in zip(sides, ([900, 30_000], [0.5, 15_000]), strict=True):
        for config, rate in zip(side.configs(quick=True), rates, strict=True):
            out.drains[(side.name, config.label)] = [Drain(rate, 0.02, 0.03, USAGE)]
    out.not_applicable[("graphile-worker", "flatness")] = "deletes jobs as they complete"
    out.add_wake("pg-boss", [4.0, 5.0, 6.0], USAGE)
    out.configs[("pg-boss", "wake")] = sides[1].wake_config(quick=True).label
    return out


def test_the_node_libraries_alone_render_a_report_without_ratios(tmp_path: Path) -> None:
    sides = node_sides(tmp_path)
    server = Server("postgresql:///x", None, None, "18.0", {"fsync": "on"})
    text = report.render(
        node_results(sides), sides, server, QUICK, "python -m benchmarks.compare", 1, 60.0, [], True
    )
    lines = text.splitlines()
    assert lines[0].startswith("# graphile-worker and pg-boss on one PostgreSQL")
    assert "| figure | graphile-worker | pg-boss |" in lines
    best = row(lines, "drain, best config")
    assert best[1].startswith("30,000 (2 proc") and best[2].startswith("15,000 (2 proc")
    assert row(lines, "wake latency p50")[2] == "5.00 (1 proc, useListenNotify, batch 10)"
    assert "deletes jobs as they complete" in row(lines, "drain rate with")[1]


def test_the_node_libraries_get_ratios_against_pg_pipeline(tmp_path: Path) -> None:
    sides = node_sides(tmp_path)
    measured = node_results(sides)
    measured.drains[("pg-pipeline", "2 proc")] = [Drain(36_000, 0.02, 0.03, USAGE)]
    configs = {s.name: s.configs(quick=True) for s in sides} | {"pg-pipeline": CONFIGS[MAIN]}
    lines = report.table(measured, [MAIN, "graphile-worker", "pg-boss"], configs)
    assert lines[0].endswith("| pg-pipeline ÷ graphile-worker | pg-pipeline ÷ pg-boss |")
    assert row(lines, "drain, best config")[4:] == ["1.20x", "2.40x"]


def test_a_failed_npm_install_skips_the_node_libraries_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_registry() -> Path:
        raise RuntimeError("npm ci exited 1")

    monkeypatch.setattr(nodejs, "node", no_registry)
    notes: list[str] = []
    sides = make_sides(tmp_path, QUICK, ["graphile-worker", "pg-boss"], notes)
    assert sides == []
    assert notes == ["Node.js competitors skipped: they could not be installed (npm ci exited 1)"]


def test_the_reading_thread_gets_its_own_priority_back() -> None:
    tid = threading.get_native_id()
    before = os.getpriority(os.PRIO_PROCESS, tid)
    with ahead_of_workers():
        assert os.getpriority(os.PRIO_PROCESS, tid) <= before
    assert os.getpriority(os.PRIO_PROCESS, tid) == before


def test_a_drain_is_polled_often_enough_to_time_its_end_whatever_its_start_looked_like() -> None:
    # 100 of 20,000 jobs done 22 ms in: at that rate the rest takes 4 s, but the workers were
    # only waking up; the drain may be over 0.3 s later, and a poll must see it soon after.
    assert next_poll_in(19_900, 20_000, 0.022) <= POLL_MOST_S <= 0.01
    assert next_poll_in(20_000, 20_000, 0.001) <= POLL_MOST_S
    # Near the end, at the rate so far, it looks again in half the time the rest should take.
    assert next_poll_in(300, 20_000, 0.4) == pytest.approx(0.5 * 300 / (19_700 / 0.4))
    assert next_poll_in(1, 20_000, 0.4) == 0.002
