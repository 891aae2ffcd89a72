"""Who may see the dashboard, which tenants they see, and who may change things through it.

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
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

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
