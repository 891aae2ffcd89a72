"""Pages per minute: the document pipeline against raw tesseract, same pages, same parallelism.

    python -m benchmarks.ocr_throughput [--parallel N] [--processes P] [--repeat 4] [--rounds 3]

Raw: N processes, each renders a page with pypdfium2 at 300 dpi to a PGM file and runs the
`tesseract` binary on it (OMP_THREAD_LIMIT=1), as a hand-written script would.

Pipeline: P `pipeline worker` processes (1 by default) with N/P threads each serve
upload -> ocr -> extract while every
sample with scanned pages is submitted --repeat times (as different tenants, so the content
hash does not merge them). The clock runs from the first submit to the last extraction, so
the queue, the blob store, the killable child per page, text-layer pages and extraction all
count against the pipeline. Only OCR'd pages are counted on both sides. Rounds alternate raw
and pipeline so that the machine's own drift hits both; the median ratio is the result. Each
pipeline round also says how busy its slots were: the jobs' summed run time (claim to finish)
over N slots times the wall clock, so that what is lost around the jobs shows apart from what
is lost inside them. Each side's CPU time is measured too (every process of the benchmark's own
tree and its PostgreSQL: raw's pool and tesseract; the workers, their OCR children, the submits
and PostgreSQL), and how many cores the rest of the machine kept busy meanwhile ("other load",
raw / pipeline: all cores' busy time beyond the benchmark's, the hypervisor's steal included).
On a shared machine the CPU ratio and the quiet rounds say more than the wall clock of a round
that had neighbours.

Uses DATABASE_URL, or a throwaway embedded PostgreSQL.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Protocol

import psycopg
import pypdfium2 as pdfium

from benchmarks.polling import wait_until
from benchmarks.reset import reset
from pg_pipeline.embedded import embedded_url, stop_embedded
from pg_pipeline.migrate import migrate

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_docs"
DPI = 300
#: A round whose two sides each shared the machine with less than this many cores of other work
#: is "quiet": its ratio is the pipeline's, not the neighbours'.
QUIET_BELOW_CORES = 0.1


_TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def _process_table() -> dict[int, tuple[int, float]]:
    """Every process's parent and CPU seconds so far, its reaped children's included."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # gone meanwhile
            # state ppid ... utime stime cutime cstime: fields 2, 4 and 14-17 of proc(5)
            table[int(entry.name)] = (int(fields[1]), sum(map(int, fields[11:15])) * _TICK_S)
    return table


def _machine_busy_s() -> float:
    """CPU seconds all cores spent on anything but idling and waiting for I/O (steal, the time
    the hypervisor gave other guests, included), since boot."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[:8])
    return (user + nice + system + irq + softirq + steal) * _TICK_S


class CpuMeter:
    """CPU time while a round runs, split between this benchmark and the rest of the machine.

    Ours is every process in this benchmark's own process tree and in ``own`` (the PostgreSQL it
    started), a process that ended within the round counting in its parent once reaped (proc(5)'s
    cutime and cstime). The rest, the machine's "other load", is what all cores were busy with
    (/proc/stat) beyond that.
    """

    def __init__(self, own: Sequence[int] = ()) -> None:
        self.own = list(own)
        self.started = time.monotonic()
        self.ours_before = self._ours()
        self.busy_before = _machine_busy_s()

    def _ours(self) -> float:
        table = _process_table()
        ours = {os.getpid(), *self.own}
        todo = list(ours)
        children: dict[int, list[int]] = {}
        for pid, (ppid, _) in table.items():
            children.setdefault(ppid, []).append(pid)
        while todo:
            for child in children.get(todo.pop(), []):
                if child not in ours:
                    ours.add(child)
                    todo.append(child)
        return sum(cpu for pid, (_, cpu) in table.items() if pid in ours)

    def stop(self) -> tuple[float, float]:
        """CPU seconds this benchmark used, and the cores the rest kept busy on average."""
        ours = self._ours() - self.ours_before
        busy = _machine_busy_s() - self.busy_before
        return ours, max(0.0, busy - ours) / (time.monotonic() - self.started)


def postmaster_pid(pgdata: Path) -> list[int]:
    """The embedded PostgreSQL's postmaster (its first line of postmaster.pid), if any."""
    try:
        return [int((pgdata / "postmaster.pid").read_text().split()[0])]
    except (OSError, ValueError, IndexError):
        return []


def scanned_pages(pdf: Path) -> list[int]:
    """Pages without a text layer: the ones both sides send through tesseract."""
    doc = pdfium.PdfDocument(pdf)
    try:
        return [i for i in range(len(doc)) if not doc[i].get_textpage().get_text_range().strip()]
    finally:
        doc.close()


def raw_page(pdf: str, index: int) -> tuple[int, float]:
    """Render and OCR one page the plain way; returns the length of the text read and the
    seconds it took."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="raw-ocr-") as work:
        image = Path(work) / "page.pgm"
        doc = pdfium.PdfDocument(pdf)
        try:
            bitmap = doc[index].render(scale=DPI / 72, grayscale=True)
            bitmap.to_pil().save(image, format="PPM")
        finally:
            doc.close()
        out = subprocess.run(
            ["tesseract", str(image), "stdout"],
            capture_output=True,
            check=True,
            env={**os.environ, "OMP_THREAD_LIMIT": "1"},
        )
        return len(out.stdout), time.perf_counter() - started


def run_raw(
    pages: list[tuple[Path, int]], parallel: int, *, blank_pages: bool = False
) -> tuple[float, float]:
    """Wall seconds for all pages, and the mean seconds per page. Unless ``blank_pages``, a
    page tesseract reads nothing on is an error."""
    with ProcessPoolExecutor(parallel) as pool:
        list(pool.map(abs, range(parallel)))  # start the processes before the clock
        started = time.perf_counter()
        done = list(pool.map(raw_page, [str(p) for p, _ in pages], [i for _, i in pages]))
        elapsed = time.perf_counter() - started
    if not blank_pages and not all(chars for chars, _ in done):
        raise RuntimeError("raw tesseract read nothing on some page")
    return elapsed, sum(seconds for _, seconds in done) / len(done)


class Closable(Protocol):
    def close(self) -> None: ...


def tear_down(rig: Closable | None, scratch: Path) -> None:
    """Stop a benchmark's workers and its own embedded server, and remove its scratch files."""
    if rig is not None:
        rig.close()
    if not os.environ.get("DATABASE_URL") and (scratch / "pgdata").exists():
        stop_embedded(scratch / "pgdata")
    shutil.rmtree(scratch, ignore_errors=True)


class PipelineRig:
    """A migrated database and ``processes`` running `pipeline worker`s that have ``parallel``
    threads between them."""

    def __init__(self, parallel: int, scratch: Path, processes: int = 1) -> None:
        if not 1 <= processes <= parallel or parallel % processes:
            raise ValueError(f"{parallel} threads do not split evenly over {processes} workers")
        self.parallel = parallel
        self.url = os.environ.get("DATABASE_URL") or embedded_url(scratch / "pgdata")
        # The submitting side and the worker must share the blob store: the local default
        # under this scratch home.
        os.environ["PIPELINE_HOME"] = str(scratch / "home")
        os.environ.pop("PIPELINE_BLOB_URL", None)
        self.conn = psycopg.connect(self.url, autocommit=True)
        migrate(self.conn)
        reset(self.conn)
        self.workers = [
            subprocess.Popen(
                [
                    str(Path(sys.executable).parent / "pipeline"),
                    "worker",
                    "--app",
                    "documents",
                    "--concurrency",
                    str(parallel // processes),
                ],
                env={**os.environ, "DATABASE_URL": self.url, "PIPELINE_LOG_LEVEL": "WARNING"},
                cwd=REPO,
                stdin=subprocess.DEVNULL,
            )
            for _ in range(processes)
        ]
        wait_until(self.conn, "SELECT count(*) FROM pipeline.workers", processes, 60)
        self.documents = 0

    def run(
        self, docs: list[Path], repeat: int, label: str
    ) -> tuple[float, dict[str, float], float]:
        """Wall seconds from the first submit to the last extraction, each stage's mean job
        seconds (claim to finish) in this batch, and the share of slot time jobs ran in."""
        from pg_pipeline_documents.cli import (
            submit_one,  # reads PIPELINE_HOME when it first stores a blob
        )

        since = self.conn.execute("SELECT coalesce(max(id), 0) FROM pipeline.jobs").fetchone()
        first_id = since[0] if since else 0
        started = time.perf_counter()
        for r in range(repeat):
            for pdf in docs:
                submit_one(self.conn, pdf, f"{label}-{r}")
        self.documents += repeat * len(docs)
        wait_until(
            self.conn,
            "SELECT count(*) FROM pipeline.outputs WHERE stage = 'extract'",
            self.documents,
            3600,
            every=0.05,  # each poll costs CPU the OCR could use
        )
        elapsed = time.perf_counter() - started
        failed = self.conn.execute(
            "SELECT count(*) FROM pipeline.jobs WHERE status <> 'done'"
        ).fetchone()
        if failed and failed[0]:
            raise RuntimeError(f"{failed[0]} pipeline jobs did not finish as done")
        stages = {
            stage: float(mean)
            for stage, mean in self.conn.execute(
                "SELECT type, avg(extract(epoch FROM finished_at - started_at))"
                " FROM pipeline.jobs WHERE id > %s GROUP BY type",
                (first_id,),
            )
        }
        busy = self.conn.execute(
            "SELECT coalesce(sum(extract(epoch FROM finished_at - started_at)), 0)"
            " FROM pipeline.jobs WHERE id > %s",
            (first_id,),
        ).fetchone()
        return elapsed, stages, float(busy[0] if busy else 0) / (self.parallel * elapsed)

    def close(self) -> None:
        for worker in self.workers:
            worker.send_signal(signal.SIGTERM)
        for worker in self.workers:
            worker.wait(timeout=120)
        self.conn.close()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--parallel", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument(
        "--processes", type=int, default=1, help="worker processes sharing the --parallel slots"
    )
    parser.add_argument("--repeat", type=int, default=4, help="copies of each sample per round")
    parser.add_argument("--rounds", type=int, default=3, help="raw/pipeline pairs, interleaved")
    args = parser.parse_args(argv)

    docs = [pdf for pdf in sorted(SAMPLES.glob("*.pdf")) if scanned_pages(pdf)]
    pages = [(pdf, i) for _ in range(args.repeat) for pdf in docs for i in scanned_pages(pdf)]
    print(
        f"{len(pages)} scanned pages ({len(docs) * args.repeat} documents) per round at {DPI} dpi, "
        f"parallelism {args.parallel} ({args.processes} worker process(es) on the pipeline side)"
    )
    scratch = Path(tempfile.mkdtemp(prefix="pgocr-"))
    ratios = []
    quiet = []  # the ratios of rounds in which neither side shared the machine
    cpu_ratios = []  # raw's CPU time over the pipeline's, for the same pages
    rig = None
    try:
        rig = PipelineRig(args.parallel, scratch, args.processes)
        own = postmaster_pid(scratch / "pgdata")
        for n in range(args.rounds):
            meter = CpuMeter(own)
            raw_s, raw_page_s = run_raw(pages, args.parallel)
            raw_cpu, raw_load = meter.stop()
            meter = CpuMeter(own)
            pipeline_s, stage_s, busy = rig.run(docs, args.repeat, f"round{n}")
            pipeline_cpu, pipeline_load = meter.stop()
            raw_rate = len(pages) / raw_s * 60
            pipeline_rate = len(pages) / pipeline_s * 60
            ratios.append(pipeline_rate / raw_rate)
            cpu_ratios.append(raw_cpu / pipeline_cpu)
            if max(raw_load, pipeline_load) < QUIET_BELOW_CORES:
                quiet.append(ratios[-1])
            print(
                f"round {n + 1}: raw {raw_rate:.1f} pages/min ({raw_page_s:.2f} s/page), "
                f"pipeline {pipeline_rate:.1f} pages/min (job means: "
                + ", ".join(f"{stage} {sec:.2f} s" for stage, sec in sorted(stage_s.items()))
                + f"; slots busy {busy:.0%}), pipeline/raw {ratios[-1]:.2f}; "
                f"CPU per page raw {raw_cpu / len(pages):.2f} s, pipeline "
                f"{pipeline_cpu / len(pages):.2f} s; other load {raw_load:.2f} / "
                f"{pipeline_load:.2f} cores"
            )
    finally:
        tear_down(rig, scratch)
    print(f"pipeline / raw: median {statistics.median(ratios):.2f} over {len(ratios)} rounds")
    print(
        f"by CPU time (raw / pipeline, all of the pipeline's processes and PostgreSQL): median "
        f"{statistics.median(cpu_ratios):.2f}"
    )
    if quiet:
        print(
            f"pipeline / raw in the {len(quiet)} round(s) with other load below "
            f"{QUIET_BELOW_CORES} cores on both sides: median {statistics.median(quiet):.2f}"
        )


if __name__ == "__main__":
    main()
