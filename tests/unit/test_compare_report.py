"""The compare benchmark's report, rendered from results made up here: no database."""

from __future__ import annotations

from benchmarks.compare import report
from benchmarks.compare.cpu import Usage
from benchmarks.compare.measure import Drain
from benchmarks.compare.results import Results
from benchmarks.compare.sides import WorkerConfig

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
