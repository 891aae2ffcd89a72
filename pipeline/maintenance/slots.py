"""The tenant slot counters, recounted from the jobs table now and then.

The counters cannot drift through pg-pipeline's own writes (a trigger frees a slot in the same
statement that moves a job out of running), but an operator's hand-made UPDATE of holds_slot,
or a restore from backup, could; the repair puts them right and says so."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from psycopg_pool import ConnectionPool

from pipeline.queries import Q

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SlotDrift:
    tenant_id: str
    stage: str
    was: int
    counted: int


@dataclass
class SlotRepair:
    pool: ConnectionPool

    def run_once(self) -> list[SlotDrift]:
        with self.pool.connection() as conn, conn.transaction():
            drifts = [SlotDrift(*row) for row in conn.execute(Q["repair_slots"]).fetchall()]
        for drift in drifts:
            log.warning(
                "tenant %s, stage %s: slot counter said %d running, the jobs say %d; corrected",
                drift.tenant_id,
                drift.stage,
                drift.was,
                drift.counted,
            )
        return drifts
