"""Who may see the dashboard, which tenants they see, and who may change things through it: every
security decision about a request is made here (Gate), and the page handlers only ask.

* Bound to loopback without a token, anyone on this machine may look and act (as they could
  run `pipeline jobs retry` themselves). Anywhere else it needs a token:
  `pipeline dashboard` refuses to bind without one, and a mounted app without one shows no
  action off loopback.
* PIPELINE_DASHBOARD_TOKEN sees every tenant. PIPELINE_DASHBOARD_TENANT_TOKENS gives tokens
  that see one tenant each (`acme=TOKEN,zeta=TOKEN`): every query of a request made with one is
  filtered to its tenant, and another tenant's job or run does not exist for it.
* With any token configured, every request needs one: `Authorization: Bearer TOKEN`, or the
  session cookie the login form sets, which holds an HMAC of the token, never the token.
* Every POST carries a CSRF token: an HMAC, under a secret of this process, of a random value
  in an HttpOnly, SameSite=Strict cookie. A page on another site can neither read the cookie
  nor forge the HMAC; a cross-site Origin or Sec-Fetch-Site is refused outright too.
* Every response forbids inline scripts and styles, framing and cross-site referrers
  (SecurityHeaders).

Starlette loads with the app, not with this module: `pipeline dashboard` imports it to check
its tokens before it serves anything.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipeline.dashboard import forms
from pipeline.dashboard.problem import Problem

if TYPE_CHECKING:
    from starlette.datastructures import FormData
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKEN_ENV = "PIPELINE_DASHBOARD_TOKEN"
TENANT_TOKENS_ENV = "PIPELINE_DASHBOARD_TENANT_TOKENS"
SESSION_COOKIE = "pipeline_dashboard_session"
CSRF_COOKIE = "pipeline_dashboard_csrf"
CSRF_FIELD = "csrf"
#: Characters a tenant's token has at least: it is all that stands between two customers.
TENANT_TOKEN_MIN = 16


@dataclass(frozen=True)
class Access:
    """What one request may see: tenant None is every tenant."""

    tenant: str | None


EVERY_TENANT = Access(None)


def parse_tenant_tokens(text: str) -> dict[str, str]:
    """PIPELINE_DASHBOARD_TENANT_TOKENS: `TENANT=TOKEN` entries separated by commas or white
    space; the first `=` ends the tenant, so a token may hold `=` (base64 padding)."""
    found: dict[str, str] = {}
    for entry in re.split(r"[,\s]+", text.strip()):
        if not entry:
            continue
        tenant, eq, token = entry.partition("=")
        if not eq or not tenant or not token:
            raise ValueError(
                f"{TENANT_TOKENS_ENV}: {entry[:20]!r}… is not TENANT=TOKEN "
                "(entries are separated by commas or spaces)"
            )
        if tenant in found:
            raise ValueError(f"{TENANT_TOKENS_ENV}: tenant {tenant!r} is given twice")
        found[tenant] = token
    return found


class Guard:
    def __init__(self, token: str | None, tenant_tokens: Mapping[str, str] | None = None) -> None:
        self.token = token or None
        self._secret = secrets.token_bytes(32)
        keys: list[tuple[str, Access]] = []
        if self.token is not None:
            keys.append((self.token, EVERY_TENANT))
        for tenant, given in (tenant_tokens or {}).items():
            if not tenant or not given:
                raise ValueError("a tenant token needs a tenant and a token")
            if len(given) < TENANT_TOKEN_MIN:
                raise ValueError(
                    f"the token of tenant {tenant!r} is shorter than {TENANT_TOKEN_MIN} "
                    "characters: make one with `python -c 'import secrets; "
                    "print(secrets.token_urlsafe(32))'`"
                )
            if any(given == other for other, _ in keys):
                # One token, two scopes: which one a request gets would be a matter of order.
                raise ValueError(f"the token of tenant {tenant!r} is also another one's token")
            keys.append((given, Access(tenant)))
        self._keys = keys
        self._sessions = [(self._session_of(t, a), a) for t, a in keys]
        self.tenants = frozenset(a.tenant for _, a in keys if a.tenant is not None)

    @property
    def required(self) -> bool:
        """Whether every request must carry a token."""
        return bool(self._keys)

    @staticmethod
    def _session_of(token: str, access: Access) -> str:
        message = b"pipeline dashboard session"
        if access.tenant is not None:
            message += b"\x00tenant\x00" + access.tenant.encode()
        return hmac.new(token.encode(), message, hashlib.sha256).hexdigest()

    def session_value(self, access: Access) -> str:
        for value, found in self._sessions:
            if found == access:
                return value
        raise KeyError(access)

    def access(self, cookies: Mapping[str, str], authorization: str | None) -> Access | None:
        """What the request may see, or None: it has no valid token."""
        if not self._keys:
            return EVERY_TENANT
        if authorization and authorization.startswith("Bearer "):
            return self.access_for_token(authorization[len("Bearer ") :])
        return _match(cookies.get(SESSION_COOKIE, ""), self._sessions)

    def access_for_token(self, given: str) -> Access | None:
        return _match(given, self._keys)

    @staticmethod
    def new_nonce() -> str:
        return secrets.token_urlsafe(24)

    def csrf_token(self, nonce: str) -> str:
        return hmac.new(self._secret, nonce.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, nonce: str | None, given: str | None) -> bool:
        if not nonce or not given:
            return False
        return hmac.compare_digest(self.csrf_token(nonce), given)


def _match(given: str, keys: list[tuple[str, Access]]) -> Access | None:
    # Compared with every key, in constant time each: neither a token's characters nor its
    # place in the list shows in how long a refusal takes.
    found: Access | None = None
    for key, access in keys:
        if hmac.compare_digest(given.encode(), key.encode()) and found is None:
            found = access
    return found


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def same_origin(origin: str | None, fetch_site: str | None, host: str | None) -> bool:
    """False for a request a browser says came from another site."""
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return False
    if origin is None or origin == "null":
        return origin is None
    _, _, rest = origin.partition("://")
    return rest == host


@dataclass(frozen=True)
class Admission:
    """What one request may see and do, as the gate decided."""

    #: every read and change of the request is scoped to it; None: every tenant
    tenant: str | None
    #: the tenant came from ?tenant=: links carry it on
    tenant_in_url: bool
    #: the app's or the token's tenant: the request cannot ask for another
    pinned: bool
    actions: bool  #: retry, cancel, pause and resume are offered and accepted
    csrf_nonce: str
    csrf_new: bool  #: the nonce is new: the response sets its cookie
    csrf: str  #: the token this request's forms carry


class Gate:
    """Every check a request passes: its token or session (and so its tenant), its forms'
    CSRF token, and for a change: actions on, same origin, the token right."""

    def __init__(self, guard: Guard, *, tenant: str | None, read_only: bool) -> None:
        self.guard = guard
        self.tenant = tenant
        self.read_only = read_only
        others = guard.tenants - {tenant}
        if tenant is not None and others:
            raise ValueError(
                f"a dashboard opened for tenant {tenant!r} has tokens for other "
                f"tenants ({', '.join(sorted(others))}), which would see nothing"
            )

    def admit(self, request: Request) -> Admission:
        """What the request may see and do; a Problem when it may not come in at all."""
        access = self.guard.access(request.cookies, request.headers.get("authorization"))
        if access is None:
            raise Problem(401, "Sign in", "this dashboard needs its token")
        try:
            asked = forms.text(request.query_params, "tenant")
        except forms.BadInput as exc:
            raise Problem(400, "Bad request", str(exc)) from None
        # The app's tenant, or the token's: every read and change of this request is then
        # filtered to it, whatever the URL or the form asks.
        pinned = self.tenant or access.tenant
        if pinned is not None and asked is not None and asked != pinned:
            raise Problem(403, "Forbidden", f"this dashboard is opened for tenant {pinned!r} alone")
        server = request.scope.get("server")
        bound_loopback = is_loopback(server[0] if server else None)
        nonce = request.cookies.get(CSRF_COOKIE) or ""
        new = not (16 <= len(nonce) <= 64)
        if new:
            nonce = self.guard.new_nonce()
        return Admission(
            tenant=pinned or asked,
            tenant_in_url=pinned is None and asked is not None,
            pinned=pinned is not None,
            actions=not self.read_only and (self.guard.required or bound_loopback),
            csrf_nonce=nonce,
            csrf_new=new,
            csrf=self.guard.csrf_token(nonce),
        )

    def allow_changes(self, admission: Admission) -> None:
        """Before a page that offers a change (its confirmation)."""
        if not admission.actions:
            raise Problem(403, "Read-only", "changes are turned off on this dashboard")

    async def change_form(self, request: Request, admission: Admission) -> FormData:
        """A POST's form, after the checks every change passes."""
        if not admission.actions:
            raise Problem(
                403,
                "Read-only",
                "changes are turned off here: the dashboard runs --read-only, or without "
                f"{TOKEN_ENV} off loopback",
            )
        if not _same_origin(request):
            raise Problem(403, "Forbidden", "a change must come from the dashboard's own pages")
        form = await request.form()
        given = form.get(CSRF_FIELD)
        if not self.guard.csrf_ok(
            request.cookies.get(CSRF_COOKIE), given if isinstance(given, str) else None
        ):
            raise Problem(
                403, "Forbidden", "the form's CSRF token is missing or stale: reload the page"
            )
        return form

    async def sign_in(self, request: Request) -> Access | None:
        """The access the login form's token gives, or None: it is no token of ours."""
        if not _same_origin(request):
            # Else another site could sign a browser in with a token of its choosing.
            raise Problem(403, "Forbidden", "sign in from the dashboard's own page")
        form = await request.form()
        given = form.get("token")
        return self.guard.access_for_token(given) if isinstance(given, str) else None

    def set_session(self, response: Response, access: Access, *, https: bool, path: str) -> None:
        response.set_cookie(
            SESSION_COOKIE,
            self.guard.session_value(access),
            httponly=True,
            samesite="strict",
            secure=https,
            path=path,
        )

    @staticmethod
    def set_csrf_nonce(response: Response, admission: Admission, *, path: str) -> None:
        """Once per browser: the nonce the forms' CSRF tokens are made from."""
        if admission.csrf_new:
            response.set_cookie(
                CSRF_COOKIE, admission.csrf_nonce, httponly=True, samesite="strict", path=path
            )


def _same_origin(request: Request) -> bool:
    return same_origin(
        request.headers.get("origin"),
        request.headers.get("sec-fetch-site"),
        request.headers.get("host"),
    )


#: Every response: no inline script or style may run (htmx is a file of ours), no framing,
#: no referrer leaking job ids to other sites. same-origin, not no-referrer: with no-referrer a
#: browser sends `Origin: null` on the dashboard's own form posts, which the CSRF check refuses.
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
]


class SecurityHeaders:
    """ASGI middleware: SECURITY_HEADERS on every response, error pages and files too."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)
