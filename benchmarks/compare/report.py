"""The markdown report: absolute figures, ratios to each competitor, sweeps, references."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from datetime import UTC, datetime

from benchmarks.compare.results import Results, median
from benchmarks.compare.runner import Sizes
from benchmarks.compare.server import Server, run_quiet
from benchmarks.compare.sides import Side, WorkerConfig
from benchmarks.compare.venv import REPO

MAIN = "pg-pipeline"
Cell = tuple[float, str]  # a value and a note (the configuration it was measured with)


def fmt(value: float) -> str:
    if math.isnan(value):
        return "n/a"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}" if abs(value) >= 0.1 else f"{value:.3f}"


def ratio(a: float, b: float) -> str:
    if math.isnan(a) or math.isnan(b) or b == 0:
        return "n/a"
    return f"{a / b:.2f}x"


def table(results: Results, libs: list[str], configs: dict[str, list[WorkerConfig]]) -> list[str]:
    """The summary table: one row per figure, one column per library, then the ratios."""
    others = [lib for lib in libs if lib != MAIN]
    head = ["figure", *libs, *(f"{MAIN} ÷ {o}" for o in others if MAIN in libs)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def row(name: str, cell: Callable[[str], Cell], compare: bool = True) -> None:
        cells = {lib: cell(lib) for lib in libs}
        shown = [fmt(v) + (f" ({note})" if note else "") for v, note in cells.values()]
        ratios = []
        if MAIN in libs:
            ratios = [ratio(cells[MAIN][0], cells[o][0]) if compare else "" for o in others]
        lines.append("| " + " | ".join([name, *shown, *ratios]) + " |")

    def default_label(lib: str) -> str:
        return next(c.label for c in configs[lib] if c.default)

    def best_label(lib: str) -> str:
        return results.best(lib, [c.label for c in configs[lib]]) or default_label(lib)

    def drain_cell(pick: Callable[[str], str], index: int) -> Callable[[str], Cell]:
        def cell(lib: str) -> Cell:
            label = pick(lib)
            return results.drain_median(lib, label)[index], label if index == 0 else ""

        return cell

    def machine(pick: Callable[[str], str]) -> Callable[[str], Cell]:
        def cell(lib: str) -> Cell:
            _, worker, pg = results.drain_median(lib, pick(lib))
            return worker + pg, ""

        return cell

    def enqueue(kind: str) -> Callable[[str], Cell]:
        return lambda lib: (median([t.value for t in results.enqueues.get((lib, kind), [])]), "")

    def wake(i: int) -> Callable[[str], Cell]:
        def cell(lib: str) -> Cell:
            note = results.configs.get((lib, "wake"), "") if i == 0 else ""
            return median([w[i] for w in results.wakes.get(lib, [])]), note

        return cell

    def flat(lib: str) -> Cell:
        if (lib, "flatness") in results.not_applicable:
            return float("nan"), results.not_applicable[(lib, "flatness")]
        pairs = results.flat.get(lib, [])
        ratio = median([full.jobs_s / empty.jobs_s for empty, full in pairs])
        return ratio, results.configs.get((lib, "flatness"), "")

    def fair(lib: str) -> Cell:
        if lib != MAIN:
            return float("nan"), "no tenant concept"
        return median(results.fairness), ""

    def load(lib: str) -> Cell:
        others = [u.other_busy_pct for u in results.usages(lib)]
        return median(others), f"max {max(others):.0f} %" if others else ""

    row("drain, defaults (jobs/s) ↑", drain_cell(default_label, 0))
    row("drain, best config (jobs/s) ↑", drain_cell(best_label, 0))
    row("worker CPU per job, defaults (ms) ↓", drain_cell(default_label, 1))
    row("worker CPU per job, best config (ms) ↓", drain_cell(best_label, 1))
    row("Postgres CPU per job, defaults (ms) ↓", drain_cell(default_label, 2))
    row("Postgres CPU per job, best config (ms) ↓", drain_cell(best_label, 2))
    row("worker + Postgres CPU per job, best config (ms) ↓", machine(best_label))
    row("enqueue one by one (jobs/s) ↑", enqueue("single"))
    row("enqueue bulk, 1,000 per call (jobs/s) ↑", enqueue("bulk"))
    row("wake latency p50 (ms) ↓", wake(0))
    row("wake latency p95 (ms) ↓", wake(1))
    row("wake latency p99 (ms) ↓", wake(2))
    row("drain rate with 1M finished rows ÷ empty, defaults ↑", flat)
    row("fairness: B's p99 wait behind A's import (ms) ↓", fair)
    row("other load on the machine during its measurements (% of all cores)", load, False)
    return lines


def sweeps(results: Results, libs: list[str], configs: dict[str, list[WorkerConfig]]) -> list[str]:
    """Per library, every configuration's drain: rate (median, min-max), CPU, other load."""
    lines: list[str] = []
    for lib in libs:
        lines += [
            "",
            f"**{lib} drain sweep** (jobs/s median [min-max]; CPU per job; machine CPU busy "
            "outside the benchmark, % of all cores; 1-min loadavg before → after)",
            "",
            "| config | jobs/s | worker ms/job | Postgres ms/job | other load % | loadavg |",
            "|---|---|---|---|---|---|",
        ]
        for config in configs[lib]:
            runs = results.drains.get((lib, config.label), [])
            if not runs:
                continue
            rate, worker, pg = results.drain_median(lib, config.label)
            spread = f"[{fmt(min(d.jobs_s for d in runs))}-{fmt(max(d.jobs_s for d in runs))}]"
            other = fmt(median([d.usage.other_busy_pct for d in runs]))
            load = ", ".join(f"{d.usage.load_before:.2f} → {d.usage.load_after:.2f}" for d in runs)
            name = config.label + (" *(defaults)*" if config.default else "")
            lines.append(
                f"| {name} | {fmt(rate)} {spread} | {fmt(worker)} | {fmt(pg)} | {other} | {load} |"
            )
    return lines


def references(results: Results) -> list[str]:
    lines = ["", "**Physical references on the same server**", ""]
    if results.pgbench:
        labels = list(results.pgbench[0])
        tps = ", ".join(
            f"{label}: {fmt(median([r[label] for r in results.pgbench]))} tps" for label in labels
        )
        lines.append(f"- pgbench single-row UPDATE (scale 1, median of rounds): {tps}")
    if results.fdatasync_us is not None:
        lines.append(f"- fdatasync of an 8 kB write (pg_test_fsync): {results.fdatasync_us:.0f} µs")
    usages = results.usages()
    if usages:
        others = [u.other_busy_pct for u in usages]
        lines.append(
            f"- other load during the {len(usages)} measurements: machine CPU busy outside the "
            f"benchmark's processes median {median(others):.1f} %, max {max(others):.1f} % of "
            f"all cores; 1-min loadavg from {min(u.load_before for u in usages):.2f} to "
            f"{max(u.load_after for u in usages):.2f}"
        )
    return lines


def revision() -> str:
    """The commit measured, and whether pipeline/ or sql/ differ from it (work in progress)."""
    try:
        head = run_quiet(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"]).stdout.strip()
        dirty = run_quiet(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "pipeline", "sql"]
        ).stdout.strip()
    except (OSError, RuntimeError):
        return "unknown revision"
    return f"pg-pipeline at {head}" + (
        " with uncommitted changes in pipeline/ or sql/" if dirty else ""
    )


def listing(names: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    if not names:
        return "no library"
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def render(
    results: Results,
    sides: list[Side],
    srv: Server,
    sizes: Sizes,
    command: str,
    rounds: int,
    seconds: float,
    notes: list[str],
    quick: bool,
) -> str:
    """The whole report, as markdown."""
    libs = [s.name for s in sides]
    configs = {s.name: s.configs(quick) for s in sides}
    where = "DATABASE_URL" if os.environ.get("DATABASE_URL") else "embedded"
    settings = ", ".join(f"{k}={v}" for k, v in srv.settings.items())
    fewer = [f"{s.drain_jobs:,} for {s.name}" for s in sides if s.drain_jobs != sizes.drain]
    exceptions = f" ({'; '.join(fewer)})" if fewer else ""
    header = [
        f"# {listing(libs)} on one PostgreSQL ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"Command: `{command}`; {rounds} round(s), medians; {seconds:.0f} s in all; {revision()}.",
        f"PostgreSQL {srv.version} ({where}), {settings}; {os.cpu_count()} CPUs shared by "
        "Postgres, the workers and the benchmark. A fresh database per library per measurement.",
        "",
        f"Drains: {sizes.drain:,} no-op jobs{exceptions}"
        " inserted in one transaction into idle workers (a configuration that says otherwise "
        "drains fewer); wall clock from its commit to no job left (polled, the same way for "
        "every library); CPU from /proc over the same span. Enqueue: "
        f"{sizes.single:,} jobs one per call, {sizes.bulk:,} at {sizes.per_call:,} per call, "
        "each with the payload {'i': n} (JSON; pg-pipeline validates it against its model). "
        f"Wake: {sizes.wake} jobs, one every {sizes.wake_interval * 1000:.0f} ms, into one idle "
        "worker process at its defaults (or the configuration noted), enqueue call to job "
        "function (the wall clock in both). Flatness: the defaults' drain (or the configuration "
        f"noted) with {sizes.finished:,} finished rows / an empty table, four drains "
        "a round (empty, full, full, empty), the median of all pairs. ↑ higher is better, "
        "↓ lower is better; ratios are pg-pipeline / the other.",
        "",
    ]
    body = table(results, libs, configs) + sweeps(results, libs, configs) + references(results)
    tail = ["", "**Configurations and caveats**", ""]
    tail += [f"- {n}" for s in sides for n in s.notes] + [f"- {n}" for n in notes]
    tail += [
        f"- not applicable: {lib} {figure}: {why}"
        for (lib, figure), why in results.not_applicable.items()
    ]
    tail += [f"- error: {e}" for e in results.errors]
    return "\n".join(header + body + tail) + "\n"
