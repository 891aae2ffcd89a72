"""Procrastinate's side, run by the benchmark venv's python (psycopg 3 connector).

    procrastinate --app benchmarks.compare.procrastinate_app.app worker -c N   # a worker
    python -m benchmarks.compare.procrastinate_child install|drain|single|bulk|wake ...

BENCH_DSN names the database (see procrastinate_app.py).
"""

from __future__ import annotations

import argparse
import asyncio
import time

from benchmarks.compare.child_common import paced, report, timed
from benchmarks.compare.procrastinate_app import NOOP, WAKE, app


async def command(args: argparse.Namespace) -> None:
    async with app.open_async():
        if args.command == "install":
            await app.schema_manager.apply_schema_async()
        elif args.command == "drain":  # one statement, one transaction: the drain's start
            await NOOP.batch_defer_async(*[{} for _ in range(args.n)])
            report(committed=time.time())
        elif args.command == "single":

            async def one(i: int) -> None:
                await NOOP.defer_async(i=i)

            report(seconds=await timed(args.n, one))
        elif args.command == "bulk":
            per = args.per_call

            async def many(call: int) -> None:
                await NOOP.batch_defer_async(*[{"i": call * per + k} for k in range(per)])

            report(seconds=await timed(args.n // per, many))
        elif args.command == "wake":

            async def send(t: float) -> None:
                await WAKE.defer_async(t=t)

            await paced(args.n, args.interval, send)
            report(sent=args.n)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["install", "drain", "single", "bulk", "wake"])
    parser.add_argument("--n", type=int, default=0)
    parser.add_argument("--per-call", type=int, default=1000)
    parser.add_argument("--interval", type=float, default=0.02)
    asyncio.run(command(parser.parse_args()))


if __name__ == "__main__":
    main()
