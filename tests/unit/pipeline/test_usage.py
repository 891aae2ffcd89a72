import asyncio
import math
import threading
import time

import pytest

from pg_pipeline.context import Context
from pg_pipeline.stage import Registry
from pg_pipeline.usage import CpuOfSteps, Usage


def make_context() -> Context:
    return Context(
        job_id=1,
        stage="s",
        attempt=1,
        max_attempts=3,
        tenant_id=None,
        parent_id=None,
        registry=Registry(),
    )


def test_numbers_add_up_and_labels_keep_the_last() -> None:
    ctx = make_context()
    ctx.usage(tokens_in=10, model="a")
    ctx.usage(tokens_in=2.5, tokens_out=3, model="b")
    assert ctx.usage_counters() == {"tokens_in": 12.5, "tokens_out": 3.0, "model": "b"}


def test_nothing_reported_is_an_empty_dict() -> None:
    assert make_context().usage_counters() == {}


def test_counters_handed_out_are_a_copy() -> None:
    ctx = make_context()
    ctx.usage(pages=1)
    ctx.usage_counters()["pages"] = 99
    assert ctx.usage_counters() == {"pages": 1.0}


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (-1, "finite number >= 0"),
        (math.nan, "finite number >= 0"),
        (math.inf, "finite number >= 0"),
        (True, "neither a number nor a text label"),
        (None, "neither a number nor a text label"),
        ([1], "neither a number nor a text label"),
        ("x" * 201, "at most 200 characters"),
    ],
)
def test_a_bad_value_is_refused_naming_the_counter(value: object, says: str) -> None:
    ctx = make_context()
    with pytest.raises(ValueError, match=f"'pages'.*{says}"):
        ctx.usage(pages=value)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["wall_s", "cpu_s"])
def test_the_workers_own_measures_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match=f"{name!r} is measured by the worker.*child_cpu_s"):
        make_context().usage(**{name: 1})


@pytest.mark.parametrize("name", ["1st", "a-b", "tokens in", "é", "x" * 64, ""])
def test_a_name_must_be_an_identifier(name: str) -> None:
    with pytest.raises(ValueError, match="a name is an identifier"):
        make_context().usage(**{name: 1})


def test_a_refused_call_keeps_none_of_its_counters() -> None:
    ctx = make_context()
    with pytest.raises(ValueError):
        ctx.usage(pages=1, tokens=-1)
    assert ctx.usage_counters() == {}


def test_a_counter_keeps_its_kind_within_the_attempt() -> None:
    ctx = make_context()
    ctx.usage(model="a")
    with pytest.raises(ValueError, match="'model' is a label in this attempt already"):
        ctx.usage(model=1)
    ctx.usage(pages=1)
    with pytest.raises(ValueError, match="'pages' is a number in this attempt already"):
        ctx.usage(pages="one")


def test_a_sum_past_the_largest_number_is_refused_and_the_counter_kept() -> None:
    # Infinity is no JSON: the attempt's acknowledgement carrying it was refused, again at
    # each retry, and the job, though its run succeeded, went to reclaim until out of attempts.
    ctx = make_context()
    ctx.usage(tokens=1e308)
    with pytest.raises(ValueError, match="'tokens': 1e\\+308 more is past the largest number"):
        ctx.usage(tokens=1e308, pages=1)
    assert ctx.usage_counters() == {"tokens": 1e308}


def test_child_cpu_past_what_an_attempts_row_holds_is_refused() -> None:
    # cpu_s goes to the attempt's row in whole microseconds (a bigint): more failed the
    # acknowledgement, and the job whose run succeeded went to reclaim at every attempt.
    ctx = make_context()
    ctx.usage(child_cpu_s=6e8)
    with pytest.raises(ValueError, match="'child_cpu_s': more than 1e\\+09 CPU seconds"):
        ctx.usage(child_cpu_s=6e8)
    with pytest.raises(ValueError, match="'child_cpu_s': more than"):
        make_context().usage(child_cpu_s=1e308)
    assert ctx.usage_counters() == {"child_cpu_s": 6e8}


def test_reports_from_threads_all_add_up() -> None:
    ctx = make_context()

    def report() -> None:
        for _ in range(1000):
            ctx.usage(calls=1)

    threads = [threading.Thread(target=report) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ctx.usage_counters() == {"calls": 8000.0}


def test_the_measures_add_the_childrens_cpu_to_cpu_s() -> None:
    usage = Usage()
    usage.add({"child_cpu_s": 2, "model": "m"})
    usage.wall_s, usage.cpu_s = 5.0, 0.5
    assert usage.measures() == (5.0, 2.5, {"child_cpu_s": 2.0, "model": "m"})


def test_nothing_reported_measures_no_counters() -> None:
    usage = Usage()
    usage.wall_s, usage.cpu_s = 1.0, 0.25
    assert usage.measures() == (1.0, 0.25, None)


def test_a_run_still_going_counts_its_seconds_so_far_and_no_cpu() -> None:
    usage = Usage()
    usage.began = time.perf_counter() - 2.0
    usage.add({"child_cpu_s": 1})
    wall, cpu, _ = usage.measures()
    assert wall is not None and 2.0 <= wall < 10.0
    assert cpu == 1.0  # the children's, which the stage reported; its own thread's is unknown


def test_cost_is_the_price_tables_and_cannot_be_reported() -> None:
    with pytest.raises(ValueError, match="'cost' is the money the price table makes"):
        make_context().usage(cost=1)


def _spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_the_cpu_of_a_coroutines_steps_leaves_out_what_others_run_meanwhile() -> None:
    async def busy() -> str:
        _spin(0.05)
        await asyncio.sleep(0)
        _spin(0.05)
        return "done"

    async def other() -> None:
        await asyncio.sleep(0)
        _spin(0.2)  # on the same thread, between busy's two steps

    async def both() -> str:
        timed = CpuOfSteps(busy(), Usage())
        result, _ = await asyncio.gather(timed.run(), other())
        assert 0.09 <= timed.cpu_s < 0.2
        return str(result)

    assert asyncio.run(both()) == "done"


def test_a_cancel_reaches_the_wrapped_coroutine() -> None:
    seen: list[str] = []

    async def waits() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def main() -> None:
        task = asyncio.ensure_future(CpuOfSteps(waits(), Usage()).run())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert seen == ["cancelled"]
