// graphile-worker's side, run by the benchmark's Node.js 22.
//
//   node graphile_worker.mjs worker [--concurrency N] [--pool N] [--local-queue N]
//                                   [--batch-delay MS] [--refetch-delay MS]
//   node graphile_worker.mjs install|drain|single|bulk|wake [--n N] [--per-call N] [--interval S]
//
// The worker is the library's `run()` with a task list (what its CLI runs, without the task
// directory): no flags is its defaults (concurrency 1, pool 10, poll 2 s, LISTEN for new jobs,
// no local queue, one completion statement per job). Enqueues go through `makeWorkerUtils`:
// `addJob` one by one, `addJobs` in bulk. BENCH_DSN names the database.

import { command, enqueue, load, recordLatency, stopOn } from "./common.mjs";

const { run, makeWorkerUtils, runMigrations } = await load("graphile-worker");
const dsn = process.env.BENCH_DSN;
const args = command({
  concurrency: { type: "string" },
  pool: { type: "string" },
  "local-queue": { type: "string" },
  "batch-delay": { type: "string" },
  "refetch-delay": { type: "string" },
});

/** Only the options given: what is left out stays at the library's default. */
function workerOptions(values) {
  const options = { connectionString: dsn };
  if (values.concurrency) options.concurrentJobs = Number(values.concurrency);
  if (values.pool) options.maxPoolSize = Number(values.pool);
  if (values["local-queue"]) {
    options.localQueue = { size: Number(values["local-queue"]) };
    if (values["refetch-delay"]) {
      options.localQueue.refetchDelay = { durationMs: Number(values["refetch-delay"]) };
    }
  }
  if (values["batch-delay"]) {
    options.completeJobBatchDelay = Number(values["batch-delay"]);
    options.failJobBatchDelay = Number(values["batch-delay"]);
  }
  return options;
}

async function worker() {
  let ran = 0;
  const runner = await run({
    noHandleSignals: true, // stopOn() stops it gracefully and reports the count
    preset: { worker: workerOptions(args.values) },
    taskList: {
      noop: async () => {
        ran++;
      },
      wake: async (job) => {
        recordLatency(job.t);
        ran++;
      },
    },
  });
  stopOn(() => runner.stop(), () => ran);
  await runner.promise;
}

async function client() {
  if (args.name === "install") {
    await runMigrations({ connectionString: dsn });
    return;
  }
  const utils = await makeWorkerUtils({ connectionString: dsn });
  try {
    await enqueue(
      args,
      (identifier, payload) => utils.addJob(identifier, payload),
      (identifier, payloads) => utils.addJobs(payloads.map((payload) => ({ identifier, payload }))),
    );
  } finally {
    await utils.release();
  }
}

await (args.name === "worker" ? worker() : client());
