"""The tenant slot counters, recounted from the jobs table now and then, and idle ones removed.

The triggers keep the counters right through every write to jobs but a few by hand (see the
README's tenant caps: an UPDATE of holds_slot or of tenant_slots itself, a restore, writes with
triggers disabled); the repair puts those right and says so. It also removes the counter rows
of idle pairs (nothing running, nothing queued), so that the table holds the pairs with work
rather than every pair ever seen.

A pass is a series of short transactions of SLOT_REPAIR_BATCH pairs each, in key order: a claim
or a completion never waits on the repair for longer than one batch."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from psycopg_pool import ConnectionPool

from pg_pipeline.queries import Q

log = logging.getLogger(__name__)

#: Counter rows locked per transaction: a few milliseconds' hold.
SLOT_REPAIR_BATCH = 100


@dataclass(frozen=True)
class SlotDrift:
    tenant_id: str
    stage: str
    was: int
    counted: int


@dataclass(frozen=True)
class SlotRepairReport:
    drifts: list[SlotDrift]
    removed: int  #: rows of idle pairs deleted
    batches: int


@dataclass
class SlotRepair:
    pool: ConnectionPool
    batch: int = SLOT_REPAIR_BATCH
    #: asked between batches: True ends the pass (the worker is stopping)
    stop: Callable[[], bool] | None = None

    def run_once(self) -> list[SlotDrift]:
        """One pass; the drifts it corrected."""
        return self.run_pass().drifts

    def run_pass(self) -> SlotRepairReport:
        drifts: list[SlotDrift] = []
        removed = batches = 0
        # Every real pair sorts after it: a stage name is never empty.
        after = ("", "")
        with self.pool.connection() as conn:
            while True:
                with conn.transaction():  # a batch is a transaction: its locks go at its end
                    rows = conn.execute(
                        Q["repair_slots"],
                        {"after_tenant": after[0], "after_stage": after[1], "limit": self.batch},
                    ).fetchall()
                batches += 1
                for tenant_id, stage, was, counted, gone in rows:
                    removed += gone
                    if was != counted:
                        drifts.append(SlotDrift(tenant_id, stage, was, counted))
                if len(rows) < self.batch or (self.stop is not None and self.stop()):
                    break
                after = (rows[-1][0], rows[-1][1])
        for drift in drifts:
            log.warning(
                "tenant %s, stage %s: slot counter said %d running, the jobs say %d; corrected",
                drift.tenant_id,
                drift.stage,
                drift.was,
                drift.counted,
            )
        if removed:
            log.info("removed the slot counters of %d idle tenant/stage pairs", removed)
        return SlotRepairReport(drifts, removed, batches)
