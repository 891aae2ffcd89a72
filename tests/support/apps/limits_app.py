"""Stages with rate limits (pipeline/limits.py), for the limits' integration and acceptance
tests."""

from __future__ import annotations

from pydantic import BaseModel

from pg_pipeline import Context, Limit, stage

#: the limits these stages are charged against; the tests set their capacities
UNITS = "test-units"
CALLS = "test-calls"


class Call(BaseModel):
    n: int = 0
    key: str = "k"
    units: int = 1
    used: float | None = None  # what the run reports it really used, when anything


@stage(
    "limited",
    lease=30,
    max_attempts=50,
    backoff_base=0.01,
    backoff_cap=0.01,
    limits=[Limit(UNITS, key=Limit.field("key"), units=Limit.field("units"), actual="used")],
)
def limited(job: Call, ctx: Context) -> None:
    """Charged its payload's units against its payload's key; reports `used` when given."""
    if job.used is not None:
        ctx.usage(used=job.used)


@stage(
    "limited_capped",
    lease=30,
    tenant_cap=5,
    limits=[Limit(UNITS, key="tenant", units=Limit.field("units"))],
)
def limited_capped(job: Call, ctx: Context) -> None:
    """Capped at five running jobs per tenant, and charged against its tenant's key."""
    return None


@stage("limited_fan", lease=30)
def limited_fan(job: Call, ctx: Context) -> None:
    """Two limited children; once both are done, the join enqueues a limited job, which is
    charged as the fan-out computed it: 2 units against the key "then"."""
    ctx.fan_out("limited", [{"n": 1}, {"n": 2}], then=("limited", {"key": "then", "units": 2}))


def _twice(call: Call) -> int:
    return 2 * call.units


@stage("limited_in_code", lease=30, limits=[Limit(UNITS, key="tenant", units=_twice)])
def limited_in_code(job: Call, ctx: Context) -> None:
    """Charged twice its units, computed in code, against its tenant."""
    return None


@stage(
    "limited_calls",
    lease=30,
    limits=[
        Limit(CALLS, capacity=5, per=60),
        Limit(UNITS, key="shared", units=Limit.field("units")),
    ],
)
def limited_calls(job: Call, ctx: Context) -> None:
    """One call of five a minute (a default from code), and its units against a shared key."""
    return None


@stage(
    "limited_alone",
    lease=30,
    isolation="process",
    limits=[Limit(UNITS, key=Limit.field("key"), units=Limit.field("units"), actual="used")],
)
def limited_alone(job: Call, ctx: Context) -> None:
    """`limited`, run in a child process: the child settles the job, and corrects its charge."""
    if job.used is not None:
        ctx.usage(used=job.used)
