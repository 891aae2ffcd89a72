"""What a run measured, keyed by figure, library and configuration; medians over rounds."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from benchmarks.compare.cpu import Usage
from benchmarks.compare.measure import Drain, Timed, percentile


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


@dataclass
class Results:
    drains: dict[tuple[str, str], list[Drain]] = field(default_factory=lambda: defaultdict(list))
    enqueues: dict[tuple[str, str], list[Timed]] = field(default_factory=lambda: defaultdict(list))
    # per round: (p50, p95, p99) in ms
    wakes: dict[str, list[tuple[float, float, float]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    wake_usage: dict[str, list[Usage]] = field(default_factory=lambda: defaultdict(list))
    flat: dict[str, list[tuple[Drain, Drain]]] = field(default_factory=lambda: defaultdict(list))
    fairness: list[float] = field(default_factory=list)
    pgbench: list[dict[str, float]] = field(default_factory=list)
    fdatasync_us: float | None = None
    errors: list[str] = field(default_factory=list)
    not_applicable: dict[tuple[str, str], str] = field(default_factory=dict)
    # (library, figure): the workers' configuration, where a figure is not measured at defaults
    configs: dict[tuple[str, str], str] = field(default_factory=dict)

    def add_wake(self, lib: str, latencies: list[float], usage: Usage) -> None:
        self.wakes[lib].append(
            (percentile(latencies, 0.5), percentile(latencies, 0.95), percentile(latencies, 0.99))
        )
        self.wake_usage[lib].append(usage)

    def drain_median(self, lib: str, label: str) -> tuple[float, float, float]:
        """Median jobs/s, worker ms/job and Postgres ms/job of one configuration."""
        runs = self.drains.get((lib, label), [])
        return (
            median([d.jobs_s for d in runs]),
            median([d.worker_ms for d in runs]),
            median([d.postgres_ms for d in runs]),
        )

    def best(self, lib: str, labels: list[str]) -> str | None:
        """The configuration with the highest median drain rate."""
        measured = [label for label in labels if self.drains.get((lib, label))]
        return max(measured, key=lambda label: self.drain_median(lib, label)[0], default=None)

    def usages(self, lib: str | None = None) -> list[Usage]:
        """CPU readings of every measurement (of one library's, if given)."""

        def mine(key: str) -> bool:
            return lib is None or key == lib

        out = [d.usage for (name, _), runs in self.drains.items() if mine(name) for d in runs]
        out += [t.usage for (name, _), runs in self.enqueues.items() if mine(name) for t in runs]
        out += [u for name, runs in self.wake_usage.items() if mine(name) for u in runs]
        out += [
            d.usage for name, pairs in self.flat.items() if mine(name) for p in pairs for d in p
        ]
        return out
