"""/login: a token in, a session cookie out; /logout: the session ended (security.py says which
tokens, what the cookie holds and how long it lasts)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from pg_pipeline.dashboard.handler import Handler, base_of


class LoginPage(Handler):
    async def sign_in(self, request: Request) -> Response:
        base = base_of(request)
        if not self.gate.guard.required:
            return RedirectResponse(base + "/", status_code=303)
        wrong = False
        if request.method == "POST":
            access = await self.gate.sign_in(request)
            if access is not None:
                response = RedirectResponse(base + "/", status_code=303)
                self.gate.start_session(request, response, access, path=base or "/")
                return response
            wrong = True
        return self.html(None, "login.html", 401 if wrong else 200, base=base, wrong=wrong)

    async def sign_out(self, request: Request) -> Response:
        base = base_of(request)
        response = RedirectResponse(base + "/login", status_code=303)
        await self.gate.end_session(request, response, path=base or "/")
        return response
