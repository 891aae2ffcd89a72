"""Who may see the dashboard and who may change things through it.

* Bound to loopback without a token, anyone on this machine may look and act (as they could
  run `pipeline jobs retry` themselves). Anywhere else it needs PIPELINE_DASHBOARD_TOKEN:
  `pipeline dashboard` refuses to bind without one, and a mounted app without one shows no
  action off loopback.
* With a token, every request needs it: `Authorization: Bearer TOKEN`, or the session cookie
  the login form sets, which holds an HMAC of the token, never the token.
* Every POST carries a CSRF token: an HMAC, under a secret of this process, of a random value
  in an HttpOnly, SameSite=Strict cookie. A page on another site can neither read the cookie
  nor forge the HMAC; a cross-site Origin or Sec-Fetch-Site is refused outright too.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets

TOKEN_ENV = "PIPELINE_DASHBOARD_TOKEN"
SESSION_COOKIE = "pipeline_dashboard_session"
CSRF_COOKIE = "pipeline_dashboard_csrf"
CSRF_FIELD = "csrf"


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class Guard:
    def __init__(self, token: str | None) -> None:
        self.token = token or None
        self._secret = secrets.token_bytes(32)

    def session_value(self) -> str:
        assert self.token is not None
        mac = hmac.new(self.token.encode(), b"pipeline dashboard session", hashlib.sha256)
        return mac.hexdigest()

    def authorised(self, cookies: dict[str, str], authorization: str | None) -> bool:
        if self.token is None:
            return True
        if authorization and authorization.startswith("Bearer "):
            return self.token_matches(authorization[len("Bearer ") :])
        return hmac.compare_digest(cookies.get(SESSION_COOKIE, ""), self.session_value())

    def token_matches(self, given: str) -> bool:
        return self.token is not None and hmac.compare_digest(given.encode(), self.token.encode())

    @staticmethod
    def new_nonce() -> str:
        return secrets.token_urlsafe(24)

    def csrf_token(self, nonce: str) -> str:
        return hmac.new(self._secret, nonce.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, nonce: str | None, given: str | None) -> bool:
        if not nonce or not given:
            return False
        return hmac.compare_digest(self.csrf_token(nonce), given)


def same_origin(origin: str | None, fetch_site: str | None, host: str | None) -> bool:
    """False for a request a browser says came from another site."""
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return False
    if origin is None or origin == "null":
        return origin is None
    _, _, rest = origin.partition("://")
    return rest == host
