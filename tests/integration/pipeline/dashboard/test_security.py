"""Which requests the dashboard answers at all: the Host a browser was sent to, what a
configured reverse proxy forwards, and how long a sign-in lasts. Starlette's TestClient on a
real PostgreSQL: its requests come from `client`, to the server of its base URL (loopback here,
as `pipeline dashboard` binds), with the headers a browser or a proxy would send."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from starlette.testclient import TestClient

from pg_pipeline import dashboard
from pg_pipeline.dashboard.security import CSRF_COOKIE, SESSION_COOKIE
from tests.integration.pipeline.dashboard.test_pages import LOCAL, insert, status_of
from tests.support.waiting import wait_for

Conn = psycopg.Connection[Any]
TOKEN = "admin-token-0123456789abcdef"
ACME = "acme-token-0123456789abcdef"
ZETA = "zeta-token-0123456789abcdef"
#: A rebinding page's name, resolved to 127.0.0.1 after the page loaded.
ATTACKER = "attacker.example:8080"
PROXY = ("10.0.0.5", 41234)  #: the reverse proxy's address, as the dashboard sees it
PUBLIC = "dash.example.com"  #: the name the proxy serves the dashboard under


def csrf_of(client: TestClient, path: str, **headers: str) -> str:
    page = client.get(path, headers=headers)
    assert page.status_code == 200, page.text
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page.text)
    assert found, page.text
    return found[1]


def set_cookie(response: Any, name: str) -> str:
    """The Set-Cookie header of `name`, as the browser receives it."""
    found = [h for h in response.headers.get_list("set-cookie") if h.startswith(f"{name}=")]
    assert len(found) == 1, response.headers
    return str(found[0])


def cookie_value(header: str) -> str:
    return header.split(";", 1)[0].split("=", 1)[1]


Serve = Callable[..., TestClient]


@pytest.fixture
def serve(db_url: str) -> Iterator[Serve]:
    """`serve(client=(address, port), **options)`: a client of `dashboard.app(**options)` (no
    token unless given) on loopback, its requests coming from `client`."""
    with contextlib.ExitStack() as running:

        def make(client: tuple[str, int] = ("testclient", 50000), **options: Any) -> TestClient:
            app = dashboard.app(db_url, **{"token": "", **options})
            return running.enter_context(TestClient(app, base_url=LOCAL, client=client))

        yield make


@pytest.fixture
def local(serve: Serve) -> TestClient:
    """The dashboard as `pipeline dashboard` serves it by default: loopback, no token."""
    return serve()


# -- the Host header, without a token -------------------------------------------------------


def test_without_a_token_a_rebound_host_name_is_refused_before_any_page_or_action(
    local: TestClient, conn: Conn
) -> None:
    job = insert(conn, "ocr")
    rebound = {"Host": ATTACKER, "Origin": f"http://{ATTACKER}"}
    # What the page could read before: every page, and the confirmation's CSRF token.
    token = csrf_of(local, f"/jobs/{job}/cancel")

    for path in ("/", "/jobs", f"/jobs/{job}", f"/runs/{job}", "/tenants", f"/jobs/{job}/cancel"):
        page = local.get(path, headers=rebound)
        assert page.status_code == 421, (path, page.status_code)
        assert "payload" not in page.text and "<table" not in page.text
    assert local.get("/static/htmx.min.js", headers=rebound).status_code == 421
    assert local.get("/no-such-page", headers=rebound).status_code == 421
    cancel = local.post(f"/jobs/{job}/cancel", data={"csrf": token}, headers=rebound)

    assert cancel.status_code == 421
    assert status_of(conn, job) == "queued"
    assert "attacker.example" in cancel.text  # says which name it does not answer to


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "127.0.0.1:8080", "127.8.0.1:9", "localhost", "localhost:8080", "[::1]:8080"],
)
def test_without_a_token_loopback_names_and_addresses_are_served_with_any_port(
    local: TestClient, conn: Conn, host: str
) -> None:
    job = insert(conn, "ocr", "failed", last_error="x")

    page = local.get(f"/jobs/{job}", headers={"Host": host})

    assert page.status_code == 200
    assert 'id="retry"' in page.text  # straight to the loopback socket: actions on


@pytest.mark.parametrize("host", ["", "127.0.0.1:80:80", "user@127.0.0.1", "127.0.0.1/x"])
def test_a_malformed_host_is_a_400(local: TestClient, host: str) -> None:
    assert local.get("/", headers={"Host": host}).status_code == 400


def test_a_configured_host_name_is_served_read_only_without_a_token(
    serve: Serve, conn: Conn
) -> None:
    job = insert(conn, "ocr", "failed", last_error="x")
    c = serve(hosts=["queue.internal"])

    named = c.get(f"/jobs/{job}", headers={"Host": "queue.internal:8080"})

    assert named.status_code == 200
    # Whoever can reach that name is not necessarily on this machine: no changes.
    assert 'id="retry"' not in named.text
    assert c.get(f"/jobs/{job}/retry", headers={"Host": "queue.internal"}).status_code == 403
    assert c.get("/", headers={"Host": "other.internal"}).status_code == 421
    assert 'id="retry"' in c.get(f"/jobs/{job}").text  # loopback still acts


def test_host_names_are_read_from_their_variable(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIPELINE_DASHBOARD_HOSTS", "queue.internal, Ops.Example.com")
    c = serve()

    assert c.get("/", headers={"Host": "ops.example.com"}).status_code == 200
    assert c.get("/", headers={"Host": "queue.internal"}).status_code == 200
    assert c.get("/", headers={"Host": "example.com"}).status_code == 421


def test_a_mounted_dashboard_off_loopback_needs_its_host_name_or_a_token(serve: Serve) -> None:
    off_loopback = {"Host": "dash.example"}
    assert serve().get("/", headers=off_loopback).status_code == 421
    # A token is what keeps a rebinding page out: it has none.
    bearer = {**off_loopback, "Authorization": f"Bearer {TOKEN}"}
    assert serve(token=TOKEN).get("/", headers=bearer).status_code == 200


# -- behind a reverse proxy ---------------------------------------------------------------------


@pytest.fixture
def proxied(serve: Serve) -> TestClient:
    """A loopback dashboard without a token that a configured proxy serves as PUBLIC."""
    return serve(PROXY, hosts=[PUBLIC], trusted_proxies=[PROXY[0]])


def test_the_configured_proxys_forwarded_host_is_checked_like_a_host(
    proxied: TestClient,
) -> None:
    served = proxied.get("/", headers={"X-Forwarded-Host": PUBLIC})
    rebound = proxied.get("/", headers={"X-Forwarded-Host": ATTACKER})
    # A proxy that passes the browser's Host on, and forwards no name of its own.
    passed_on = proxied.get("/", headers={"Host": ATTACKER})

    assert served.status_code == 200
    assert rebound.status_code == 421 and passed_on.status_code == 421


def test_forwarded_headers_from_anyone_but_the_proxy_are_ignored(serve: Serve) -> None:
    stranger = serve(("192.0.2.7", 5000), hosts=[PUBLIC], trusted_proxies=[PROXY[0]])

    # The name it claims to have been forwarded for does not make its own Host right.
    page = stranger.get("/", headers={"Host": ATTACKER, "X-Forwarded-Host": PUBLIC})

    assert page.status_code == 421


def test_a_rebinding_page_on_the_proxys_own_address_cannot_forward_a_name(serve: Serve) -> None:
    # The proxy runs on this machine, so a rebound browser connects from its address too, and
    # may add any header to a request that its page thinks is same-origin.
    c = serve(("127.0.0.1", 5000), hosts=[PUBLIC], trusted_proxies=["127.0.0.1"])

    forged = c.get("/", headers={"Host": ATTACKER, "X-Forwarded-Host": PUBLIC})

    assert forged.status_code == 421
    assert c.get("/", headers={"X-Forwarded-Host": PUBLIC}).status_code == 200


def test_without_a_token_nothing_that_came_through_a_proxy_can_change_a_job(
    proxied: TestClient, local: TestClient, conn: Conn
) -> None:
    job = insert(conn, "ocr", "failed", last_error="x")

    through_proxy = proxied.get(f"/jobs/{job}", headers={"X-Forwarded-Host": "127.0.0.1:8080"})
    # Forwarding headers from a proxy nobody configured: ignored, and no changes either.
    unknown_proxy = local.get(f"/jobs/{job}", headers={"X-Forwarded-For": "203.0.113.9"})

    assert through_proxy.status_code == 200 and 'id="retry"' not in through_proxy.text
    assert unknown_proxy.status_code == 200 and 'id="retry"' not in unknown_proxy.text


def test_a_change_through_the_proxy_must_come_from_the_public_origin(
    serve: Serve, conn: Conn
) -> None:
    job = insert(conn, "ocr")
    c = serve(PROXY, token=TOKEN, hosts=[PUBLIC], trusted_proxies=[PROXY[0]])
    forwarded = {
        "X-Forwarded-Host": PUBLIC,
        "X-Forwarded-Proto": "https",
        "Authorization": f"Bearer {TOKEN}",
    }
    confirm = c.get(f"/jobs/{job}/cancel", headers=forwarded)
    token = re.search(r'name="csrf" value="([0-9a-f]+)"', confirm.text)
    assert token
    # Secure, as the browser at the far end of TLS gets it; this client speaks plain HTTP.
    nonce = cookie_value(set_cookie(confirm, CSRF_COOKIE))
    sent = {**forwarded, "Cookie": f"{CSRF_COOKIE}={nonce}"}

    def cancel(origin: str) -> int:
        form = {"csrf": token[1]}
        page = c.post(f"/jobs/{job}/cancel", data=form, headers={**sent, "Origin": origin})
        return page.status_code

    # Its own Host (127.0.0.1) is not the origin the browser saw; nor is plain HTTP.
    assert (cancel("http://127.0.0.1"), cancel(f"http://{PUBLIC}")) == (403, 403)
    assert status_of(conn, job) == "queued"
    assert cancel(f"https://{PUBLIC}") == 200
    assert status_of(conn, job) == "cancelled"


# -- sessions ----------------------------------------------------------------------------------


def sign_in(client: TestClient, token: str, **headers: str) -> Any:
    signed = client.post("/login", data={"token": token}, headers=headers, follow_redirects=False)
    assert signed.status_code == 303, signed.text
    return signed


def with_session(value: str) -> dict[str, str]:
    """A request replaying a session cookie, whatever the client's cookie jar holds."""
    return {"Cookie": f"{SESSION_COOKIE}={value}"}


def signed_out(page: Any) -> bool:
    return bool(page.status_code == 303 and page.headers["location"] == "/login")


def test_a_session_cookie_is_httponly_strict_and_has_a_max_age(serve: Serve) -> None:
    c = serve(token=TOKEN, session_max_age_s=3600)

    header = set_cookie(sign_in(c, TOKEN), SESSION_COOKIE).lower()

    assert "httponly" in header and "samesite=strict" in header
    assert "max-age=3600" in header
    assert "secure" not in header  # plain HTTP: a Secure cookie would never come back


def test_an_expired_session_is_refused_even_if_the_browser_still_sends_it(serve: Serve) -> None:
    c = serve(token=TOKEN, session_max_age_s=1)
    replay = with_session(cookie_value(set_cookie(sign_in(c, TOKEN), SESSION_COOKIE)))
    assert c.get("/", headers=replay).status_code == 200

    wait_for(
        lambda: signed_out(c.get("/", headers=replay, follow_redirects=False)),
        timeout=10,
        what="the session to expire on the server",
    )


def test_signing_out_revokes_the_session_on_the_server(serve: Serve) -> None:
    c = serve(token=TOKEN)
    replay = with_session(cookie_value(set_cookie(sign_in(c, TOKEN), SESSION_COOKIE)))
    token = csrf_of(c, "/")

    out = c.post("/logout", data={"csrf": token}, follow_redirects=False)

    assert signed_out(out)
    assert "max-age=0" in set_cookie(out, SESSION_COOKIE).lower()
    assert signed_out(c.get("/", headers=replay, follow_redirects=False))


def test_a_token_taken_away_takes_its_sessions_with_it(serve: Serve) -> None:
    before = serve(token=TOKEN, tenant_tokens={"acme": ACME, "zeta": ZETA})
    acme = with_session(cookie_value(set_cookie(sign_in(before, ACME), SESSION_COOKIE)))
    zeta = with_session(cookie_value(set_cookie(sign_in(before, ZETA), SESSION_COOKIE)))
    assert before.get("/jobs", headers=acme).status_code == 200

    # Taking a token away takes a restart, which ends every session of the old process.
    after = serve(token=TOKEN, tenant_tokens={"zeta": ZETA})

    assert signed_out(after.get("/jobs", headers=acme, follow_redirects=False))
    assert signed_out(after.get("/jobs", headers=zeta, follow_redirects=False))


def test_cookies_are_secure_behind_tls_at_the_configured_proxy_alone(serve: Serve) -> None:
    options = {"token": TOKEN, "hosts": [PUBLIC], "trusted_proxies": [PROXY[0]]}
    proxy, stranger = serve(PROXY, **options), serve(("192.0.2.7", 5000), **options)
    tls = {"X-Forwarded-Host": PUBLIC, "X-Forwarded-Proto": "https"}

    signed = sign_in(proxy, TOKEN, **tls, Origin=f"https://{PUBLIC}")
    page = proxy.get("/", headers={**tls, "Authorization": f"Bearer {TOKEN}"})
    # The same claim from anyone else is not believed.
    claimed = sign_in(stranger, TOKEN, **{"X-Forwarded-Proto": "https"})

    assert "secure" in set_cookie(signed, SESSION_COOKIE).lower()
    assert "secure" in set_cookie(page, CSRF_COOKIE).lower()
    assert "secure" not in set_cookie(claimed, SESSION_COOKIE).lower()
