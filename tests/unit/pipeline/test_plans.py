"""One implementation for sync and async callers: a call's plan checks its arguments when it is
made and then names the statements to run, and the public functions only run plans."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest
from pydantic import BaseModel

import pg_pipeline
from pg_pipeline import aio
from pg_pipeline.connections import NotAConnection
from pg_pipeline.context import Context
from pg_pipeline.enqueue import JobRequest, enqueue_many_plan, enqueue_once_plan, enqueue_plan
from pg_pipeline.errors import InvalidPayload
from pg_pipeline.plans import Plan, Statement, Steps
from pg_pipeline.queries import Q
from pg_pipeline.stage import Registry, stage

NOTES = Registry()


class Note(BaseModel):
    text: str


@stage("note", registry=NOTES)
def note(job: Note, ctx: Context) -> None:
    return None


PAIRS = {
    "enqueue": (pg_pipeline.enqueue, aio.aenqueue),
    "enqueue_once": (pg_pipeline.enqueue_once, aio.aenqueue_once),
    "enqueue_many": (pg_pipeline.enqueue_many, aio.aenqueue_many),
    "run_progress": (pg_pipeline.run_progress, aio.arun_progress),
    "run_output": (pg_pipeline.run_output, aio.arun_output),
    "live_workers": (pg_pipeline.live_workers, aio.alive_workers),
    "rerun": (pg_pipeline.rerun, aio.arerun),
    "output_versions": (pg_pipeline.output_versions, aio.aoutput_versions),
    "diff_outputs": (pg_pipeline.diff_outputs, aio.adiff_outputs),
}


def drive(plan: Plan[Any], answers: list[list[tuple[Any, ...]]]) -> tuple[list[Statement], Any]:
    """Run a plan against canned rows: the statements it asked for, and its result."""
    asked: list[Statement] = []
    steps = plan.steps
    try:
        asked.append(next(steps))
        for rows in answers:
            asked.append(steps.send(rows))
    except StopIteration as done:
        return asked, done.value
    raise AssertionError(f"the plan asked for more statements than answered: {asked}")


@pytest.mark.parametrize("sync, async_", PAIRS.values(), ids=PAIRS.keys())
def test_each_async_function_takes_what_its_sync_one_takes(sync: Any, async_: Any) -> None:
    assert inspect.signature(async_).parameters.keys() == inspect.signature(sync).parameters.keys()
    assert inspect.iscoroutinefunction(async_) and not inspect.iscoroutinefunction(sync)
    assert async_.__name__ == "a" + sync.__name__


def test_an_enqueue_plan_inserts_and_returns_the_new_id() -> None:
    asked, result = drive(enqueue_plan("note", {"text": "hi"}, registry=NOTES), [[(41,)]])
    assert [s.sql for s in asked] == [Q["enqueue"]]
    assert asked[0].params["type"] == "note" and asked[0].params["payload"] == '{"text":"hi"}'
    assert result == 41


def test_an_enqueue_once_plan_asks_for_the_holder_of_a_taken_key() -> None:
    plan = enqueue_once_plan("note", {"text": "hi"}, dedup_key="k", registry=NOTES)
    asked, result = drive(plan, [[], [(7,)]])
    assert [s.sql for s in asked] == [Q["enqueue"], Q["find_by_dedup_key"]]
    assert result == (7, False)


def test_an_enqueue_many_plan_sends_one_statement_for_the_batch() -> None:
    requests = [JobRequest("note", {"text": str(n)}) for n in range(3)]
    asked, result = drive(enqueue_many_plan(requests, registry=NOTES), [[(1,), (2,), (3,)]])
    assert [s.sql for s in asked] == [Q["enqueue_many_keyless"]]
    assert result == [1, 2, 3]


def test_an_empty_batch_sends_nothing() -> None:
    assert drive(enqueue_many_plan([], registry=NOTES), []) == ([], [])


def test_a_plan_checks_its_arguments_when_it_is_made_before_any_statement() -> None:
    with pytest.raises(InvalidPayload):
        enqueue_many_plan(
            [JobRequest("note", {"text": "fine"}), JobRequest("note", {"text": 3})],
            registry=NOTES,
        )


def test_then_maps_the_result_and_keeps_the_statements() -> None:
    def steps() -> Steps[int]:
        rows = yield Statement(Q["server_version"], {})
        return len(rows)

    asked, result = drive(Plan(steps(), atomic=True).then(lambda n: n * 10), [[(1,), (2,)]])
    assert result == 20 and len(asked) == 1


def test_a_bad_payload_is_refused_before_the_connection_is_looked_at() -> None:
    # Checked first, so that an ORM's connection is not opened for a job that cannot go. (A
    # stage the code does not know is looked up in what workers recorded: that takes the
    # database, tests/integration/pipeline/test_recorded_stages.py.)
    with pytest.raises(InvalidPayload):
        pg_pipeline.enqueue(object(), "note", {"text": 5}, registry=NOTES)  # type: ignore[arg-type]
    with pytest.raises(InvalidPayload):
        asyncio.run(aio.aenqueue(object(), "note", {"text": 5}, registry=NOTES))  # type: ignore[arg-type]


@pytest.mark.parametrize("given", [42, "postgresql://localhost/app", None])
def test_enqueue_on_what_is_not_a_connection_names_what_it_got_and_what_it_takes(
    given: object,
) -> None:
    with pytest.raises(NotAConnection) as refused:
        pg_pipeline.enqueue(given, "note", {"text": "hi"}, registry=NOTES)  # type: ignore[arg-type]
    message = str(refused.value)
    assert f"pg_pipeline.enqueue() was given a builtins.{type(given).__name__}" in message
    assert "psycopg Connection" in message
    assert isinstance(refused.value, TypeError)


def test_aenqueue_on_what_is_not_a_connection_names_what_it_got_and_what_it_takes() -> None:
    with pytest.raises(NotAConnection) as refused:
        asyncio.run(aio.aenqueue(3.5, "note", {"text": "hi"}, registry=NOTES))  # type: ignore[arg-type]
    message = str(refused.value)
    assert "pg_pipeline.aenqueue() was given a builtins.float" in message
    assert "psycopg AsyncConnection" in message
