"""The values a job can take, as the schema defines them: what every surface (the library, the
CLI, the dashboard) checks input against and offers as choices.

Kept apart from the surfaces so that the dashboard, say, need not import the CLI to know a
job's statuses.
"""

from __future__ import annotations

JOB_STATUSES = ("queued", "running", "done", "failed", "cancelled")  #: jobs_status_check
JOB_ID_MAX = 2**63 - 1  #: job ids are bigint
CAP_MAX = 2**31 - 1  #: tenant caps are integers
PRIORITY_MIN, PRIORITY_MAX = -(2**15), 2**15 - 1  #: `jobs.priority` is a smallint
#: Longest delay before a job may run (and longest duration anywhere): far beyond any real
#: schedule, and far below where timestamps overflow.
DELAY_MAX_S = 100 * 365 * 86_400
