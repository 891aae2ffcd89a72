"""Who may see the dashboard, which tenants they see, and who may change things through it: every
security decision about a request is made here (Gate), and the page handlers only ask.

* Which requests are answered at all (Hosts, checked by HostCheck before any route): the Host
  a browser sent must be a loopback name or address (localhost, 127.0.0.0/8, ::1, any port)
  or a configured name (PIPELINE_DASHBOARD_HOSTS), else 421. A page on another site that
  rebinds its own name to 127.0.0.1 reaches the socket, but with its own name in Host. With a
  token and no names configured, any Host is answered: the token keeps such a page out.
* Behind a reverse proxy, X-Forwarded-Host, -Proto and -Port are believed from a configured
  proxy's address (PIPELINE_DASHBOARD_TRUSTED_PROXIES) alone, and its forwarded name must pass
  the same check as its Host. From anyone else they are ignored.
* Bound to loopback without a token, a request made straight to the socket under a loopback
  name may look and act (as its sender could run `pipeline jobs retry` themselves). Through a
  proxy (configured or not), under a configured name, or off loopback, it may only look:
  `pipeline dashboard` refuses to bind elsewhere without a token.
* PIPELINE_DASHBOARD_TOKEN sees every tenant. PIPELINE_DASHBOARD_TENANT_TOKENS gives tokens
  that see one tenant each (`acme=TOKEN,zeta=TOKEN`): every query of a request made with one is
  filtered to its tenant, and another tenant's job or run does not exist for it.
* With any token configured, every request needs one: `Authorization: Bearer TOKEN`, or the
  session cookie the login form sets. That cookie holds a random id of a session kept in this
  process (Sessions), never the token: it expires after a stated time on the server, whatever
  the browser does; signing out ends it; a restart ends every session, so a token taken out of
  the configuration takes its sessions with it.
* Every POST carries a CSRF token: an HMAC, under a secret of this process, of a random value
  in an HttpOnly, SameSite=Strict cookie. A page on another site can neither read the cookie
  nor forge the HMAC; a cross-site Origin or Sec-Fetch-Site is refused outright too. Cookies
  are Secure when the request came over TLS (X-Forwarded-Proto from the configured proxy).
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
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pg_pipeline.dashboard import forms
from pg_pipeline.dashboard.problem import Problem

if TYPE_CHECKING:
    from starlette.datastructures import FormData
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKEN_ENV = "PIPELINE_DASHBOARD_TOKEN"
TENANT_TOKENS_ENV = "PIPELINE_DASHBOARD_TENANT_TOKENS"
HOSTS_ENV = "PIPELINE_DASHBOARD_HOSTS"
TRUSTED_PROXIES_ENV = "PIPELINE_DASHBOARD_TRUSTED_PROXIES"
SESSION_COOKIE = "pipeline_dashboard_session"
CSRF_COOKIE = "pipeline_dashboard_csrf"
CSRF_FIELD = "csrf"
#: Characters a tenant's token has at least: it is all that stands between two customers.
TENANT_TOKEN_MIN = 16
#: Seconds a sign-in lasts: a working day, so a cookie left in a browser dies overnight.
SESSION_MAX_AGE_S = 8 * 3_600
#: Sessions kept at once: past it, the oldest ends first (only a valid token signs in).
SESSIONS_MAX = 10_000

#: Headers that say a proxy forwarded the request: from a configured proxy the first three are
#: believed; from anyone else, their presence alone means the sender may be anywhere.
FORWARDED_HOST = "x-forwarded-host"
FORWARDED_PROTO = "x-forwarded-proto"
FORWARDED_PORT = "x-forwarded-port"
FORWARDING = frozenset(
    {FORWARDED_HOST, FORWARDED_PROTO, FORWARDED_PORT, "x-forwarded-for", "forwarded", "x-real-ip"}
)
DEFAULT_PORTS = {"http": 80, "https": 443}

_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"  # `_`: container names have them
_HOST_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
_PORT = re.compile(r"[0-9]{1,5}")


@dataclass(frozen=True)
class Access:
    """What one request may see: tenant None is every tenant."""

    tenant: str | None


EVERY_TENANT = Access(None)


def parse_tenant_tokens(text: str) -> dict[str, str]:
    """PIPELINE_DASHBOARD_TENANT_TOKENS: `TENANT=TOKEN` entries separated by commas or white
    space; the first `=` ends the tenant, so a token may hold `=` (base64 padding)."""
    found: dict[str, str] = {}
    for entry in parse_list(text):
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


def parse_list(text: str) -> list[str]:
    """A variable's entries, separated by commas or white space."""
    return [entry for entry in re.split(r"[,\s]+", text.strip()) if entry]


# -- where a request was sent ------------------------------------------------------------------


@dataclass(frozen=True)
class Authority:
    """A Host header's parts: the name or address (lower case, no brackets, no final dot) and
    the port, when it states one."""

    host: str
    port: int | None


def parse_authority(text: str) -> Authority | None:
    """A Host (or X-Forwarded-Host) value, or None when it is not one: empty, several, or with
    a scheme, user, path or a port that is not a number."""
    if not text or len(text) > 300:
        return None
    if text.startswith("["):
        address, bracket, rest = text[1:].partition("]")
        if not bracket:
            return None
        try:
            host = str(ipaddress.IPv6Address(address))
        except ValueError:
            return None
    else:
        name, _, port_part = text.partition(":")
        rest = f":{port_part}" if port_part or text.endswith(":") else ""
        host = name.lower().removesuffix(".")
        if not _HOST_NAME.fullmatch(host):
            return None
    if not rest:
        return Authority(host, None)
    port = rest[1:]
    if not rest.startswith(":") or not _PORT.fullmatch(port) or not 0 < int(port) <= 65_535:
        return None
    return Authority(host, int(port))


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host.lower().removesuffix(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Where:
    """Where a request was sent, as far as the gate believes it: through a configured proxy,
    what that proxy forwarded; else the request's own Host and scheme."""

    scheme: str  #: "http" or "https"
    host: str
    port: int | None
    #: it came through a proxy, configured or not: its sender may be anywhere
    proxied: bool

    @property
    def https(self) -> bool:
        return self.scheme == "https"

    @property
    def origin(self) -> str:
        """The browser's Origin for a page served from here."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = self.port if self.port not in (None, DEFAULT_PORTS.get(self.scheme)) else None
        return f"{self.scheme}://{host}" + (f":{port}" if port else "")


def parse_host_names(entries: Iterable[str]) -> frozenset[str]:
    """Configured host names (or addresses), as Host headers are compared with them."""
    names: set[str] = set()
    for entry in entries:
        found = parse_authority(entry.strip())
        if found is None or found.port is not None:
            raise ValueError(
                f"{HOSTS_ENV}: {entry[:40]!r} is not a host name or address (no scheme, port "
                "or path: every port of a name is served)"
            )
        names.add(found.host)
    return frozenset(names)


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_proxies(entries: Iterable[str]) -> tuple[Network, ...]:
    """Configured proxies: addresses or networks (10.0.0.0/8)."""
    found: list[Network] = []
    for entry in entries:
        try:
            found.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ValueError(
                f"{TRUSTED_PROXIES_ENV}: {entry[:40]!r} is not an IP address or network"
            ) from None
    return tuple(found)


class Hosts:
    """Which Host names the dashboard answers to, and whose forwarding headers it believes."""

    def __init__(
        self,
        names: Iterable[str] = (),
        proxies: Iterable[str] = (),
        *,
        any_host: bool = False,
    ) -> None:
        self.names = parse_host_names(names)
        self.proxies = parse_proxies(proxies)
        #: with a token and no configured name, any Host: the token keeps strangers out
        self.any_host = any_host and not self.names

    def allowed(self, host: str) -> bool:
        return self.any_host or is_loopback(host) or host in self.names

    def trusted(self, peer: str | None) -> bool:
        if peer is None or not self.proxies:
            return False
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(address in network for network in self.proxies)

    def where(self, scope: Scope) -> Where:
        """Where the request was sent; a Problem (400 or 421) when it is not for us."""
        headers: dict[str, list[str]] = {}
        for raw_name, raw_value in scope.get("headers", []):
            headers.setdefault(raw_name.decode("latin-1").lower(), []).append(
                raw_value.decode("latin-1")
            )
        given = headers.get("host", [])
        own = parse_authority(given[0].strip()) if len(given) == 1 else None
        if own is None:
            raise Problem(400, "Bad request", "the request needs one Host header, a host name")
        # The Host itself is checked even from a configured proxy: a browser rebound to the
        # proxy's own address (127.0.0.1 when it runs here) could add X-Forwarded-Host, but
        # cannot change the Host its page's name gives.
        self._check(own.host)
        proxied = any(name in FORWARDING for name in headers)
        client = scope.get("client")
        scheme = str(scope.get("scheme", "http"))
        if not (proxied and self.trusted(client[0] if client else None)):
            return Where(scheme, own.host, own.port, proxied)
        forwarded = own
        if FORWARDED_HOST in headers:
            found = parse_authority(_nearest(headers[FORWARDED_HOST]))
            if found is None:
                raise Problem(400, "Bad request", "the proxy's X-Forwarded-Host is not a host")
            self._check(found.host)
            forwarded = found
        if FORWARDED_PROTO in headers:
            scheme = _nearest(headers[FORWARDED_PROTO]).lower()
            if scheme not in DEFAULT_PORTS:
                raise Problem(400, "Bad request", "the proxy's X-Forwarded-Proto is not http(s)")
        port = forwarded.port
        if port is None and FORWARDED_HOST in headers and FORWARDED_PORT in headers:
            port_text = _nearest(headers[FORWARDED_PORT])
            port = int(port_text) if _PORT.fullmatch(port_text) else None
        return Where(scheme, forwarded.host, port, proxied=True)

    def _check(self, host: str) -> None:
        if not self.allowed(host):
            raise Problem(
                421,
                "Misdirected request",
                f"this dashboard does not answer to the name {host!r}: it serves loopback "
                f"names and addresses, and the names in {HOSTS_ENV} (`pipeline dashboard "
                "--allowed-host NAME`)",
            )


def _nearest(values: list[str]) -> str:
    # A proxy appends to a list a client may have started: the last entry is the one our
    # proxy wrote, the rest came from whoever talked to it.
    return values[-1].split(",")[-1].strip()


def same_origin(origin: str | None, fetch_site: str | None, expected: str) -> bool:
    """False for a request a browser says came from another site than `expected` (an Origin:
    scheme, host, and port unless it is the scheme's default)."""
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return False
    if origin is None:
        return True  # no browser sent it: curl, a script with the token
    found = _origin_parts(origin)
    return found is not None and found == _origin_parts(expected)


def _origin_parts(origin: str) -> tuple[str, str, int | None] | None:
    scheme, sep, rest = origin.partition("://")
    found = parse_authority(rest) if sep else None
    if found is None or scheme.lower() not in DEFAULT_PORTS:
        return None
    scheme = scheme.lower()
    port = found.port if found.port != DEFAULT_PORTS[scheme] else None
    return scheme, found.host, port


# -- who is asking ------------------------------------------------------------------------------


class Sessions:
    """Signed-in browsers, kept on the server: a cookie holds a random id, this table what it
    may see and until when. The table lives as long as the process: a restart signs everyone
    out."""

    def __init__(self, max_age_s: float, clock: Callable[[], float] = time.time) -> None:
        if not max_age_s > 0:
            raise ValueError("a session's max age must be more than 0 seconds")
        self.max_age_s = max_age_s
        self._clock = clock
        #: sha256 of the id to (access, when it ends), oldest first
        self._table: dict[str, tuple[Access, float]] = {}
        self._lock = threading.Lock()

    def start(self, access: Access) -> str:
        """A new session's id, for its cookie."""
        session = secrets.token_urlsafe(32)
        now = self._clock()
        with self._lock:
            for key in [k for k, (_, ends) in self._table.items() if ends <= now]:
                del self._table[key]
            while len(self._table) >= SESSIONS_MAX:
                del self._table[next(iter(self._table))]
            self._table[_key(session)] = (access, now + self.max_age_s)
        return session

    def find(self, session: str) -> Access | None:
        """What the session may see, or None: there is no such session, or it has ended."""
        if not session:
            return None
        key = _key(session)
        with self._lock:
            found = self._table.get(key)
            if found is None:
                return None
            access, ends = found
            if ends <= self._clock():
                del self._table[key]
                return None
        return access

    def end(self, session: str) -> None:
        with self._lock:
            self._table.pop(_key(session), None)


def _key(session: str) -> str:
    # Looked up by a hash: how long a miss takes says nothing about the ids that exist.
    return hashlib.sha256(session.encode()).hexdigest()


class Guard:
    def __init__(
        self,
        token: str | None,
        tenant_tokens: Mapping[str, str] | None = None,
        *,
        session_max_age_s: float = SESSION_MAX_AGE_S,
    ) -> None:
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
        self.sessions = Sessions(session_max_age_s)
        self.tenants = frozenset(a.tenant for _, a in keys if a.tenant is not None)

    @property
    def required(self) -> bool:
        """Whether every request must carry a token."""
        return bool(self._keys)

    def access(self, cookies: Mapping[str, str], authorization: str | None) -> Access | None:
        """What the request may see, or None: it has no valid token or session."""
        if not self._keys:
            return EVERY_TENANT
        if authorization and authorization.startswith("Bearer "):
            return self.access_for_token(authorization[len("Bearer ") :])
        return self.sessions.find(cookies.get(SESSION_COOKIE, ""))

    def access_for_token(self, given: str) -> Access | None:
        # Compared with every key, in constant time each: neither a token's characters nor its
        # place in the list shows in how long a refusal takes.
        found: Access | None = None
        for key, access in self._keys:
            if hmac.compare_digest(given.encode(), key.encode()) and found is None:
                found = access
        return found

    @staticmethod
    def new_nonce() -> str:
        return secrets.token_urlsafe(24)

    def csrf_token(self, nonce: str) -> str:
        return hmac.new(self._secret, nonce.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, nonce: str | None, given: str | None) -> bool:
        if not nonce or not given:
            return False
        return hmac.compare_digest(self.csrf_token(nonce), given)


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
    https: bool  #: it came over TLS (to us, or to the configured proxy): cookies are Secure
    signed_in: bool  #: it came with a session cookie, which it may end (sign out)


class Gate:
    """Every check a request passes: the name it was sent to, its token or session (and so its
    tenant), its forms' CSRF token, and for a change: actions on, same origin, the token right.
    """

    def __init__(
        self, guard: Guard, *, tenant: str | None, read_only: bool, hosts: Hosts | None = None
    ) -> None:
        self.guard = guard
        self.tenant = tenant
        self.read_only = read_only
        self.hosts = hosts if hosts is not None else Hosts(any_host=guard.required)
        others = guard.tenants - {tenant}
        if tenant is not None and others:
            raise ValueError(
                f"a dashboard opened for tenant {tenant!r} has tokens for other "
                f"tenants ({', '.join(sorted(others))}), which would see nothing"
            )

    def where(self, scope: Scope) -> Where:
        """Where the request was sent; a Problem when the dashboard does not answer there."""
        return self.hosts.where(scope)

    def admit(self, request: Request) -> Admission:
        """What the request may see and do; a Problem when it may not come in at all."""
        where = self.where(request.scope)  # HostCheck refused it already: a page never runs
        bearer = request.headers.get("authorization")
        access = self.guard.access(request.cookies, bearer)
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
        # Without a token, only someone on this machine may act: a request straight to the
        # loopback socket, under a loopback name.
        local = (
            is_loopback(server[0] if server else None)
            and is_loopback(where.host)
            and not where.proxied
        )
        nonce = request.cookies.get(CSRF_COOKIE) or ""
        new = not (16 <= len(nonce) <= 64)
        if new:
            nonce = self.guard.new_nonce()
        return Admission(
            tenant=pinned or asked,
            tenant_in_url=pinned is None and asked is not None,
            pinned=pinned is not None,
            actions=not self.read_only and (self.guard.required or local),
            csrf_nonce=nonce,
            csrf_new=new,
            csrf=self.guard.csrf_token(nonce),
            https=where.https,
            signed_in=self.guard.required and not bearer and SESSION_COOKIE in request.cookies,
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
                f"{TOKEN_ENV} to a request that is not straight to its loopback address",
            )
        return await self._form(request)

    async def _form(self, request: Request) -> FormData:
        if not self._same_origin(request):
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
        if not self._same_origin(request):
            # Else another site could sign a browser in with a token of its choosing.
            raise Problem(403, "Forbidden", "sign in from the dashboard's own page")
        form = await request.form()
        given = form.get("token")
        return self.guard.access_for_token(given) if isinstance(given, str) else None

    def start_session(
        self, request: Request, response: Response, access: Access, *, path: str
    ) -> None:
        """After a sign-in: a new session, its cookie on `response`."""
        response.set_cookie(
            SESSION_COOKIE,
            self.guard.sessions.start(access),
            max_age=int(self.guard.sessions.max_age_s),
            httponly=True,
            samesite="strict",
            secure=self.where(request.scope).https,
            path=path,
        )

    async def end_session(self, request: Request, response: Response, *, path: str) -> None:
        """Sign out (a POST from our own page): the session ends on the server, not only in
        the browser, and its cookie goes."""
        await self._form(request)
        self.guard.sessions.end(request.cookies.get(SESSION_COOKIE, ""))
        response.delete_cookie(
            SESSION_COOKIE,
            httponly=True,
            samesite="strict",
            secure=self.where(request.scope).https,
            path=path,
        )

    @staticmethod
    def set_csrf_nonce(response: Response, admission: Admission, *, path: str) -> None:
        """Once per browser: the nonce the forms' CSRF tokens are made from."""
        if admission.csrf_new:
            response.set_cookie(
                CSRF_COOKIE,
                admission.csrf_nonce,
                httponly=True,
                samesite="strict",
                secure=admission.https,
                path=path,
            )

    def _same_origin(self, request: Request) -> bool:
        return same_origin(
            request.headers.get("origin"),
            request.headers.get("sec-fetch-site"),
            self.where(request.scope).origin,
        )


class HostCheck:
    """ASGI middleware: a request sent to a name the dashboard does not answer to gets a short
    421 (or a 400), before any route, page, file or action sees it."""

    def __init__(self, app: ASGIApp, gate: Gate) -> None:
        self.app = app
        self.gate = gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                self.gate.where(scope)
            except Problem as problem:
                from starlette.responses import PlainTextResponse

                refusal = PlainTextResponse(
                    f"{problem.title}: {problem.detail}\n", status_code=problem.status
                )
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


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
