"""/schedules: every schedule of the page's tenant, soonest first. /schedules/pause and
/schedules/resume: a GET asks for confirmation, the POST (with its CSRF token: security.py)
does it, for a schedule of the page's tenant alone."""

from __future__ import annotations

from collections.abc import Mapping

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from pg_pipeline.admin import schedules as admin_schedules
from pg_pipeline.admin.status import read_schedules
from pg_pipeline.dashboard.handler import Handler, text_param
from pg_pipeline.dashboard.problem import Problem

#: schedules the page lists, soonest first; how many there are in all is said beside
SCHEDULES_SHOWN = 500


class SchedulesPage(Handler):
    async def show(self, request: Request) -> Response:
        page = self.page(request)
        rows, total = await self.read(lambda c: read_schedules(c, SCHEDULES_SHOWN, page.tenant))
        return self.html(page, "schedules.html", schedules=rows, total=total)


class ScheduleActions(Handler):
    async def change(self, request: Request) -> Response:
        page = self.page(request)
        verb = str(request.path_params["verb"])
        if verb not in ("pause", "resume"):
            raise Problem(404, "Not found", "there is no such page")
        params: Mapping[str, str] = request.query_params
        if request.method == "POST":
            form = await self.gate.change_form(request, page)
            params = {k: v for k, v in form.items() if isinstance(v, str)}
        name = text_param(params, "name")
        if name is None:
            raise Problem(400, "Bad request", "which schedule? name is missing")
        back = page.link("/")
        if request.method == "GET":
            return self.confirm(
                page,
                f"{verb.capitalize()} schedule {name!r}?",
                "Fire times that pass while it is paused are skipped."
                if verb == "pause"
                else "It fires again from its next fire time after now.",
                back,
                fields={"name": name},
            )
        change = admin_schedules.pause if verb == "pause" else admin_schedules.resume
        if not await self.write(lambda c: change(c, name, tenant=page.tenant)):
            raise Problem(404, "Not found", f"there is no schedule {name!r}")
        return RedirectResponse(back, status_code=303)
