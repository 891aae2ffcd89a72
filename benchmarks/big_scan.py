"""A 400-page scanned tender end to end: time to fields, pages/min, spread, a kill, memory.

    python -m benchmarks.big_scan [--pages 400] [--seed 11] [--parallel 2] [--no-kill] [--raw]

Generates the document with `benchmarks.big_scan_doc` into a temporary directory (seeded: the
same pages every time), then submits it with the real `pipeline submit` command three times, as
three tenants (so the content hash does not merge them), each to fresh `pipeline worker`
processes on a throwaway embedded PostgreSQL (or DATABASE_URL):

1. one worker process with --parallel threads;
2. --parallel worker processes with one thread each;
3. as 2, but one worker is SIGKILLed once half of the pages are done, and a replacement starts
   at once, as a supervisor would start it.

Each run prints the time from the submit command's start to the extracted fields, pages/min
(all pages, and the OCR'd ones), the pages each worker read (the jobs table's worker_id), the
workers' and their OCR fork servers' peak RSS (VmHWM), the largest and median peak RSS of a
page's OCR child (which the page's output records), the run's CPU time and the cores the rest
of the machine kept busy meanwhile (see `benchmarks.ocr_throughput.CpuMeter`). The kill run
adds what the kill cost: the claims beyond one per page (pages begun again) and the time to
fields against run 2. With --raw, raw tesseract (`benchmarks.ocr_throughput`'s) reads every page
without a text layer first, blank ones included, with --parallel processes.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.big_scan_doc import REFERENCE, TITLE, make_big_scan
from benchmarks.ocr_throughput import CpuMeter, postmaster_pid, run_raw, tear_down
from benchmarks.polling import wait_until
from benchmarks.reset import reset
from pg_pipeline.embedded import embedded_url
from pg_pipeline.migrate import migrate

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _status_kib(pid: int, field: str) -> int | None:
    try:
        for line in (Path("/proc") / str(pid) / "status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _fork_servers(pid: int) -> list[int]:
    """The OCR fork servers among the children of process ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if ppid == pid and b"sandbox.py\0--serve" in cmdline:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@dataclass
class Worker:
    proc: subprocess.Popen[bytes]
    threads: int

    def peak_rss_kib(self) -> tuple[int | None, list[int]]:
        """The worker's VmHWM, and its fork servers' (read while they run)."""
        servers = [_status_kib(pid, "VmHWM") for pid in _fork_servers(self.proc.pid)]
        return _status_kib(self.proc.pid, "VmHWM"), [kib for kib in servers if kib is not None]


class Rig:
    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.url = os.environ.get("DATABASE_URL") or embedded_url(scratch / "pgdata")
        self.env = {
            **os.environ,
            "DATABASE_URL": self.url,
            "PIPELINE_HOME": str(scratch / "home"),
            "PIPELINE_LOG_LEVEL": "WARNING",
        }
        self.env.pop("PIPELINE_BLOB_URL", None)
        self.conn = psycopg.connect(self.url, autocommit=True)
        migrate(self.conn)
        reset(self.conn)
        self.worker_pids: dict[str, int] = {}  # pipeline_workers.id -> pid

    def start_worker(self, threads: int) -> Worker:
        before = self._scalar("SELECT count(*) FROM pipeline.workers")
        command = [str(BIN / "pipeline"), "worker", "--app", "documents"]
        proc = subprocess.Popen(
            [*command, "--concurrency", str(threads)],
            env=self.env,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
        )
        wait_until(self.conn, "SELECT count(*) FROM pipeline.workers", before + 1, 60)
        # A worker deletes its row when it stops: keep who is who for the count per worker.
        self.worker_pids.update(
            (str(wid), int(pid))
            for wid, pid in self.conn.execute("SELECT id, pid FROM pipeline.workers")
        )
        return Worker(proc, threads)

    def submit(self, pdf: Path, tenant: str) -> int:
        done = subprocess.run(
            [str(BIN / "pipeline"), "submit", str(pdf), "--tenant", tenant],
            env=self.env,
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        found = re.search(r"document (\d+)", done.stderr)
        if not found:
            raise RuntimeError(f"no document id in: {done.stderr}")
        return int(found.group(1))

    def _scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        row = self.conn.execute(sql, params).fetchone()
        return row[0] if row else None

    def pages_done(self, doc: int) -> int:
        return int(
            self._scalar(
                "SELECT count(*) FROM pipeline.outputs WHERE root_id = %s AND stage = 'ocr'", (doc,)
            )
        )

    def has_fields(self, doc: int) -> bool:
        return bool(
            self._scalar(
                "SELECT count(*) FROM pipeline.outputs WHERE root_id = %s AND stage = 'extract'",
                (doc,),
            )
        )

    def close(self) -> None:
        self.conn.close()


@dataclass
class RunResult:
    label: str
    seconds: float
    pages: int
    by_method: dict[str, int]
    per_worker: dict[int, int]  # pid -> pages read
    worker_rss_kib: dict[int, int | None]
    server_rss_kib: dict[int, list[int]]
    child_rss_max: int
    child_rss_median: int
    redone: int
    fields_ok: bool


def run_once(
    rig: Rig,
    pdf: Path,
    tenant: str,
    layout: list[int],
    *,
    kill_at: int | None = None,
) -> RunResult:
    """Submit ``pdf`` to fresh workers (``layout``: threads per worker process) and wait for
    its fields; with ``kill_at``, SIGKILL the first worker once that many pages are done and
    start a replacement."""
    workers = [rig.start_worker(threads) for threads in layout]
    rss: dict[int, int | None] = {}
    servers: dict[int, list[int]] = {}
    try:
        started = time.perf_counter()
        doc = rig.submit(pdf, tenant)
        if kill_at is not None:
            while rig.pages_done(doc) < kill_at:
                time.sleep(0.1)
            victim = workers[0]
            orphans = _fork_servers(victim.proc.pid)
            held = rig._scalar(
                "SELECT count(*) FROM pipeline.jobs j JOIN pipeline.workers w ON w.id = j.worker_id"
                " WHERE j.status = 'running' AND w.pid = %s",
                (victim.proc.pid,),
            )
            victim.proc.send_signal(signal.SIGKILL)
            victim.proc.wait()
            workers.append(rig.start_worker(victim.threads))
            print(
                f"  killed worker {victim.proc.pid} at {kill_at} pages done, holding {held} "
                "running page(s); a replacement started"
            )
            deadline = time.monotonic() + 30
            while any(map(_alive, orphans)) and time.monotonic() < deadline:
                time.sleep(0.05)
            left = [pid for pid in orphans if _alive(pid)]
            print(f"  its OCR fork server(s) {orphans}: {len(left)} still running after it died")
        while not rig.has_fields(doc):
            time.sleep(0.1)
        seconds = time.perf_counter() - started
        for worker in workers:
            if worker.proc.poll() is None:
                rss[worker.proc.pid], servers[worker.proc.pid] = worker.peak_rss_kib()
    finally:
        for worker in workers:
            if worker.proc.poll() is None:
                worker.proc.send_signal(signal.SIGTERM)
        for worker in workers:
            worker.proc.wait(timeout=120)
    failed = rig._scalar(
        "SELECT count(*) FROM pipeline.jobs WHERE coalesce(root_id, id) = %s AND status <> 'done'",
        (doc,),
    )
    if failed:
        raise RuntimeError(f"{failed} jobs of document {doc} did not end done")
    by_method: dict[str, int] = {}
    child_rss = []
    for method, peak in rig.conn.execute(
        "SELECT output->>'method', (output->>'peak_rss_bytes')::bigint FROM pipeline.outputs"
        " WHERE root_id = %s AND stage = 'ocr'",
        (doc,),
    ):
        by_method[method] = by_method.get(method, 0) + 1
        if peak is not None:
            child_rss.append(int(peak))
    per_worker = {
        rig.worker_pids.get(str(worker_id), -1): int(count)
        for worker_id, count in rig.conn.execute(
            "SELECT worker_id, count(*) FROM pipeline.jobs WHERE root_id = %s AND type = 'ocr'"
            " GROUP BY worker_id",
            (doc,),
        )
    }
    redone = int(
        rig._scalar(
            "SELECT coalesce(sum(claims - 1), 0) FROM pipeline.jobs WHERE root_id = %s AND type "
            "= 'ocr'",
            (doc,),
        )
    )
    fields = rig._scalar(
        "SELECT output FROM pipeline.outputs WHERE root_id = %s AND stage = 'extract'", (doc,)
    )
    fields_ok = (
        isinstance(fields, dict)
        and fields.get("title") == TITLE
        and fields.get("reference") == REFERENCE
    )
    return RunResult(
        label=tenant,
        seconds=seconds,
        pages=sum(by_method.values()),
        by_method=by_method,
        per_worker=per_worker,
        worker_rss_kib=rss,
        server_rss_kib=servers,
        child_rss_max=max(child_rss, default=0),
        child_rss_median=int(statistics.median(child_rss)) if child_rss else 0,
        redone=redone,
        fields_ok=fields_ok,
    )


def report(result: RunResult, description: str, cpu: tuple[float, float]) -> None:
    """Print one run; ``cpu`` is its CPU seconds and the machine's other load (cores)."""
    ocr = result.by_method.get("ocr", 0)
    print(
        f"{description}: fields after {result.seconds:.1f} s "
        f"({'right' if result.fields_ok else 'WRONG'}); "
        f"{result.pages / result.seconds * 60:.1f} pages/min, "
        f"{ocr / result.seconds * 60:.1f} OCR'd pages/min; pages by method "
        + ", ".join(f"{m} {n}" for m, n in sorted(result.by_method.items()))
    )
    print(
        f"  CPU: {cpu[0]:.0f} s ({cpu[0] / result.pages:.2f} s per page, workers, OCR children, "
        f"submit and PostgreSQL); other load {cpu[1]:.2f} cores"
    )
    spread = ", ".join(f"worker {pid}: {n}" for pid, n in result.per_worker.items())
    print(f"  pages per worker: {spread}; claims beyond one per page: {result.redone}")
    for pid, kib in result.worker_rss_kib.items():
        servers = ", ".join(f"{k / 1024:.0f}" for k in result.server_rss_kib.get(pid, []))
        worker = "?" if kib is None else f"{kib / 1024:.0f}"
        print(f"  peak RSS: worker {pid} {worker} MiB, its OCR fork server {servers or '-'} MiB")
    print(
        f"  peak RSS of a page's OCR child: max {result.child_rss_max / 2**20:.0f} MiB, "
        f"median {result.child_rss_median / 2**20:.0f} MiB"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pages", type=int, default=400)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--parallel", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--no-kill", action="store_true", help="skip the SIGKILL run")
    parser.add_argument(
        "--raw",
        action="store_true",
        help="also time raw tesseract on every page without a text layer, blank ones included",
    )
    args = parser.parse_args(argv)

    scratch = Path(tempfile.mkdtemp(prefix="pgbigscan-"))
    rig = None
    try:
        pdf = scratch / "big_scan.pdf"
        started = time.perf_counter()
        kinds = make_big_scan(pdf, args.pages, args.seed)
        counts: dict[str, int] = {}
        for kind in kinds:
            counts[kind.layout] = counts.get(kind.layout, 0) + 1
        print(
            f"{pdf.name}: {len(kinds)} pages ("
            + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
            + f"), {pdf.stat().st_size / 2**20:.0f} MiB, made in "
            f"{time.perf_counter() - started:.1f} s; parallelism {args.parallel}"
        )
        if args.raw:
            scanned = [(pdf, k.number - 1) for k in kinds if k.layout != "text_layer"]
            raw_s, raw_page_s = run_raw(scanned, args.parallel, blank_pages=True)
            print(
                f"raw tesseract, {args.parallel} processes: {len(scanned)} pages in {raw_s:.1f} s, "
                f"{len(scanned) / raw_s * 60:.1f} pages/min ({raw_page_s:.2f} s/page)"
            )
        rig = Rig(scratch)
        own = postmaster_pid(scratch / "pgdata")
        meter = CpuMeter(own)
        one = run_once(rig, pdf, "one-worker", [args.parallel])
        report(one, f"1 worker process x {args.parallel} threads", meter.stop())
        meter = CpuMeter(own)
        many = run_once(rig, pdf, "many-workers", [1] * args.parallel)
        report(many, f"{args.parallel} worker processes x 1 thread", meter.stop())
        if not args.no_kill:
            meter = CpuMeter(own)
            killed = run_once(rig, pdf, "killed", [1] * args.parallel, kill_at=len(kinds) // 2)
            report(
                killed, f"{args.parallel} worker processes x 1 thread, one SIGKILLed", meter.stop()
            )
            print(
                f"  the kill cost {killed.redone} page(s) begun again and "
                f"{killed.seconds - many.seconds:+.1f} s to fields against the run without it"
            )
    finally:
        tear_down(rig, scratch)


if __name__ == "__main__":
    main()
