"""Re-running a finished run from a stage (pg_pipeline.rerun): the stage and what follows it run
again as the run's next generation, the stages before it are not run, their stored outputs are
read instead, and every generation's outputs are kept, each with the code version that made it."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import psycopg
import pytest
from pydantic import BaseModel

from pg_pipeline import Context, arerun
from pg_pipeline.admin.runs import cancel_tree
from pg_pipeline.enqueue import enqueue
from pg_pipeline.maintenance.retention import pass_params, prune
from pg_pipeline.output_versions import NoSuchVersion, diff_outputs, output_versions
from pg_pipeline.queries import Q
from pg_pipeline.reruns import RerunRefused, RerunResult, SameVersion, rerun
from pg_pipeline.runs import run_output, run_status
from pg_pipeline.stage import Registry, stage
from pg_pipeline.testing import drain
from tests.integration.pipeline.maintenance.test_retention import age
from tests.support.waiting import lock_waiters, wait_for

Conn = psycopg.Connection[Any]


class Text(BaseModel):
    text: str


class Reading(BaseModel):
    text: str
    words: int
    by: str


class Summary(BaseModel):
    line: str


def read_a(job: Text, ctx: Context) -> Text:
    return Text(text=job.text.strip())


def summarise(job: Reading, ctx: Context) -> Summary:
    # What a stage after the rerun one sees: its upstream's stored output, and the new one.
    ((_, a),) = ctx.outputs("va")
    ((_, b),) = ctx.outputs("vb")
    return Summary(line=f"{a['text']}|{b['by']}:{b['words']}|{job.by}")


def registry(b_version: str, by: str) -> Registry:
    """The chain va -> vb -> vc, with vb at `b_version` counting words the `by` way."""
    reg = Registry()
    stage("va", then="vb", registry=reg)(read_a)

    def read_b(job: Text, ctx: Context) -> Reading:
        words = len(job.text.split()) if by == "split" else job.text.count(" ")
        return Reading(text=job.text, words=words, by=by)

    stage("vb", then="vc", version=b_version, registry=reg)(read_b)
    stage("vc", registry=reg)(summarise)
    return reg


V1 = registry("1", "spaces")
V2 = registry("2", "split")


def jobs_of(conn: Conn, run_id: int) -> dict[str, int]:
    rows = conn.execute(
        "SELECT type, count(*) FROM pipeline.jobs WHERE coalesce(root_id, id) = %s GROUP BY 1",
        (run_id,),
    ).fetchall()
    return {t: int(n) for t, n in rows}


def jobs_by_stage(conn: Conn, run_id: int) -> dict[str, int]:
    """The newest job of each stage of the run."""
    rows = conn.execute(
        "SELECT type, max(id) FROM pipeline.jobs WHERE coalesce(root_id, id) = %s GROUP BY 1",
        (run_id,),
    ).fetchall()
    return {t: int(n) for t, n in rows}


def outputs_of(conn: Conn, run_id: int) -> list[tuple[str, int, str | None]]:
    rows = conn.execute(
        "SELECT stage, generation, code_version FROM pipeline.outputs WHERE root_id = %s "
        "ORDER BY stage, generation",
        (run_id,),
    ).fetchall()
    return [(r[0], int(r[1]), r[2]) for r in rows]


def finished_chain(db_url: str, conn: Conn, tenant: str | None = None) -> int:
    run_id = enqueue(conn, "va", {"text": " three little words "}, tenant_id=tenant, registry=V1)
    assert drain(db_url, registry=V1, run_id=run_id).ok
    return run_id


def test_a_rerun_from_the_middle_runs_it_and_what_follows_and_keeps_both_generations(
    db_url: str, conn: Conn
) -> None:
    run_id = finished_chain(db_url, conn)
    assert run_output(conn, run_id, "vc") == {"line": "three little words|spaces:2|spaces"}

    made = rerun(conn, run_id, "vb", registry=V2)

    assert made == RerunResult(run_id, "vb", "2", 1, 1, True, False, made.created_at)
    assert made.created_at is not None
    assert run_status(conn, run_id).status == "running"  # type: ignore[union-attr]
    drained = drain(db_url, registry=V2, run_id=run_id)
    assert drained.ok and len(drained.done) == 2  # vb and vc; va is not run again
    assert run_status(conn, run_id).status == "done"  # type: ignore[union-attr]
    assert jobs_of(conn, run_id) == {"va": 1, "vb": 2, "vc": 2}
    a_version = V1.get("va").code_version
    c_version = V1.get("vc").code_version
    assert outputs_of(conn, run_id) == [
        ("va", 0, a_version),
        ("vb", 0, "1"),
        ("vb", 1, "2"),
        ("vc", 0, c_version),
        ("vc", 1, c_version),
    ]
    # The readers return the newest generation; an older one on request.
    assert run_output(conn, run_id, "vc") == {"line": "three little words|split:3|split"}
    assert run_output(conn, run_id, "vb", generation=0)["by"] == "spaces"
    assert run_output(conn, run_id, "vb", version="1")["words"] == 2
    assert run_output(conn, run_id, "va") == {"text": "three little words"}

    diff = diff_outputs(conn, run_id, "vb")
    assert (diff.left.generation, diff.right.generation) == (0, 1)
    assert (diff.left.code_version, diff.right.code_version) == ("1", "2")
    (part,) = diff.parts
    changed = {f.field: (f.left, f.right) for f in part.changed_fields}
    assert changed == {"words": (2, 3), "by": ("spaces", "split")}
    versions = output_versions(conn, run_id, "vb")
    assert versions is not None
    assert [(v.generation, v.code_version, v.rerun_from) for v in versions] == [
        (0, "1", None),
        (1, "2", "vb"),
    ]


def test_a_rerun_is_made_once_per_run_stage_and_version(db_url: str, conn: Conn) -> None:
    run_id = finished_chain(db_url, conn)
    first = rerun(conn, run_id, "vb", registry=V2)
    again = rerun(conn, run_id, "vb", registry=V2)
    assert again.created is False and again.created_at == first.created_at
    assert (again.generation, again.jobs, again.code_version) == (first.generation, 1, "2")
    assert jobs_of(conn, run_id)["vb"] == 2
    assert drain(db_url, registry=V2, run_id=run_id).ok
    # Finished, the same version is still the same rerun: nothing is enqueued again.
    assert rerun(conn, run_id, "vb", registry=V2).created is False
    assert jobs_of(conn, run_id) == {"va": 1, "vb": 2, "vc": 2}


def test_concurrent_reruns_of_one_run_enqueue_once(db_url: str, conn: Conn) -> None:
    run_id = finished_chain(db_url, conn)
    start = threading.Barrier(2)
    results: list[RerunResult | BaseException] = []

    def call() -> None:
        with psycopg.connect(db_url) as c:  # a transaction each, committed at the end
            start.wait()
            try:
                results.append(rerun(c, run_id, "vb", registry=V2))
            except BaseException as exc:  # the assertion below shows it
                results.append(exc)

    threads = [threading.Thread(target=call) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(isinstance(r, RerunResult) for r in results), results
    made = [r for r in results if isinstance(r, RerunResult)]
    assert sorted(r.created for r in made) == [False, True]
    assert {r.generation for r in made} == {1}
    assert jobs_of(conn, run_id)["vb"] == 2


def test_concurrent_reruns_from_two_stages_make_one_and_refuse_the_other(
    db_url: str, conn: Conn
) -> None:
    run_id = finished_chain(db_url, conn)
    start = threading.Barrier(2)
    results: list[Any] = []

    def call(name: str) -> None:
        with psycopg.connect(db_url) as c:
            start.wait()
            try:
                results.append(rerun(c, run_id, name, registry=V2, force=True))
            except RerunRefused as exc:
                results.append(exc)

    threads = [threading.Thread(target=call, args=(n,)) for n in ("vb", "vc")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    made = [r for r in results if isinstance(r, RerunResult)]
    refused = [r for r in results if isinstance(r, RerunRefused)]
    assert len(made) == 1 and len(refused) == 1, results
    assert "running" in str(refused[0]) or "another caller" in str(refused[0])
    assert conn.execute("SELECT count(*) FROM pipeline.run_generations").fetchone() == (1,)


def test_a_run_not_done_is_refused(db_url: str, conn: Conn) -> None:
    run_id = enqueue(conn, "va", {"text": "still going"}, registry=V1)
    drain(db_url, registry=V1, stages=["va"])  # vb is queued: the run runs
    with pytest.raises(RerunRefused, match=r"is running, not done: wait until it is done"):
        rerun(conn, run_id, "va", registry=V2)
    assert jobs_of(conn, run_id) == {"va": 1, "vb": 1}


def test_unknown_stages_stages_that_never_ran_and_other_tenants_runs_are_refused(
    db_url: str, conn: Conn
) -> None:
    run_id = finished_chain(db_url, conn, tenant="acme")
    with pytest.raises(RerunRefused, match=r"there is no run .* of tenant 'globex'"):
        rerun(conn, run_id, "vb", tenant="globex", registry=V2)
    with pytest.raises(RerunRefused, match="there is no run 999999"):
        rerun(conn, 999_999, "vb", registry=V2)
    inside = jobs_by_stage(conn, run_id)["vc"]
    with pytest.raises(RerunRefused, match=f"job {inside} is inside run {run_id}, not a run"):
        rerun(conn, inside, "vb", registry=V2)
    with pytest.raises(RerunRefused, match=f"there is no run {inside} of tenant 'globex'"):
        rerun(conn, inside, "vb", tenant="globex", registry=V2)
    with pytest.raises(NoSuchVersion, match=f"job {inside} is inside run {run_id}"):
        diff_outputs(conn, inside, "vb")
    with pytest.raises(Exception, match="unknown stage 'nope'"):
        rerun(conn, run_id, "nope", registry=V2)
    other = Registry()
    stage("elsewhere", registry=other)(read_a)
    with pytest.raises(RerunRefused, match="stage 'elsewhere' never ran in run"):
        rerun(conn, run_id, "elsewhere", registry=other)
    assert rerun(conn, run_id, "vb", tenant="acme", registry=V2).created
    with pytest.raises(ValueError, match="run_id must be a positive integer"):
        rerun(conn, 0, "vb")
    with pytest.raises(ValueError, match="from_stage must be a stage's name"):
        rerun(conn, run_id, "v\x00b")
    with pytest.raises(ValueError, match="stage must be a stage's name"):
        diff_outputs(conn, run_id, "v\x00b")
    with pytest.raises(ValueError, match="run_id must be a positive integer"):
        diff_outputs(conn, -1, "vb")


def test_a_cancelled_run_is_refused_with_advice_that_fits_it(db_url: str, conn: Conn) -> None:
    run_id = enqueue(conn, "va", {"text": "stopped"}, registry=V1)
    drain(db_url, registry=V1, stages=["va"])
    assert cancel_tree(conn, run_id, None, reason="withdrawn")
    with pytest.raises(RerunRefused, match=r"is cancelled, not done; retry its cancelled jobs"):
        rerun(conn, run_id, "va", registry=V2)


def test_a_rerun_at_the_stored_version_needs_force(db_url: str, conn: Conn) -> None:
    run_id = finished_chain(db_url, conn)
    with pytest.raises(SameVersion, match="already has outputs of version '1'"):
        rerun(conn, run_id, "vb", registry=V1)
    assert jobs_of(conn, run_id)["vb"] == 1
    forced = rerun(conn, run_id, "vb", registry=V1, force=True)
    assert (forced.generation, forced.forced, forced.created) == (1, True, True)
    assert drain(db_url, registry=V1, run_id=run_id).ok
    assert [g for s, g, _ in outputs_of(conn, run_id) if s == "vb"] == [0, 1]


def test_a_second_rerun_is_the_third_generation_and_reads_the_second(
    db_url: str, conn: Conn
) -> None:
    run_id = finished_chain(db_url, conn)
    rerun(conn, run_id, "vb", registry=V2)
    assert drain(db_url, registry=V2, run_id=run_id).ok
    third = rerun(conn, run_id, "vc", registry=V2, force=True)
    assert third.generation == 2
    assert drain(db_url, registry=V2, run_id=run_id).ok
    assert jobs_of(conn, run_id) == {"va": 1, "vb": 2, "vc": 3}
    assert run_output(conn, run_id, "vc", generation=2) == run_output(
        conn, run_id, "vc", generation=1
    )
    with pytest.raises(NoSuchVersion, match="no output version 'nine'"):
        diff_outputs(conn, run_id, "vc", ("generation:1", "nine"))
    diff = diff_outputs(conn, run_id, "vc", ("1", "generation:2"))
    assert not diff.changed


# -- a fan-out ------------------------------------------------------------------------------


class Pages(BaseModel):
    pages: int


class Page(BaseModel):
    n: int


class PageText(BaseModel):
    n: int
    text: str


def split(job: Pages, ctx: Context) -> None:
    ctx.fan_out("fpage", [{"n": i} for i in range(job.pages)], then=("fmerge", {"pages": 0}))


def merge(job: Pages, ctx: Context) -> Text:
    return Text(text=" ".join(o["text"] for _, o in ctx.outputs("fpage")))


def fan_registry(version: str) -> Registry:
    reg = Registry()
    stage("fsplit", registry=reg)(split)

    def page(job: Page, ctx: Context) -> PageText:
        return PageText(n=job.n, text=f"v{version}p{job.n}")

    stage("fpage", part=lambda j: j.n, version=version, registry=reg)(page)
    stage("fmerge", registry=reg)(merge)
    return reg


def test_a_rerun_of_a_fan_out_stage_runs_every_child_and_the_join_follows_once(
    db_url: str, conn: Conn
) -> None:
    f1, f2 = fan_registry("1"), fan_registry("2")
    run_id = enqueue(conn, "fsplit", {"pages": 3}, registry=f1)
    assert drain(db_url, registry=f1, run_id=run_id).ok
    assert run_output(conn, run_id, "fmerge") == {"text": "v1p0 v1p1 v1p2"}

    made = rerun(conn, run_id, "fpage", registry=f2)

    assert (made.generation, made.jobs) == (1, 3)
    assert drain(db_url, registry=f2, run_id=run_id).ok
    assert jobs_of(conn, run_id) == {"fsplit": 1, "fpage": 6, "fmerge": 2}
    assert run_output(conn, run_id, "fmerge") == {"text": "v2p0 v2p1 v2p2"}
    assert run_output(conn, run_id, "fpage", 1) == {"n": 1, "text": "v2p1"}
    assert run_output(conn, run_id, "fpage", 1, generation=0) == {"n": 1, "text": "v1p1"}
    diff = diff_outputs(conn, run_id, "fpage")
    assert [(p.part, p.changed) for p in diff.parts] == [(0, True), (1, True), (2, True)]
    assert run_status(conn, run_id).status == "done"  # type: ignore[union-attr]
    # The join's next stage alone: the pages' newest outputs are read, not made again.
    merged = rerun(conn, run_id, "fmerge", registry=f2, force=True)
    assert (merged.generation, merged.jobs) == (2, 1)
    assert drain(db_url, registry=f2, run_id=run_id).ok
    assert jobs_of(conn, run_id) == {"fsplit": 1, "fpage": 6, "fmerge": 3}
    assert run_output(conn, run_id, "fmerge", generation=2) == {"text": "v2p0 v2p1 v2p2"}


def test_a_rerun_of_a_single_job_run_makes_it_a_run_of_two(db_url: str, conn: Conn) -> None:
    one, two = Registry(), Registry()
    stage("alone", version="1", registry=one)(read_a)
    stage("alone", version="2", registry=two)(read_a)
    run_id = enqueue(conn, "alone", {"text": "x"}, registry=one)
    assert drain(db_url, registry=one).ok
    assert rerun(conn, run_id, "alone", registry=two).generation == 1
    assert run_status(conn, run_id).status == "running"  # type: ignore[union-attr]
    assert drain(db_url, registry=two, run_id=run_id).ok
    assert run_status(conn, run_id).status == "done"  # type: ignore[union-attr]
    assert [(g, v) for _, g, v in outputs_of(conn, run_id)] == [(0, "1"), (1, "2")]


def test_retention_deletes_a_rerun_run_with_its_generations(db_url: str, conn: Conn) -> None:
    run_id = finished_chain(db_url, conn)
    rerun(conn, run_id, "vb", registry=V2)
    assert drain(db_url, registry=V2, run_id=run_id).ok
    age(conn, 8, root=run_id)
    report = prune(conn, 7 * 86400)
    assert (report.jobs, report.outputs) == (5, 5)
    assert conn.execute("SELECT count(*) FROM pipeline.run_generations").fetchone() == (0,)


def run_rows(conn: Conn, run_id: int) -> list[tuple[int, str, str]]:
    return conn.execute(
        "SELECT id, type, status FROM pipeline.jobs WHERE id = %s OR root_id = %s ORDER BY id",
        (run_id, run_id),
    ).fetchall()


def test_a_rerun_waiting_on_a_prune_batch_deleting_its_run_enqueues_nothing(
    db_url: str, conn: Conn
) -> None:
    """The rerun read the run in a snapshot from before the batch committed: it enqueued the
    stage into a run whose outputs (and blob references) were gone, jobs of no run."""
    run_id = finished_chain(db_url, conn)
    age(conn, 8, root=run_id)
    refused: list[BaseException] = []

    def again() -> None:
        with psycopg.connect(db_url, autocommit=True) as other:
            try:
                rerun(other, run_id, "vb", registry=V2)
            except RerunRefused as exc:
                refused.append(exc)

    with psycopg.connect(db_url, autocommit=True) as pruner, pruner.transaction():
        # One prune batch, as retention's prune() runs it, left open while the rerun comes.
        [(cutoff,)] = pruner.execute(Q["prune_cutoff"], {"older_than_s": 7 * 86400}).fetchall()
        params = pass_params(pruner, cutoff, keep_failed=False)
        pruner.execute(Q["prune_lock"])
        [(_, _, runs, locked)] = pruner.execute(
            Q["prune_lock_runs"], params | {"after_id": 0, "batch": 1000}
        ).fetchall()
        assert runs == [run_id]
        pruner.execute(Q["prune_runs"], params | {"runs": runs, "locked": locked})
        rerunning = threading.Thread(target=again)
        rerunning.start()
        wait_for(
            lambda: lock_waiters(conn) == 1,
            timeout=10,
            what="the rerun to wait for the batch's locks",
        )
    rerunning.join(timeout=10)

    assert [str(e) for e in refused] == [f"there is no run {run_id}"]
    assert run_rows(conn, run_id) == []
    assert conn.execute("SELECT count(*) FROM pipeline.run_generations").fetchone() == (0,)


def test_a_prune_leaves_a_run_being_rerun_to_a_later_pass(db_url: str, conn: Conn) -> None:
    run_id = finished_chain(db_url, conn)
    age(conn, 8, root=run_id)
    with psycopg.connect(db_url) as caller:  # the rerun in the caller's open transaction
        assert rerun(caller, run_id, "vb", registry=V2).created
        with psycopg.connect(db_url, autocommit=True) as pruner:
            # A prune that waited for the rerun's transaction would wait for this test.
            pruner.execute("SET lock_timeout = '5s'")
            assert prune(pruner, 7 * 86400).jobs == 0, "the run is being rerun"
        caller.commit()
    assert [t for _, t, s in run_rows(conn, run_id) if s == "queued"] == ["vb"]
    assert drain(db_url, registry=V2, run_id=run_id).ok
    assert run_output(conn, run_id, "vc") is not None


def test_the_async_rerun_makes_the_same_rerun(db_url: str, conn: Conn) -> None:
    run_id = finished_chain(db_url, conn)

    async def twice() -> tuple[RerunResult, RerunResult]:
        async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as aconn:
            made = await arerun(aconn, run_id, "vb", registry=V2)
            return made, await arerun(aconn, run_id, "vb", registry=V2)

    made, again = asyncio.run(twice())
    assert (made.created, again.created) == (True, False)
    assert made.generation == again.generation == 1
    assert rerun(conn, run_id, "vb", registry=V2).created is False


class Approval(BaseModel):
    ok: bool


def test_a_run_waiting_for_input_is_refused(db_url: str, conn: Conn) -> None:
    reg = Registry()

    @stage("approve", registry=reg)
    def approve(job: Text, ctx: Context) -> Text:
        ctx.wait_for("approval", Approval, timeout=3600)
        return job

    run_id = enqueue(conn, "approve", {"text": "x"}, registry=reg)
    drain(db_url, registry=reg)
    assert run_status(conn, run_id).status == "waiting"  # type: ignore[union-attr]
    with pytest.raises(RerunRefused, match="is waiting, not done: wait until it is done"):
        rerun(conn, run_id, "approve", registry=reg, force=True)


def test_the_readers_and_the_save_find_a_runs_generation_by_index(conn: Conn) -> None:
    conn.execute(
        "INSERT INTO pipeline.outputs (root_id, stage, part, job_id, attempt, output, generation)"
        " SELECT g / 10, 'page', g % 10, g, 1, '{}', (g / 10) % 3"
        " FROM generate_series(1, 200000) AS g"
    )
    conn.execute(
        "INSERT INTO pipeline.run_generations (run_id, generation, stage, code_version,"
        " first_job_id, jobs) SELECT r, k, 'page', 'v' || k, 10000000 + r * 3 + k, 1"
        " FROM generate_series(1, 20000) AS r, generate_series(1, 2) AS k"
    )
    conn.execute("ANALYZE pipeline.outputs, pipeline.run_generations")
    params = {"root_id": 777, "stage": "page", "generation": None, "version": None}
    read = "\n".join(r[0] for r in conn.execute(b"EXPLAIN " + Q["run_outputs"].encode(), params))
    assert "Seq Scan" not in read, read
    assert run_output(conn, 777, "page", 3) == {}
    with conn.transaction(force_rollback=True):
        save = conn.execute(
            b"EXPLAIN ANALYZE " + Q["save_output"].encode(),
            {
                "root_id": 777,
                "stage": "page",
                "part": 99,
                "job_id": 10_000_000 + 777 * 3 + 2,
                "attempt": 1,
                "output": '{"n": 1}',
                "code_version": "v2",
            },
        ).fetchall()
        plan = "\n".join(r[0] for r in save)
        assert "Seq Scan" not in plan, plan
        stored = conn.execute(
            "SELECT generation FROM pipeline.outputs WHERE root_id = 777 AND part = 99"
        ).fetchone()
        assert stored == (2,)  # the run's generation 2 started at or before this job
