"""/review: the steps waiting for a person (durable waits, pipeline.waits), of the page's tenant.
/review/{job_id}: one of them as a form drawn from the JSON schema of what it waits for
(pipeline/dashboard/schema_form.py), prefilled from its proposal, with its detail beside each
field; "Accept" signals the proposal as it is, "Correct" the values as edited. The POST (with
its CSRF token: security.py) signals the run in the dashboard's own transaction, so that the
step resumes; a payload its schema refuses shows the form again with the fields' errors.

Nothing here knows what is reviewed: the documents app's fields, an approval, anything a stage
waits for. What the form shows beside a field comes from the wait's `detail` in the shape
docs/dashboard.md describes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import psycopg
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

import pg_pipeline
from pg_pipeline.admin import waits as admin_waits
from pg_pipeline.dashboard import schema_form
from pg_pipeline.dashboard.handler import Handler, Page
from pg_pipeline.dashboard.problem import Problem

#: open waits the queue lists, oldest first
WAITS_SHOWN = 200
#: A picture of the page beside a field: a PNG as a data URI, nothing else (no SVG, which could
#: carry script; no URL, which would fetch from elsewhere). The CSP allows `img-src data:`.
_PNG_URI = re.compile(r"data:image/png;base64,[A-Za-z0-9+/]+={0,2}")
IMAGE_MAX = 400_000  #: characters of one such URI shown


def image_of(detail: Mapping[str, Any]) -> str | None:
    """The field's picture, when it is a PNG data URI of a sane size."""
    image = detail.get("image")
    if isinstance(image, str) and len(image) <= IMAGE_MAX and _PNG_URI.fullmatch(image):
        return image
    return None


def schema_errors(schema: Mapping[str, Any], payload: Any) -> tuple[dict[str, str], list[str]]:
    """What `pg_pipeline.signal` would refuse in `payload`, as errors beside the fields they
    name and the rest: the same JSON schema check, made here so that each error shows beside
    its input (signal's InvalidSignal says them all in one message)."""
    per_field: dict[str, str] = {}
    other: list[str] = []
    try:
        validator = Draft202012Validator(dict(schema))
        found = sorted(validator.iter_errors(payload), key=lambda e: [str(p) for p in e.path])
    except SchemaError:  # signal says what it makes of it
        return per_field, other
    for error in found:
        path = list(error.absolute_path)
        head = path[0] if path and isinstance(path[0], str) else None
        where = ".".join(str(p) for p in path[1:])
        message = f"{where}: {error.message}" if where else error.message
        if head is None:
            other.append(error.message)
        elif head in per_field:
            per_field[head] += f"; {message}"
        else:
            per_field[head] = message
    return per_field, other


class ReviewPages(Handler):
    async def queue(self, request: Request) -> Response:
        page = self.page(request)
        rows = await self.read(
            lambda c: admin_waits.list_waits(c, tenant=page.tenant, limit=WAITS_SHOWN)
        )
        answered = request.query_params.get("answered")
        return self.html(
            page, "review.html", waits=rows, shown=WAITS_SHOWN, answered=answered is not None
        )

    async def show(self, request: Request) -> Response:
        page = self.page(request)
        job_id = self.path_id(request, "job_id", "job id")
        name = request.query_params.get("name")
        wait = await self.read(lambda c: self._visible(c, page, job_id, name))
        return self._form(page, wait)

    async def answer(self, request: Request) -> Response:
        page = self.page(request)
        job_id = self.path_id(request, "job_id", "job id")
        raw = await self.gate.change_form(request, page)
        form = {k: v for k, v in raw.items() if isinstance(v, str)}
        action = form.get("action")
        if action not in ("accept", "correct"):
            raise Problem(400, "Bad request", "answer with accept or correct")
        name = form.get("name") or None

        def signal(conn: psycopg.Connection[Any]) -> Response:
            wait = self._visible(conn, page, job_id, name)
            if wait.resolved_at is not None:
                return self._form(page, wait, status=409)
            fields = self._fields(wait)
            if action == "accept":
                payload: Any = wait.proposal if wait.proposal is not None else {}
                texts: dict[str, str] | None = None
            else:
                payload, texts, errors = schema_form.parse_form(fields, form)
                if errors:
                    return self._form(page, wait, texts=texts, errors=errors, status=422)
            schema = wait.schema if isinstance(wait.schema, Mapping) else {}
            per_field, other = schema_errors(schema, payload)
            if per_field or other:
                return self._form(
                    page, wait, texts=texts, errors=per_field, problems=other, status=422
                )
            try:
                pg_pipeline.signal(
                    conn, wait.run_id, wait.name, payload, job_id=wait.job_id, tenant=page.tenant
                )
            except pg_pipeline.InvalidSignal as exc:
                return self._form(page, wait, texts=texts, problems=[str(exc)], status=422)
            except pg_pipeline.NoWaitingStep as exc:
                return self._form(page, wait, gone=True, problems=[str(exc)], status=409)
            return RedirectResponse(page.link("/review", answered=wait.job_id), status_code=303)

        return await self.write(signal)

    def _visible(
        self, conn: psycopg.Connection[Any], page: Page, job_id: int, name: str | None
    ) -> admin_waits.WaitTask:
        """The wait of the job, when the page's tenant may see it; else a 404, as for a job of
        another tenant: the same answer as for one that does not exist."""
        wait = admin_waits.get_wait(conn, job_id, name, tenant=page.tenant)
        if wait is None or (page.tenant is not None and wait.tenant_id != page.tenant):
            raise Problem(404, "Not found", f"job {job_id} waits for no answer")
        return wait

    def _fields(
        self,
        wait: admin_waits.WaitTask,
        texts: Mapping[str, str] | None = None,
        errors: Mapping[str, str] | None = None,
    ) -> list[schema_form.FormField]:
        proposal = wait.proposal if isinstance(wait.proposal, Mapping) else {}
        detail = wait.detail if isinstance(wait.detail, Mapping) else {}
        return schema_form.form_fields(
            wait.schema if isinstance(wait.schema, Mapping) else {},
            proposal,
            detail,
            texts=texts,
            errors=errors,
        )

    def _form(
        self,
        page: Page,
        wait: admin_waits.WaitTask,
        *,
        texts: Mapping[str, str] | None = None,
        errors: Mapping[str, str] | None = None,
        problems: list[str] | None = None,
        gone: bool = False,
        status: int = 200,
    ) -> Response:
        detail = wait.detail if isinstance(wait.detail, Mapping) else {}
        fields = self._fields(wait, texts, errors)
        return self.html(
            page,
            "review_form.html",
            status,
            wait=wait,
            fields=fields,
            images={f.name: image_of(f.detail) for f in fields},
            title=str(detail.get("title") or f"{wait.stage} {wait.name}"),
            warnings=[str(w) for w in detail.get("warnings") or [] if isinstance(w, str)],
            problems=problems or [],
            gone=gone or wait.resolved_at is not None,
            flagged=sum(f.flagged for f in fields),
        )
