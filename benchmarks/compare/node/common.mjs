// What the Node.js sides' scripts share: the same commands and the same JSON-lines protocol as
// the Python child scripts (benchmarks/compare/child_common.py), so the benchmark drives both
// alike.
//
// The libraries are installed outside the repository (BENCH_NODE_MODULES names that
// node_modules), so they are resolved from there rather than from this file's folder.

import { openSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";

/** Import an installed package by name from BENCH_NODE_MODULES. */
export async function load(name) {
  const require = createRequire(join(process.env.BENCH_NODE_MODULES, "_"));
  return import(pathToFileURL(require.resolve(name)).href);
}

/** One JSON object on one line of stdout: how a script answers the benchmark. */
export function report(values) {
  process.stdout.write(JSON.stringify(values) + "\n");
}

/** The command and its options, the same names as the Python children's. */
export function command(options) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      n: { type: "string", default: "0" },
      "per-call": { type: "string", default: "1000" },
      interval: { type: "string", default: "0.02" },
      ...options,
    },
  });
  return { name: positionals[0], values, n: Number(values.n) };
}

let latencyFile = null;

/** Wall-clock seconds with sub-millisecond precision (Date.now() has whole milliseconds). */
export function now() {
  return (performance.timeOrigin + performance.now()) / 1000;
}

/** Appends `now - sent` (seconds, wall clock in both processes) to BENCH_LATENCY_FILE. */
export function recordLatency(sent) {
  const received = now();
  latencyFile ??= openSync(process.env.BENCH_LATENCY_FILE, "a"); // kept open, as in Python
  writeSync(latencyFile, `${received - sent}\n`);
}

/** Seconds taken by `calls` sequential awaits of `call(i)`. */
async function timed(calls, call) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) {
    await call(i);
  }
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** Call `send(now)` every `interval` s, `samples` times, on a fixed grid (as paced() in Python). */
async function paced(samples, interval, send) {
  const start = performance.now();
  for (let i = 0; i < samples; i++) {
    const delay = start + i * interval * 1000 - performance.now();
    if (delay > 0) {
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
    await send(now());
  }
}

/** The enqueue figures' payload, as every side sends it. */
function payload(i) {
  return { i };
}

/**
 * The client commands, the same for every library: `add(task, payload)` enqueues one job (one
 * transaction), `addMany(task, payloads)` several in one statement (one transaction).
 */
export async function enqueue(args, add, addMany) {
  const many = (first, count) => Array.from({ length: count }, (_, k) => payload(first + k));
  if (args.name === "drain") {
    // One call, one transaction: its commit is the drain's start.
    await addMany("noop", many(0, args.n));
    report({ committed: now() });
  } else if (args.name === "single") {
    report({ seconds: await timed(args.n, (i) => add("noop", payload(i))) });
  } else if (args.name === "bulk") {
    const per = Number(args.values["per-call"]);
    const calls = Math.floor(args.n / per);
    report({ seconds: await timed(calls, (call) => addMany("noop", many(call * per, per))) });
  } else if (args.name === "wake") {
    await paced(args.n, Number(args.values.interval), (t) => add("wake", { t }));
    report({ sent: args.n });
  } else {
    throw new Error(`unknown command ${args.name}`);
  }
}

/**
 * Stop on SIGTERM or SIGINT as the library's own CLI would (a graceful stop), then print how
 * many jobs this process ran, so that the worker log shows the handler ran.
 */
export function stopOn(stop, counted) {
  let stopping = false;
  const handler = async () => {
    if (stopping) return;
    stopping = true;
    try {
      await stop();
    } finally {
      report({ ran: counted() });
      process.exit(0);
    }
  };
  process.on("SIGTERM", handler);
  process.on("SIGINT", handler);
}
