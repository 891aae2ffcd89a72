"""Re-run a finished run from one of its stages, keeping the outputs of the stages before it.

`rerun(conn, run_id, "extract")` enqueues the stage's jobs of that run again, with the payloads
they had (from the history), as a new generation of the run: 1 for its first rerun, 2 for the
next. What they lead to (a then= chain, a fan-out's join, follow-ups they enqueue) follows as
before, in the same generation. Each output is stored with its job's generation and its stage's
code version (StageSpec.code_version), beside those of the generations before, never over them;
the readers (ctx.outputs, run_output) return a stage's newest generation, so the rerun's stages
read the stored outputs of the stages before the one rerun, and their own new ones after it.

A rerun is idempotent per (run, stage, code version): called twice, or from two connections at
once, it enqueues once, and the second call returns the first's rerun (`created` False). The
code version is the one the workers recorded for the stage (pipeline.stages, a live worker's
first), else the calling process's own (`registry`, when it imports the stage). A rerun at the
version the stage's newest outputs already have would make the same outputs again: it is
refused (SameVersion) unless `force=True`, which still makes it once per (run, stage, version).

Refused, with RerunRefused saying why: a run that does not exist (or is another tenant's, with
`tenant`), one not done (still running or waiting; failed or cancelled: retry its failed jobs
with `pipeline jobs retry` instead), a stage that never ran in it. Runs in the caller's
transaction: the rerun lands with the caller's other writes, or not at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pg_pipeline.errors import PipelineError, UnknownStage
from pg_pipeline.plans import Plan, Rows, Statement, Steps, sync_api
from pg_pipeline.queries import Q
from pg_pipeline.stage import REGISTRY, Registry

#: A worker whose last heartbeat is older than this does not count as running its version
#: (pg_pipeline.recorded_stages.ALIVE_S, the same question).
ALIVE_S = 180.0


class RerunRefused(PipelineError, ValueError):
    """A rerun that cannot be made; the message says why. Nothing was enqueued."""


class SameVersion(RerunRefused):
    """The stage's newest outputs were made by the code version the rerun would run: pass
    force=True (--force) to make them again all the same."""


@dataclass(frozen=True)
class RerunResult:
    run_id: int
    stage: str
    #: the version of the stage's code the rerun was made for (the workers' recorded one)
    code_version: str
    #: the run's generation the rerun's jobs and outputs belong to (1 for the first rerun)
    generation: int
    jobs: int  #: jobs of the stage it enqueued
    #: False: a rerun of the same (run, stage, version) existed already, and this is it
    created: bool
    forced: bool = False
    created_at: datetime | None = None


def rerun_plan(
    run_id: int,
    from_stage: str,
    *,
    tenant: str | None = None,
    force: bool = False,
    registry: Registry | None = None,
) -> Plan[RerunResult]:
    """Enqueue `from_stage`'s jobs of the finished run `run_id` again as its next generation
    (module docstring). `tenant`: the caller acts for that tenant only, and a run of another
    is refused as if it did not exist."""
    if isinstance(run_id, bool) or not isinstance(run_id, int) or run_id < 1:
        raise ValueError(f"run_id must be a positive integer, not {run_id!r}")
    # A NUL would reach PostgreSQL and come back as a DataError, not a refusal.
    if not isinstance(from_stage, str) or not from_stage or "\x00" in from_stage:
        raise ValueError(f"from_stage must be a stage's name, not {from_stage!r}")
    return Plan(
        _rerun(run_id, from_stage, tenant, force, REGISTRY if registry is None else registry),
        atomic=True,
    )


def _rerun(
    run_id: int, stage: str, tenant: str | None, force: bool, registry: Registry
) -> Steps[RerunResult]:
    rows = yield Statement(Q["rerun_recorded_version"], {"stage": stage, "alive_s": ALIVE_S})
    version = _version(stage, rows, registry)
    if version is None:
        names = yield Statement(Q["recorded_stage_names"], {})
        known = {str(n[0]) for n in names} | set(registry.names())
        raise UnknownStage(stage, sorted(known), recorded=True)
    params = {"run_id": run_id, "stage": stage, "version": version}
    facts = yield Statement(Q["rerun_facts"], params)
    if not facts:
        yield from no_run(run_id, tenant)
    existing = _check(run_id, stage, version, tenant, force, facts)
    if existing is not None:
        return existing
    made = yield Statement(Q["rerun_enqueue"], {**params, "forced": force})
    if made:
        generation, jobs, created_at, _ = made[0]
        return RerunResult(
            run_id, stage, version, int(generation), int(jobs), True, force, created_at
        )
    # Nothing made: another rerun of this run committed between the read and the write. If
    # it is this very one, it is the answer; otherwise the run is running it. Or retention
    # deleted the run meanwhile.
    facts = yield Statement(Q["rerun_facts"], params)
    if not facts:
        yield from no_run(run_id, tenant)
    existing = _check(run_id, stage, version, tenant, force, facts)
    if existing is not None:
        return existing
    raise RerunRefused(f"run {run_id} is being rerun by another caller; try again once it ends")


def no_run(run_id: int, tenant: str | None) -> Steps[None]:
    """Raise RerunRefused: there is no run `run_id` (of `tenant`). When it is a job inside a
    run, say which run, as far as the tenant may see it."""
    rows = yield Statement(Q["run_of_job"], {"job_id": run_id})
    whose = "" if tenant is None else f" of tenant {tenant!r}"
    if rows and (tenant is None or rows[0][1] == tenant):
        raise RerunRefused(
            f"job {run_id} is inside run {rows[0][0]}, not a run's first job: name the run "
            f"{rows[0][0]}"
        )
    raise RerunRefused(f"there is no run {run_id}{whose}")


def _version(stage: str, rows: Rows, registry: Registry) -> str | None:
    recorded, live = (str(rows[0][0]), bool(rows[0][1])) if rows else (None, False)
    if recorded is not None and live:
        return recorded
    spec = registry.get_or_none(stage)
    if spec is not None:
        return spec.code_version
    return recorded


def _check(
    run_id: int, stage: str, version: str, tenant: str | None, force: bool, facts: Rows
) -> RerunResult | None:
    """The existing rerun of (run, stage, version), or None when one may be made; raises
    RerunRefused when none may."""
    if not facts or (tenant is not None and facts[0][0] != tenant):
        whose = "" if tenant is None else f" of tenant {tenant!r}"
        raise RerunRefused(f"there is no run {run_id}{whose}")
    _, status, active, stage_jobs, stored, generation, jobs, forced, created_at = facts[0]
    if generation is not None:
        return RerunResult(
            run_id, stage, version, int(generation), int(jobs), False, bool(forced), created_at
        )
    if active or status != "done":
        advice = (
            # A cancelled run may have no failed job: name the jobs it has.
            f"; retry its {status} jobs (`pipeline jobs retry`) instead"
            if status in ("failed", "cancelled") and not active
            else ": wait until it is done"
        )
        raise RerunRefused(f"run {run_id} is {status}, not done{advice}")
    if not stage_jobs:
        raise RerunRefused(f"stage {stage!r} never ran in run {run_id}: nothing to rerun")
    if stored == version and not force:
        raise SameVersion(
            f"stage {stage!r} of run {run_id} already has outputs of version {version!r}, the "
            "version its workers run: deploy the new code first (its workers record their "
            "version when they start), or force the rerun to make them again"
        )
    return None


rerun = sync_api(rerun_plan)
