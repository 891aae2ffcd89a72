"""Many workers on one queue: drain rate, CPU per job and server connections with 1 to 16
`pipeline worker` processes, and wake latency with 1 and with 16 idle workers listening.

    flock /tmp/bench.lock python -m benchmarks.fleet [--jobs 10000] [--rounds 2]
        [--procs 1,2,4,8,16] [--threads 8,32] [--wake-samples 300] [--quiet-pct 25] [--out F]

Uses DATABASE_URL, or an embedded PostgreSQL in a scratch directory (fsync on), and the compare
benchmark's machinery: a fresh database per measurement, workers started, left to go idle,
then `--jobs` no-op jobs inserted in one transaction; the clock runs from its commit to no job
left; CPU is read from /proc over the same span (workers' trees, Postgres less the benchmark's
own backends), with the machine's other load beside it. Rounds rotate the configurations'
order, so a drift of the shared machine's speed falls on all of them alike.

Connections. A sampler (its own backend, not counted) reads pg_stat_activity every 20 ms and
keeps, per configuration, the connections of the workers (application_name `pg-pipeline ...`)
when idle and at their peak during the drain, by role, and the wait events of their active
backends (the evidence when a configuration is slower than a smaller one).

What one worker process holds (pipeline/worker/worker.py, pipeline/db.py):
- one connection each for the claim loop and the acknowledger (`pg-pipeline worker`, pools
  of one), and a shared pool (`pg-pipeline worker`) of min 1, max `concurrency + 5`
  connections: a runner thread each (used only by stages that read or write outputs; a no-op
  job touches none), the heartbeat, the locked-rows completer, the timeouts thread, and two
  maintenance threads (reclaim, dead-worker pruning and the scheduler on one; slot repair, and
  retention with `--retention`, on the other). psycopg_pool opens connections as threads wait
  for one and closes idle ones after 10 minutes, so what a worker holds is what its threads
  use at once, not the maximum;
- one listener connection of its own (`pg-pipeline listener`, not pooled: LISTEN holds it);
- at start, briefly, one connection for the schema check and one to probe for a pooler;
- an isolated stage's child process opens a pool of its own (max 2) for the job's time.
The report gives the measured counts; docs/connections.md turns them into a sizing rule.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from benchmarks.compare import measure, server
from benchmarks.compare.cpu import Usage
from benchmarks.compare.measure import percentile
from benchmarks.compare.pgpipeline_side import PgPipelineSide
from benchmarks.compare.report import fmt
from benchmarks.compare.results import Results
from benchmarks.compare.runner import FULL, Runner, add_quiet_pct, say
from benchmarks.compare.sides import WorkerConfig

#: Sixteen interpreters importing pg-pipeline on two shared cores take a while to go idle.
IDLE_MOST_S = 300
SAMPLE_EVERY_S = 0.02
#: A drain's CPU figures are kept when its first reading ended within this share of it.
MAX_MISSED = 0.1
#: The roles of a worker's connections, by the application_name pipeline/db.py gives them.
ROLES = {
    "pg-pipeline worker": "pool",
    "pg-pipeline listener": "listener",
    "pg-pipeline probe": "probe",
    "pg-pipeline": "schema check",
    "pg-pipeline isolated job": "isolated job",
}


@dataclass(frozen=True)
class Config:
    processes: int
    threads: int  # --concurrency of each process

    @property
    def label(self) -> str:
        return f"{self.processes} proc x c={self.threads}"

    def workers(self) -> WorkerConfig:
        return WorkerConfig(self.label, self.processes, ("--concurrency", str(self.threads)))


def role(application_name: str) -> str | None:
    """The role of a pg-pipeline connection (None: not one of a worker's)."""
    return ROLES.get(application_name)


@dataclass
class Activity:
    """What the sampler saw of the workers' connections over a span."""

    idle: Counter[str] = field(default_factory=Counter)  # per role, the moment the span began
    peak: Counter[str] = field(default_factory=Counter)  # per role, when the total was highest
    waits: Counter[str] = field(default_factory=Counter)  # active backends' wait events
    active_samples: int = 0  # active backends seen, summed over samples
    most_active: int = 0  # the most active at once: what a transaction pooler must serve

    @property
    def peak_total(self) -> int:
        return sum(self.peak.values())

    def top_waits(self, n: int = 3) -> str:
        """The commonest wait events of active backends, as shares of all active sightings."""
        if not self.active_samples:
            return ""
        return ", ".join(
            f"{name} {100 * count / self.active_samples:.0f} %"
            for name, count in self.waits.most_common(n)
        )


def tally(rows: list[tuple[str, str, str | None, str | None]], into: Activity) -> Counter[str]:
    """One pg_stat_activity sample (application_name, state, wait_event_type, wait_event):
    adds the active backends' wait events to `into` and returns the connections per role.
    An active backend with no wait event is on the CPU (or waiting for it)."""
    roles: Counter[str] = Counter()
    active = 0
    for app, state, wait_type, wait_event in rows:
        kind = role(app)
        if kind is None:
            continue
        roles[kind] += 1
        if state == "active":
            active += 1
            into.waits[f"{wait_type}:{wait_event}" if wait_type else "CPU"] += 1
    into.active_samples += active
    into.most_active = max(into.most_active, active)
    return roles


class Sampler:
    """Reads pg_stat_activity of one database every SAMPLE_EVERY_S on a thread of its own."""

    SQL = (
        "SELECT application_name, state, wait_event_type, wait_event FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        " AND backend_type = 'client backend'"
    )

    def __init__(self, url: str) -> None:
        self._conn = psycopg.connect(url, autocommit=True, application_name="fleet sampler")
        self.pid = int(server.scalar(self._conn, "SELECT pg_backend_pid()"))
        self.activity = Activity()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sampler", daemon=True)

    def sample(self, into: Activity) -> Counter[str]:
        return tally(self._conn.execute(self.SQL).fetchall(), into)

    def __enter__(self) -> Sampler:
        # The idle moment's wait events (ClientRead, Listen) are not the drain's: not kept.
        self.activity.idle = self.sample(Activity())
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY_S):
            now = self.sample(self.activity)
            if sum(now.values()) > self.activity.peak_total:
                self.activity.peak = now

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._conn.close()


@dataclass
class FleetDrain:
    drain: measure.Drain
    activity: Activity


def drain(srv: server.Server, side: PgPipelineSide, config: Config, n: int) -> FleetDrain:
    """measure.drain, with the sampler watching."""
    samplers: list[Sampler] = []

    def watch(url: str) -> Sampler:
        samplers.append(Sampler(url))
        return samplers[-1]

    result = measure.drain(srv, side, config.workers(), n, idle_most_s=IDLE_MOST_S, watch=watch)
    return FleetDrain(result, samplers[-1].activity)


@dataclass
class Wake:
    p50: float
    p99: float
    worker_ms: float  # worker CPU per wake job: every idle worker hears every notification
    postgres_ms: float
    usage: Usage


def wake(
    srv: server.Server, side: PgPipelineSide, processes: int, samples: int, scratch: Path
) -> Wake:
    config = WorkerConfig(f"{processes} proc, no flags (c=8)", processes)
    values, usage = measure.wake(srv, side, config, samples, 0.02, scratch, idle_most_s=IDLE_MOST_S)
    return Wake(
        percentile(values, 0.5),
        percentile(values, 0.99),
        1000 * usage.worker_s / samples,
        1000 * usage.postgres_s / samples,
        usage,
    )


def collapses(rates: dict[Config, list[float]]) -> list[tuple[Config, Config]]:
    """(bigger, smaller) pairs where a configuration with at least as many processes and
    threads, and more of one, drained slower than the smaller one by more than the noise: its
    fastest run below the smaller one's slowest (with one run each, any shortfall counts)."""
    found = []
    for big, big_rates in rates.items():
        for small, small_rates in rates.items():
            more = big.processes >= small.processes and big.threads >= small.threads
            measured = big_rates and small_rates
            if more and big != small and measured and max(big_rates) < min(small_rates):
                found.append((big, small))
    return sorted(found, key=lambda pair: (pair[0].processes, pair[0].threads))


def on_time(runs: list[FleetDrain]) -> list[measure.Drain]:
    """The drains whose first CPU reading ended within MAX_MISSED of the drain: the others'
    CPU per job is too low (and their other load too high) to keep."""
    return [d.drain for d in runs if d.drain.cpu_missed <= MAX_MISSED]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def render(
    srv: server.Server,
    drains: dict[Config, list[FleetDrain]],
    wakes: dict[int, list[Wake]],
    command: str,
    args: argparse.Namespace,
    errors: list[str],
) -> str:
    other = [d.usage.other_busy_pct for runs in drains.values() for d in on_time(runs)]
    other += [w.usage.other_busy_pct for runs in wakes.values() for w in runs]
    lines = [
        f"Command: `{command}`; {args.rounds} round(s), medians [min-max].",
        f"PostgreSQL {srv.version} ({'embedded' if srv.pgdata else 'DATABASE_URL'}), "
        + ", ".join(f"{k}={v}" for k, v in srv.settings.items())
        + "; 2 CPUs shared by Postgres, the workers, the benchmark and other sessions.",
        f"Other load on the machine during the measurements: median {fmt(median(other))} % "
        f"of all cores (max {fmt(max(other, default=float('nan')))} %).",
        "",
        f"**Drain** ({args.jobs:,} no-op jobs per drain; connections are the workers', from "
        "pg_stat_activity: idle before the jobs, and the highest total seen during the drain, "
        "as pool + listener; CPU per job and other load from the drains whose first CPU reading "
        "ended within 10 % of the drain, the CPU read late column counts the others; "
        "most active: the most worker backends seen running a statement in one "
        "sample; waits: the active worker backends' wait events, CPU = none)",
        "",
        "| config | jobs/s | worker ms/job | Postgres ms/job | connections idle | "
        "connections peak | peak per process | most active at once | active backends' waits "
        "| other load % | CPU read late |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for config, runs in drains.items():
        if not runs:
            continue
        jobs_s = [d.drain.jobs_s for d in runs]
        peak = max(runs, key=lambda d: d.activity.peak_total).activity
        idle = runs[0].activity.idle
        waits = max(runs, key=lambda d: d.activity.active_samples).activity.top_waits()
        lines.append(
            f"| {config.label} | {fmt(median(jobs_s))} [{fmt(min(jobs_s))}-{fmt(max(jobs_s))}] | "
            f"{fmt(median([d.worker_ms for d in on_time(runs)]))} | "
            f"{fmt(median([d.postgres_ms for d in on_time(runs)]))} | {split(idle)} | "
            f"{split(peak.peak)} | "
            f"{peak.peak_total / config.processes:.1f} | "
            f"{max(d.activity.most_active for d in runs)} | {waits} | "
            f"{fmt(median([d.usage.other_busy_pct for d in on_time(runs)]))} | "
            f"{sum(d.drain.cpu_missed > MAX_MISSED for d in runs)} of {len(runs)} |"
        )
    rates = {c: [d.drain.jobs_s for d in runs] for c, runs in drains.items()}
    found = collapses(rates)
    lines += ["", "**Collapse check** (a configuration with more processes or threads whose "]
    lines[-1] += "fastest drain is below a smaller one's slowest): "
    lines[-1] += (
        "; ".join(f"{big.label} below {small.label}" for big, small in found) if found else "none"
    )
    lines += [
        "",
        f"**Wake latency** ({args.wake_samples} jobs, one every 20 ms, into idle worker "
        "processes at their defaults; enqueue call to the stage's first line)",
        "",
        "| idle workers | p50 ms | p99 ms | worker CPU per wake (ms) | Postgres CPU per wake (ms) "
        "| other load % |",
        "|---|---|---|---|---|---|",
    ]
    for processes, woken in wakes.items():
        if woken:
            lines.append(
                f"| {processes} | {fmt(median([w.p50 for w in woken]))} | "
                f"{fmt(median([w.p99 for w in woken]))} | "
                f"{fmt(median([w.worker_ms for w in woken]))} | "
                f"{fmt(median([w.postgres_ms for w in woken]))} | "
                f"{fmt(median([w.usage.other_busy_pct for w in woken]))} |"
            )
    if errors:
        lines += ["", "**Failed measurements**", "", *(f"- {e}" for e in errors)]
    return "\n".join(lines) + "\n"


def split(roles: Counter[str]) -> str:
    """'17 (16 + 1 listener)': the total, then the pool and listener, then anything else."""
    rest = sum(roles.values()) - roles["pool"] - roles["listener"]
    tail = f" + {rest} other" if rest else ""
    return f"{sum(roles.values())} ({roles['pool']} + {roles['listener']}{tail})"


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fleet")
    parser.add_argument("--jobs", type=int, default=10_000, help="jobs per drain")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--procs", default="1,2,4,8,16", help="worker processes, comma-separated")
    parser.add_argument("--threads", default="8,32", help="--concurrency values, comma-separated")
    parser.add_argument("--wake-procs", default="1,16", help="idle workers for the wake figure")
    parser.add_argument("--wake-samples", type=int, default=300)
    add_quiet_pct(parser)
    parser.add_argument("--out", type=Path, help="also write the markdown report here")
    return parser.parse_args()


def numbers(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main() -> None:
    args = parse()
    configs = [Config(p, t) for p in numbers(args.procs) for t in numbers(args.threads)]
    scratch = Path(tempfile.mkdtemp(prefix="pgfleet-"))
    srv = server.start(scratch)
    side = PgPipelineSide(scratch, args.jobs)
    side.prefix = "fleet"
    runner = Runner(srv, FULL, Results(), scratch, False, args.quiet_pct)
    drains: dict[Config, list[FleetDrain]] = {c: [] for c in configs}
    wakes: dict[int, list[Wake]] = {p: [] for p in numbers(args.wake_procs)}
    command = " ".join(["python -m benchmarks.fleet", *sys.argv[1:]])

    def one_drain(config: Config) -> None:
        result = drain(srv, side, config, args.jobs)
        drains[config].append(result)
        d, act = result.drain, result.activity
        say(
            f"  {d.jobs_s:,.0f} jobs/s, worker {d.worker_ms:.3f} ms/job, postgres "
            f"{d.postgres_ms:.3f} ms/job, connections idle {split(act.idle)} peak "
            f"{split(act.peak)}, {act.most_active} active at most; waits {act.top_waits()}; "
            f"other load {d.usage.other_busy_pct:.1f} %; first CPU reading ended "
            f"{100 * d.cpu_missed:.0f} % into the drain"
        )

    def one_wake(processes: int) -> None:
        result = wake(srv, side, processes, args.wake_samples, scratch)
        wakes[processes].append(result)
        say(
            f"  p50 {result.p50:.2f} ms, p99 {result.p99:.2f} ms, worker {result.worker_ms:.3f} "
            f"ms per wake, other load {result.usage.other_busy_pct:.1f} %"
        )

    try:
        side.install(srv.make_template(side.template))
        srv.seal_template(side.template)
        say(f"PostgreSQL {srv.version} {srv.settings}")
        text = ""
        for r in range(args.rounds):
            shift = r * len(configs) // max(1, args.rounds)
            for config in configs[shift:] + configs[:shift]:
                runner.attempt(f"round {r + 1}: drain {config.label}", one_drain, config)
            for processes in wakes:
                runner.attempt(f"round {r + 1}: wake, {processes} idle", one_wake, processes)
            text = render(srv, drains, wakes, command, args, runner.results.errors)
            if args.out:  # after every round, so that a run cut short still leaves figures
                args.out.write_text(text)
        print(text)
    finally:
        try:
            srv.stop([side.template])
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
