"""/login: a token in, a session cookie out (security.py says which tokens, and what the
cookie holds)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from pipeline.dashboard.handler import Handler, base_of


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
                self.gate.set_session(
                    response, access, https=request.url.scheme == "https", path=base or "/"
                )
                return response
            wrong = True
        return self.html(None, "login.html", 401 if wrong else 200, base=base, wrong=wrong)
