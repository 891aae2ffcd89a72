// pg-boss's side, run by the benchmark's Node.js 22.
//
//   node pg_boss.mjs worker [--batch-size N] [--local-concurrency N] [--polling S] [--burst]
//                           [--listen]
//   node pg_boss.mjs install|drain|single|bulk|wake [--n N] [--per-call N] [--interval S]
//
// The worker is one `PgBoss` instance (its pool, maintenance and supervision as shipped) with
// `work()` on the two queues: no flags is its defaults (one job per fetch, one fetching worker,
// a poll every 2 s, no LISTEN). `--listen` turns on `useListenNotify`, which wakes workers of a
// queue created with `notify: true`, as the install creates both: every enqueue then sends a
// NOTIFY, as the other libraries' do, whether workers listen or not.
// Enqueues: `send` one by one, `insert` in bulk (one statement). BENCH_DSN names the database.

import { command, enqueue, load, recordLatency, stopOn } from "./common.mjs";

const { PgBoss } = await load("pg-boss");
const dsn = process.env.BENCH_DSN;
const args = command({
  "batch-size": { type: "string" },
  "local-concurrency": { type: "string" },
  polling: { type: "string" },
  burst: { type: "boolean", default: false },
  listen: { type: "boolean", default: false },
});

/** Only the options given: what is left out stays at the library's default. */
function workOptions(values) {
  const options = {};
  if (values["batch-size"]) options.batchSize = Number(values["batch-size"]);
  if (values["local-concurrency"]) options.localConcurrency = Number(values["local-concurrency"]);
  if (values.polling) options.pollingIntervalSeconds = Number(values.polling);
  if (values.burst) options.burstWhenBatchFull = true;
  return options;
}

async function worker() {
  const boss = new PgBoss({ connectionString: dsn, useListenNotify: args.values.listen });
  boss.on("error", (error) => console.error(error));
  await boss.start();
  let ran = 0;
  const options = workOptions(args.values);
  await boss.work("noop", options, async (jobs) => {
    ran += jobs.length;
  });
  await boss.work("wake", options, async (jobs) => {
    for (const job of jobs) recordLatency(job.data.t);
    ran += jobs.length;
  });
  stopOn(() => boss.stop({ timeout: 10000 }), () => ran);
}

async function client() {
  if (args.name === "install") {
    const boss = new PgBoss({ connectionString: dsn });
    await boss.start(); // creates the schema
    await boss.createQueue("noop", { notify: true });
    await boss.createQueue("wake", { notify: true });
    await boss.stop();
    return;
  }
  // A sender only: the schema is there (the template has it) and maintenance is the workers'.
  const boss = new PgBoss({
    connectionString: dsn,
    migrate: false,
    supervise: false,
    schedule: false,
  });
  boss.on("error", (error) => console.error(error));
  await boss.start();
  try {
    await enqueue(
      args,
      (name, data) => boss.send(name, data),
      (name, payloads) => boss.insert(name, payloads.map((data) => ({ data }))),
    );
  } finally {
    await boss.stop({ graceful: false });
  }
}

await (args.name === "worker" ? worker() : client());
