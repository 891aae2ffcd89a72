"""/runs/{id}/rerun: re-run a finished run from a stage (a GET asks for confirmation, the POST,
with its CSRF token (security.py), makes the rerun, scoped to the page's tenant like every
read); /runs/{id}/diff: two versions of a stage's outputs side by side (pipeline/reruns.py,
pipeline/output_versions.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from pg_pipeline.dashboard.handler import Handler, Page, text_param
from pg_pipeline.dashboard.problem import Problem
from pg_pipeline.errors import UnknownStage
from pg_pipeline.output_versions import (
    NoSuchVersion,
    OutputDiff,
    OutputVersion,
    diff_outputs,
    output_versions,
)
from pg_pipeline.reruns import RerunRefused, SameVersion, rerun


class RunVersions(Handler):
    async def rerun(self, request: Request) -> Response:
        page = self.page(request)
        run_id = self.path_id(request, "run_id", "run id")
        params: Mapping[str, str] = request.query_params
        if request.method == "POST":
            form = await self.gate.change_form(request, page)
            params = {k: v for k, v in form.items() if isinstance(v, str)}
        stage = text_param(params, "stage")
        if stage is None:
            raise Problem(400, "Bad request", "say which stage to rerun from (stage=)")
        force = params.get("force") in ("1", "on", "true")
        back = page.link(f"/runs/{run_id}")
        if request.method == "GET":
            await self._visible(page, run_id)
            return self.confirm(
                page,
                f"Rerun run {run_id} from {stage}?",
                f"The jobs of {stage} run again, and what follows them, as the run's next "
                "generation; the stages before it are not run again and their outputs are "
                "kept, as are this generation's."
                + (" Forced: even at the version its outputs have." if force else ""),
                back,
                {"stage": stage, "force": "1" if force else ""},
            )
        try:
            made = await self.write(
                lambda c: rerun(c, run_id, stage, tenant=page.tenant, force=force)
            )
        except SameVersion as exc:
            raise Problem(409, "Not rerun", f"{exc} (tick “even at the same version”)") from None
        except (RerunRefused, UnknownStage) as exc:
            raise Problem(409, "Not rerun", str(exc)) from None
        done = "rerun" if made.created else "already rerun"
        return RedirectResponse(
            page.link(f"/runs/{run_id}", done=done, generation=made.generation), status_code=303
        )

    async def diff(self, request: Request) -> Response:
        page = self.page(request)
        run_id = self.path_id(request, "run_id", "run id")
        params = request.query_params
        stage = text_param(params, "stage")
        if stage is None:
            raise Problem(400, "Bad request", "say which stage's outputs to compare (stage=)")
        left, right = text_param(params, "left"), text_param(params, "right")
        if (left is None) != (right is None):
            raise Problem(400, "Bad request", "give both versions to compare (left= and right=)")
        versions = None if left is None or right is None else (left, right)

        def read(c: psycopg.Connection[Any]) -> tuple[OutputDiff, list[OutputVersion]]:
            found = diff_outputs(c, run_id, stage, versions, tenant=page.tenant)
            return found, output_versions(c, run_id, stage, tenant=page.tenant) or []

        try:
            found, choices = await self.read(read)
        except NoSuchVersion as exc:
            raise Problem(404, "Not found", str(exc)) from None
        return self.html(page, "run_diff.html", diff=found, choices=choices)

    async def _visible(self, page: Page, run_id: int) -> None:
        """A 404 before the confirmation, for a run that is not there (for this page's
        tenant), as the POST gives: no "Yes, rerun" that can only fail."""
        found = await self.read(lambda c: output_versions(c, run_id, tenant=page.tenant))
        if found is None:
            raise Problem(404, "Not found", f"there is no run {run_id}")
