"""/runs: the newest runs; /runs/{id}: one run as its stages' jobs, and what it extracted,
refreshing itself until it is finished."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from pg_pipeline.admin import runs as admin_runs
from pg_pipeline.admin import usage as admin_usage
from pg_pipeline.dashboard.handler import Handler, parse_id
from pg_pipeline.dashboard.problem import Problem
from pg_pipeline.output_versions import OutputVersion, output_versions
from pg_pipeline.runs import TERMINAL


@dataclass(frozen=True)
class Extraction:
    """An output that explains itself: fields, and an `evidence` object per field with its
    confidence (what the documents app's extract stage stores)."""

    stage: str
    job_id: int
    #: (field, value, evidence) in the output's order; evidence {} when it gives none
    fields: list[tuple[str, Any, dict[str, Any]]]
    warnings: list[str]


class RunPages(Handler):
    async def list(self, request: Request) -> Response:
        page = self.page(request)
        before_raw = request.query_params.get("before")
        before = parse_id(before_raw, "before") if before_raw else None
        rows = await self.read(lambda c: admin_runs.list_runs(c, page.tenant, before))
        return self.html(page, "runs.html", rows=rows)

    async def show(self, request: Request) -> Response:
        page = self.page(request)
        run_id = self.path_id(request, "run_id", "run id")
        found, versions, used = await self.read(
            lambda c: (
                admin_runs.read_run(c, run_id, page.tenant),
                output_versions(c, run_id, tenant=page.tenant) or [],
                admin_usage.run_usage(c, run_id, page.tenant),
            )
        )
        if found is None:
            raise Problem(404, "Not found", f"there is no run {run_id}")
        extractions, outputs = split_outputs(found, self.settings.field_order)
        template = "_run.html" if request.headers.get("hx-request") else "run.html"
        # A failed run may still have jobs running (siblings of the one that failed).
        finished = found.status != "running" and all(
            j.status in TERMINAL for s in found.stages for j in s.jobs
        )
        # 286 tells htmx to stop polling: a finished run changes no more (unless retried,
        # which a reload shows).
        status = 286 if finished and template == "_run.html" else 200
        return self.html(
            page,
            template,
            status,
            run=found,
            extractions=extractions,
            outputs=outputs,
            finished=finished,
            versions=with_previous(versions),
            usage=used,
            cost=admin_usage.cost_of(used),
            flash=_flash(request),
        )


def with_previous(versions: list[OutputVersion]) -> list[tuple[OutputVersion, int | None]]:
    """Each output version with the generation of its stage's version before it, to compare
    with (None for a stage's first)."""
    last: dict[str, int] = {}
    paired = []
    for v in versions:
        paired.append((v, last.get(v.stage)))
        last[v.stage] = v.generation
    return paired


def _flash(request: Request) -> str | None:
    """What the redirect after a rerun says, from the two words it may say only."""
    done = request.query_params.get("done")
    generation = request.query_params.get("generation", "")
    if done in ("rerun", "already rerun") and generation.isdigit():
        return f"Run {done} as generation {int(generation)}."
    return None


def split_outputs(
    run: admin_runs.Run, field_order: Callable[[str], Sequence[str] | None]
) -> tuple[list[Extraction], list[tuple[str, int, Any]]]:
    """A run's outputs as the extractions among them, and the others as they are.
    field_order(stage): the names of the stage's output fields in the order to show them."""
    extractions: list[Extraction] = []
    plain: list[tuple[str, int, Any]] = []
    for stage, job_id, output in run.outputs:
        found = _extraction(stage, job_id, output, field_order(stage))
        if found is not None:
            extractions.append(found)
        else:
            plain.append((stage, job_id, output))
    return extractions, plain


def _extraction(
    stage: str, job_id: int, output: Any, order: Sequence[str] | None = None
) -> Extraction | None:
    """The fields in `order` (the output model's), then any the model does not name in the
    stored order: jsonb keeps keys shortest first, which reads as no order at all."""
    if not isinstance(output, dict) or not isinstance(output.get("evidence"), dict):
        return None
    evidence: dict[str, Any] = output["evidence"]
    skip = {"evidence", "warnings", "extractor"}
    known = [n for n in order or () if n in output]
    names = known + [n for n in output if n not in set(known)]
    fields: list[tuple[str, Any, dict[str, Any]]] = []
    for name in names:
        if name not in skip:
            why = evidence.get(name)
            fields.append((str(name), output[name], why if isinstance(why, dict) else {}))
    warnings = output.get("warnings")
    return Extraction(
        stage,
        job_id,
        fields,
        [str(w) for w in warnings] if isinstance(warnings, list) else [],
    )
