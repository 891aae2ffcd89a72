-- The claim's picks start at the head its first probe found, not at the start of the group.
--
-- A claim probes each (stage, tenant) group for its best ready job, then picks up to its share
-- in the same index order. While jobs are being taken faster than vacuum runs, the ready
-- indexes hold an entry for every job taken since the last vacuum, all in front of the head:
-- both the probe and the pick stepped over them, 0.12 ms a scan with 20,000 of them and more
-- as a backlog drains. The pick now starts at the head's keys (a btree bound on
-- (priority, run_after, id) at the head's priority), then takes lower priorities, so the dead
-- entries are stepped over once a claim. A job that was enqueued ahead of the head after the
-- probe is left to the next claim, as a job enqueued after the claim is.
--
-- Tenants: the skip from one tenant to the next already lands on the next tenant's first
-- entry, which is its head unless that job is not due yet; the head is probed for separately
-- only then. Before, every tenant was probed twice (skip, then head).
ALTER TYPE pipeline_claim_group
    ADD ATTRIBUTE head_priority smallint,
    ADD ATTRIBUTE head_run_after timestamptz,
    ADD ATTRIBUTE head_id bigint;

-- The claim's new body is in sql/functions/ (pipeline_claim_groups, pipeline_claim_pick), which
-- pipeline/migrate.py applies after the migrations.
