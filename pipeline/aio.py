"""The async API: the sync API's plans (validation and SQL, written once) run with await.

    async with await psycopg.AsyncConnection.connect(url) as conn:
        async with conn.transaction():
            job_id = await pg_pipeline.aenqueue(conn, "ocr", {"path": "in/scan.pdf"})

Each function takes what its sync counterpart takes after the connection, and behaves the
same: in the caller's transaction (commit keeps the job, rollback drops it, a savepoint's
rollback drops what was enqueued after it), validated before anything is sent.
"""

from __future__ import annotations

from pg_pipeline.enqueue import enqueue_many_plan, enqueue_once_plan, enqueue_plan
from pg_pipeline.output_versions import diff_outputs_plan, output_versions_plan
from pg_pipeline.plans import async_api
from pg_pipeline.reruns import rerun_plan
from pg_pipeline.runs import live_workers_plan, run_output_plan, run_progress_plan, run_status_plan
from pg_pipeline.waits import signal_plan

aenqueue = async_api(enqueue_plan)
aenqueue_once = async_api(enqueue_once_plan)
aenqueue_many = async_api(enqueue_many_plan)
arun_progress = async_api(run_progress_plan)
arun_output = async_api(run_output_plan)
alive_workers = async_api(live_workers_plan)
arun_status = async_api(run_status_plan)
asignal = async_api(signal_plan)
arerun = async_api(rerun_plan)
aoutput_versions = async_api(output_versions_plan)
adiff_outputs = async_api(diff_outputs_plan)
