"""The values a job (and a run) can take, as the schema defines them: what every surface (the
library, the CLI, the dashboard) checks input against and offers as choices.

Kept apart from the surfaces so that the dashboard, say, need not import the CLI to know a
job's statuses.
"""

from __future__ import annotations

#: active_jobs_status_check and job_history_status_check
JOB_STATUSES = ("queued", "running", "waiting", "done", "failed", "cancelled")
#: A run's statuses (pipeline.runs.status); 'waiting' is reserved for durable waits.
RUN_STATUSES = ("running", "waiting", "done", "failed", "cancelled")
JOB_ID_MAX = 2**63 - 1  #: job ids are bigint
CAP_MAX = 2**31 - 1  #: tenant caps are integers
PRIORITY_MIN, PRIORITY_MAX = -(2**15), 2**15 - 1  #: `jobs.priority` is a smallint
#: Longest delay before a job may run (and longest duration anywhere): far beyond any real
#: schedule, and far below where timestamps overflow.
DELAY_MAX_S = 100 * 365 * 86_400
#: Longest tenant id, in bytes of UTF-8. A tenant id is a key of btree indexes (jobs_ready beside
#: the stage name, tenant_caps, tenant_slots), whose entries PostgreSQL refuses past about 2,700
#: bytes (a third of a page): 512 leaves room for the rest of the entry, and for a submitted
#: document's dedup key, which is its tenant id and a SHA-256.
TENANT_ID_MAX_BYTES = 512
#: The key of a rate limit declared without one, which every job shares; as a key of
#: pipeline.rate_limits, the limit's default capacity, for the keys without one of their own.
ONE_KEY = "*"
#: Longest dedup key, in bytes of UTF-8: jobs_dedup indexes it beside the stage name. A longer
#: natural key fits as a hash of it (a SHA-256 in hex is 64 bytes).
DEDUP_KEY_MAX_BYTES = 1024
