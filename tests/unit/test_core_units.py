"""Pure logic: no database."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from pipeline import Context, InvalidPayload, PermanentError, Registry, RetryableError, stage
from pipeline.db import describe
from pipeline.retry_delays import retry_delay
from pipeline.settings import WorkerSettings

ROOT = Path(__file__).resolve().parents[2]


def test_backoff_grows_exponentially_and_is_jittered_and_capped() -> None:
    rng = random.Random(42)
    delays = {
        a: [retry_delay(a, base_s=10, cap_s=1800, rng=rng) for _ in range(200)]
        for a in (1, 2, 3, 4)
    }
    for attempt, samples in delays.items():
        low, high = 10 * 2 ** (attempt - 1) * 0.5, 10 * 2 ** (attempt - 1) * 1.5
        assert all(low <= d < high for d in samples)
        assert len({round(d, 6) for d in samples}) > 150, "no jitter"
    medians = [sorted(s)[100] for s in delays.values()]
    assert medians == sorted(medians) and medians[-1] > 6 * medians[0]
    assert retry_delay(40, base_s=10, cap_s=1800, rng=rng) == 1800
    with pytest.raises(ValueError):
        retry_delay(0)


def test_describe_names_the_host_and_hides_the_password() -> None:
    text = describe("postgresql://app:s3cret@db.internal:6543/shop")
    assert text == "db.internal:6543/shop" and "s3cret" not in text


def test_worker_settings_reject_unknown_keys() -> None:
    with pytest.raises(ValidationError, match="concurency"):
        WorkerSettings(concurency=4)  # type: ignore[call-arg]


class Resize(BaseModel):
    image_key: str
    width: int


class Out(BaseModel):
    ok: bool


def test_stage_reads_its_models_from_the_annotations() -> None:
    registry = Registry()

    @stage("resize", registry=registry, max_attempts=2, lease=60)
    def resize(job: Resize, ctx: Context) -> Out:
        return Out(ok=True)

    spec = registry.get("resize")
    assert (spec.input_model, spec.output_model, spec.max_attempts) == (Resize, Out, 2)
    assert spec.heartbeat_s == 12  # a fifth of the lease
    with pytest.raises(InvalidPayload, match="width"):
        spec.validate({"image_key": "a.png"})


def test_stage_rejects_bad_definitions() -> None:
    registry = Registry()
    with pytest.raises(TypeError, match="pydantic model"):
        stage("x", registry=registry)(lambda job, ctx: None)
    with pytest.raises(ValueError, match="shorter than"):

        @stage("y", registry=registry, lease=10, heartbeat=10)
        def y(job: Resize, ctx: Context) -> None: ...


def test_error_classification() -> None:
    registry = Registry()

    @stage("only_timeouts_retry", registry=registry, retry_on=(TimeoutError,))
    def a(job: Resize, ctx: Context) -> None: ...

    @stage("value_errors_are_final", registry=registry, permanent=(ValueError,))
    def b(job: Resize, ctx: Context) -> None: ...

    strict, lenient = registry.get("only_timeouts_retry"), registry.get("value_errors_are_final")
    assert not strict.is_permanent(TimeoutError()) and strict.is_permanent(KeyError())
    assert strict.is_permanent(PermanentError()) and not strict.is_permanent(RetryableError())
    assert lenient.is_permanent(ValueError()) and not lenient.is_permanent(KeyError())


CHAIN = Registry()


class Order(BaseModel):
    n: int


class Count(BaseModel):
    total: int


class Bill(BaseModel):
    total: int
    currency: str


@stage("count_then_bill", then="bill", registry=CHAIN)
def count_then_bill(job: Order, ctx: Context) -> Count:
    return Count(total=job.n)


@stage("count_then_tally", then="tally", registry=CHAIN)
def count_then_tally(job: Order, ctx: Context) -> Count:
    return Count(total=job.n)


@stage("bill", registry=CHAIN)
def bill(job: Bill, ctx: Context) -> None:
    return None


@stage("tally", registry=CHAIN)
def tally(job: Count, ctx: Context) -> None:
    return None


def run_chained(name: str) -> tuple[object, Context]:
    from pipeline.executor import run_job
    from pipeline.store import ClaimedJob

    job = ClaimedJob(7, name, None, {"n": 3}, 0, 1, 5, 60, None, 7)
    ctx = Context(
        job_id=7,
        stage=name,
        attempt=1,
        max_attempts=5,
        tenant_id=None,
        parent_id=None,
        registry=CHAIN,
    )
    return run_job(CHAIN.get(name), job, ctx), ctx


def test_an_output_that_does_not_fit_the_next_stage_fails_the_job_for_good() -> None:
    from pipeline.outcomes import Raised, Succeeded

    outcome, ctx = run_chained("count_then_bill")
    assert isinstance(outcome, Raised)
    assert outcome.permanent
    assert "invalid payload for stage 'bill'" in outcome.message
    assert ctx.transaction_steps == []

    outcome, ctx = run_chained("count_then_tally")
    assert isinstance(outcome, Succeeded)
    assert (outcome.output, outcome.part, outcome.reused) == (Count(total=3), None, False)
    assert len(outcome.steps) == 1  # the tally job, inserted with the completion


def test_a_misspelt_stage_option_is_an_error_not_a_silent_default() -> None:
    with pytest.raises(TypeError, match="max_attempt"):
        stage("typo", max_attempt=3, registry=Registry())  # type: ignore[call-arg]


def test_the_wheel_lists_every_package_of_the_source_tree() -> None:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("pipeline", "stages")
        for init in (ROOT / top).rglob("__init__.py")
    }
    # A package missing here installs from a checkout (editable) but not from the wheel.
    assert found <= listed, sorted(found - listed)
