"""PgQueuer's side, run by the benchmark venv's python (asyncpg driver, uvloop under `pgq run`).

    python -m benchmarks.compare.pgqueuer_child worker [--batch-size N]   # a worker
    python -m benchmarks.compare.pgqueuer_child install|drain|single|bulk|wake ...

The worker is what `pgq run benchmarks.compare.pgqueuer_child:create` runs: `pgqueuer.run` on
uvloop, with the CLI's defaults (batch 10, dequeue timeout 30 s). The CLI itself is not used:
pgq 1.6 with typer 0.29 fails on its own default `--log-level` (a str where it wants the enum).

BENCH_DSN names the database. The worker is built the way PgQueuer's docs show: a `PgQueuer`
over one asyncpg connection, entrypoints with no concurrency limit.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg  # type: ignore[import-not-found]
import pgqueuer  # type: ignore[import-not-found]
import uvloop  # type: ignore[import-not-found]
from pgqueuer.db import AsyncpgDriver  # type: ignore[import-not-found]
from pgqueuer.queries import Queries  # type: ignore[import-not-found]

from benchmarks.compare.child_common import Latencies, paced, report, timed

LATENCIES = Latencies()


async def noop(job: Any) -> None:
    return None


async def wake(job: Any) -> None:
    LATENCIES.record(json.loads(job.payload)["t"])


def payload(i: int) -> bytes:
    """The enqueue figures' payload, as every side sends it: {"i": i}."""
    return json.dumps({"i": i}).encode()


@asynccontextmanager
async def create() -> AsyncIterator[Any]:
    """The factory `pgq run` calls."""
    conn = await asyncpg.connect(os.environ["BENCH_DSN"])
    try:
        pgq = pgqueuer.PgQueuer(AsyncpgDriver(conn))
        pgq.entrypoint("noop")(noop)
        pgq.entrypoint("wake")(wake)
        yield pgq
    finally:
        await conn.close()


async def command(args: argparse.Namespace) -> None:
    if args.command == "worker":  # SIGTERM stops it, as under `pgq run`
        await pgqueuer.run(create, batch_size=args.batch_size)
        return
    conn = await asyncpg.connect(os.environ["BENCH_DSN"])
    queries = Queries(AsyncpgDriver(conn))
    try:
        if args.command == "install":
            await queries.install()
        elif args.command == "drain":  # one statement, one transaction: the drain's start
            await queries.enqueue(["noop"] * args.n, [None] * args.n, [0] * args.n)
            report(committed=time.time())
        elif args.command == "single":

            async def one(i: int) -> None:
                await queries.enqueue("noop", payload(i))

            report(seconds=await timed(args.n, one))
        elif args.command == "bulk":
            per = args.per_call

            async def many(call: int) -> None:
                first = call * per
                payloads = [payload(i) for i in range(first, first + per)]
                await queries.enqueue(["noop"] * per, payloads, [0] * per)

            report(seconds=await timed(args.n // per, many))
        elif args.command == "wake":

            async def send(t: float) -> None:
                await queries.enqueue("wake", json.dumps({"t": t}).encode())

            await paced(args.n, args.interval, send)
            report(sent=args.n)
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["worker", "install", "drain", "single", "bulk", "wake"])
    parser.add_argument("--batch-size", type=int, default=10)
    parser.add_argument("--n", type=int, default=0)
    parser.add_argument("--per-call", type=int, default=1000)
    parser.add_argument("--interval", type=float, default=0.02)
    uvloop.run(command(parser.parse_args()))


if __name__ == "__main__":
    main()
