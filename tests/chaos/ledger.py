"""What the database says happened: every job with its output and effect rows, and the tally
the chaos scenarios assert on and report."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import psycopg

Conn = psycopg.Connection[Any]

CRASH_IN_ISOLATION = "crashed its worker process (killed by SIGKILL) while running in isolation"
UNFINISHED = ("queued", "running")


@dataclass(frozen=True)
class JobRow:
    id: int
    type: str
    status: str
    attempts: int
    max_attempts: int
    claims: int
    crash_reclaims: int
    suspect: bool
    last_error: str | None
    outputs: int  # rows in job_outputs
    output_attempt: int | None
    effect_attempt: int | None
    effect_writes: int  # completions that wrote the effect; 0 for none
    effect_worker: str | None
    effect_pid: int | None
    #: The error of its latest attempt that ended in one (last_error is the last attempt's only,
    #: so a job done after a crash has none).
    attempt_error: str | None


def job_rows(conn: Conn, ids: list[int] | None = None) -> list[JobRow]:
    rows = conn.execute(
        """
        SELECT j.id, j.type, j.status, j.attempts, j.max_attempts, j.claims, j.crash_reclaims,
               j.suspect, j.last_error, coalesce(o.outputs, 0), o.attempt, e.attempt,
               coalesce(e.writes, 0), e.worker, e.pid,
               (SELECT a.error FROM pipeline.job_attempts AS a
                WHERE a.job_id = j.id AND a.error IS NOT NULL
                ORDER BY a.claims DESC LIMIT 1)
        FROM pipeline.jobs AS j
        LEFT JOIN (SELECT job_id, count(*) AS outputs, min(attempt) AS attempt
                   FROM pipeline.outputs GROUP BY job_id) AS o ON o.job_id = j.id
        LEFT JOIN chaos_effects AS e ON e.job_id = j.id
        WHERE %(ids)s::bigint[] IS NULL OR j.id = ANY(%(ids)s::bigint[])
        ORDER BY j.id
        """,
        {"ids": ids},
    ).fetchall()
    return [JobRow(*row) for row in rows]


def unfinished(conn: Conn) -> int:
    row = conn.execute(
        "SELECT count(*) FROM pipeline.jobs WHERE status = ANY(%s::text[])", (list(UNFINISHED),)
    ).fetchone()
    return int(row[0]) if row else 0


def count_done(conn: Conn) -> int:
    row = conn.execute("SELECT count(*) FROM pipeline.jobs WHERE status = 'done'").fetchone()
    return int(row[0]) if row else 0


def effect_rows(conn: Conn) -> int:
    row = conn.execute("SELECT count(*) FROM chaos_effects").fetchone()
    return int(row[0]) if row else 0


@dataclass(frozen=True)
class Tally:
    innocent: list[JobRow]
    poison: list[JobRow]

    @classmethod
    def of(cls, rows: list[JobRow], poison_type: str = "chaos_poison") -> Tally:
        return cls(
            innocent=[r for r in rows if r.type != poison_type],
            poison=[r for r in rows if r.type == poison_type],
        )

    @property
    def stuck(self) -> list[JobRow]:
        return [r for r in self.innocent + self.poison if r.status in UNFINISHED]

    @property
    def lost(self) -> list[JobRow]:
        """Innocent jobs that did not end done with exactly one output and one effect."""
        return [
            r for r in self.innocent if r.status != "done" or r.outputs != 1 or r.effect_writes != 1
        ]

    @property
    def duplicates(self) -> int:
        """Completions beyond the first: effect writes, and output rows, past one per job."""
        rows = self.innocent + self.poison
        return sum(max(0, r.effect_writes - 1) + max(0, r.outputs - 1) for r in rows)

    @property
    def charged_innocents(self) -> list[JobRow]:
        return [r for r in self.innocent if r.attempts > 1]

    @property
    def failed_innocents(self) -> list[JobRow]:
        return [r for r in self.innocent if r.status == "failed"]

    @property
    def suspects(self) -> int:
        return sum(r.suspect for r in self.innocent)

    @property
    def mismatched_attempts(self) -> list[JobRow]:
        """Done jobs whose output or effect does not come from the attempt that completed."""
        return [
            r
            for r in self.innocent
            if r.status == "done"
            and (r.output_attempt != r.attempts or r.effect_attempt != r.attempts)
        ]

    @property
    def bad_poison(self) -> list[JobRow]:
        return [
            r
            for r in self.poison
            if (r.status, r.last_error) != ("failed", CRASH_IN_ISOLATION)
            or r.outputs
            or r.effect_writes
        ]

    def check_done_exactly_once(self) -> None:
        """Every innocent job finished, done once, its output and effect from that attempt."""
        assert not self.stuck, show(self.stuck)
        assert not self.lost, "jobs not done exactly once:\n" + show(self.lost)
        assert self.duplicates == 0
        assert not self.mismatched_attempts, show(self.mismatched_attempts)

    def charged_reasons(self) -> str:
        """Why the charged innocent jobs were charged: their attempts' last errors, counted."""
        counts = Counter(
            (r.attempt_error or r.last_error or "none").splitlines()[0]
            for r in self.charged_innocents
        )
        return "; ".join(f"{n} x {reason}" for reason, n in counts.most_common())

    def states(self) -> str:
        counts = Counter(f"{r.type}:{r.status}" for r in self.innocent + self.poison)
        return ", ".join(f"{k}={v}" for k, v in sorted(counts.items()))


def show(rows: list[JobRow], limit: int = 12) -> str:
    """A few rows, for an assertion message."""
    shown = "\n".join(f"  {r}" for r in rows[:limit])
    more = f"\n  ... and {len(rows) - limit} more" if len(rows) > limit else ""
    return shown + more
