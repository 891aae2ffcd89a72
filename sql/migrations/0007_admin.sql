-- Indexes for the admin CLI (`pipeline jobs`, sql/queries_admin.sql), so that its filters stay
-- index lookups on a table of millions of finished rows. Without them, `jobs list --tenant T`
-- (and every tenant-scoped bulk change), `--status failed` and `--since 1h` each scan the
-- whole table when few rows match: 75 ms on a million small rows here, far more on real ones.

-- A tenant's jobs, newest first: every tenant-scoped admin query reads its tenant's rows alone.
-- Its price is one more index entry per new row version of a tenanted job that is not a
-- heap-only update (a claim, a completion), which the claim benchmark includes.
CREATE INDEX jobs_tenant ON jobs (tenant_id, id) WHERE tenant_id IS NOT NULL;
-- Failed and cancelled jobs by id: what `jobs list --status failed` and `jobs retry --failed`
-- look for, usually a handful among millions done. Partial, so a job enters it only when it
-- ends so, and the claim and completion of every other job pay nothing for it.
CREATE INDEX jobs_failed ON jobs (id) WHERE status IN ('failed', 'cancelled');
-- `jobs list --since`: rows are appended in the order they are created, so ranges of blocks
-- summarise created_at well, and a BRIN index is a few pages however many rows the table
-- holds and costs next to nothing per insert. 32 pages a range, not the default 128: with
-- coarser ranges the planner costs a short window as more than walking the primary key back
-- through the whole table (270 ms on a million rows) to fill a page of 20.
CREATE INDEX jobs_created ON jobs USING brin (created_at) WITH (pages_per_range = 32);
