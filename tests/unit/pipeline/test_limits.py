"""Limit: what a stage may declare, and what a job is charged from its payload and tenant."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from pg_pipeline import Context, Limit, Registry, stage
from pg_pipeline.enqueue import JobRequest, job_row
from pg_pipeline.limits import Charge, recorded_charges
from pg_pipeline.validation import InvalidJob


class Call(BaseModel):
    key: str = "k"
    units: int = 1
    nested: dict[str, Any] = {}


def model() -> BaseModel:
    return Call(key="m", units=5)


def charge(limit: Limit, payload: Any, tenant: str | None = None) -> Charge:
    return limit.charge(payload, model, tenant)


def test_keys_come_from_a_constant_the_tenant_a_field_or_code() -> None:
    assert charge(Limit("x"), {}).key == "*"
    assert charge(Limit("x", key="openai"), {}).key == "openai"
    assert charge(Limit("x", key="tenant"), {}, "acme").key == "acme"
    assert charge(Limit("x", key="tenant"), {}, None).key == "-"
    assert charge(Limit("x", key=Limit.field("key")), {"key": "api-1"}).key == "api-1"
    assert charge(Limit("x", key=Limit.field("nested.id")), {"nested": {"id": 7}}).key == "7"
    assert charge(Limit("x", key=lambda job: job.key.upper()), {}).key == "M"


def test_units_come_from_a_constant_a_field_or_code_rounded_up() -> None:
    assert charge(Limit("x"), {}).units == 1
    assert charge(Limit("x", units=30), {}).units == 30
    assert charge(Limit("x", units=Limit.field("units")), {"units": 2.1}).units == 3
    assert charge(Limit("x", units=lambda job: job.units * 2), {}).units == 10


@pytest.mark.parametrize(
    ("limit", "payload", "message"),
    [
        (Limit("x", key=Limit.field("key")), {}, "has no field 'key'"),
        (Limit("x", key=Limit.field("key")), {"key": None}, "must be a string or a number"),
        (Limit("x", key=Limit.field("key")), {"key": ""}, "1..200 characters"),
        (Limit("x", units=Limit.field("units")), {"units": -1}, "must be >= 0"),
        (Limit("x", units=Limit.field("units")), {"units": "3"}, "must be a number"),
        (Limit("x", units=Limit.field("units")), {"units": True}, "must be a number"),
    ],
)
def test_a_payload_that_cannot_be_charged_is_refused(
    limit: Limit, payload: Any, message: str
) -> None:
    with pytest.raises(InvalidJob, match=message):
        charge(limit, payload)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": ""}, "limit name must be"),
        ({"name": " x"}, "without outer spaces"),
        ({"name": "x", "units": -1}, "units must be >= 0"),
        ({"name": "x", "units": True}, "units must be a whole number"),
        ({"name": "x", "key": 3}, "key must be None, a string"),
        ({"name": "x", "actual": ()}, "actual must name usage counters"),
        ({"name": "x", "capacity": -5}, "capacity must be a whole number"),
        ({"name": "x", "capacity": 5, "per": 0}, "per must be whole seconds"),
        ({"name": "x", "per": 86401}, "per must be whole seconds"),
    ],
)
def test_a_bad_limit_is_refused_where_it_is_declared(kwargs: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Limit(**kwargs)


def test_a_stage_may_not_name_a_limit_twice() -> None:
    with pytest.raises(ValueError, match="a limit is named twice"):

        @stage("twice", limits=[Limit("x"), Limit("x", key="tenant")], registry=Registry())
        def twice(job: Call, ctx: Context) -> None: ...


def test_actual_units_from_counters_their_sum_or_code() -> None:
    counters = {"tokens_in": 10.0, "tokens_out": 2.5, "model": "m"}
    assert Limit("x", actual="tokens_in").actual_units(counters) == 10
    assert Limit("x", actual=("tokens_in", "tokens_out")).actual_units(counters) == 13
    assert Limit("x", actual=lambda c: 4 * float(c["tokens_out"])).actual_units(counters) == 10
    assert Limit("x", actual="pages").actual_units(counters) is None
    assert Limit("x").actual_units(counters) is None
    # More than any job may be charged counts as the most: the window is full either way.
    assert Limit("x", actual="tokens_in").actual_units({"tokens_in": 1e300}) == 10**15


def test_a_job_row_carries_its_charges_and_a_plain_one_none() -> None:
    registry = Registry()

    @stage(
        "charged",
        limits=[Limit("calls"), Limit("units", key=Limit.field("key"), units=lambda j: j.units)],
        registry=registry,
    )
    def charged(job: Call, ctx: Context) -> None: ...

    @stage("plain", registry=registry)
    def plain(job: Call, ctx: Context) -> None: ...

    row = job_row(JobRequest("charged", {"key": "a", "units": 4}), registry)
    assert row["limits"] == (
        '[{"name":"calls","key":"*","units":1},{"name":"units","key":"a","units":4}]'
    )
    assert job_row(JobRequest("plain", {}), registry)["limits"] is None


def test_recorded_limits_charge_a_job_enqueued_by_name_unless_they_need_code() -> None:
    declared = [
        Limit("a", key="tenant", units=Limit.field("units")),
        Limit("b", key=Limit.field("key"), units=3),
    ]
    recorded = [limit.recorded() for limit in declared]
    assert recorded_charges("s", recorded, {"units": 2, "key": "k"}, "acme") == [
        Charge("a", "acme", 2),
        Charge("b", "k", 3),
    ]
    in_code = [Limit("c", key=lambda job: "x").recorded()]
    with pytest.raises(InvalidJob, match="computes its key in code"):
        recorded_charges("s", in_code, {}, None)
