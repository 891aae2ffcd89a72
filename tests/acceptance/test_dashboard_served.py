"""`pipeline dashboard` served by uvicorn, asked over real HTTP with the headers a rebinding page
or a reverse proxy sends: the command's options reach the gate, and nothing between the socket
and the gate (uvicorn's own proxy-header handling) changes what the gate sees."""

from __future__ import annotations

import http.client
from pathlib import Path
from urllib.parse import urlsplit

from tests.acceptance.dashboard_process import served_dashboard

TOKEN = "admin-token-0123456789abcdef"
PUBLIC = "dash.example.com"


def ask(
    url: str, method: str, path: str, headers: dict[str, str], body: str = ""
) -> http.client.HTTPResponse:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    # skip_host: the Host header is the test's to choose, as a browser's page name gives it.
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for name, value in headers.items():
        conn.putheader(name, value)
    encoded = body.encode()
    if body:
        conn.putheader("Content-Type", "application/x-www-form-urlencoded")
    conn.putheader("Content-Length", str(len(encoded)))
    conn.endheaders(encoded)
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


def session_cookie(response: http.client.HTTPResponse) -> str:
    found = [c for c in response.headers.get_all("set-cookie") or [] if "session" in c]
    assert len(found) == 1, response.headers
    return found[0].lower()


def test_the_served_dashboard_refuses_a_rebound_host_name(
    env: dict[str, str], tmp_path: Path
) -> None:
    with served_dashboard(env, tmp_path / "dashboard.log") as url:
        port = urlsplit(url).port
        rebound = ask(url, "GET", "/jobs", {"Host": f"attacker.example:{port}"})
        local = ask(url, "GET", "/jobs", {"Host": f"localhost:{port}"})
        address = ask(url, "GET", "/jobs", {"Host": f"127.0.0.1:{port}"})

    assert rebound.status == 421
    assert (local.status, address.status) == (200, 200)


def test_forwarded_headers_are_believed_from_the_configured_proxy_alone(
    env: dict[str, str], tmp_path: Path
) -> None:
    # The test's requests come from 127.0.0.1: the proxy in one run, a stranger in the other.
    tls = {"Host": PUBLIC, "X-Forwarded-Proto": "https", "Origin": f"https://{PUBLIC}"}
    sign_in = f"token={TOKEN}"
    options = ("--allowed-host", PUBLIC, "--session-max-age", "30m")
    env = {**env, "PIPELINE_DASHBOARD_TOKEN": TOKEN}
    with served_dashboard(env, tmp_path / "a.log", *options, "--trusted-proxy", "127.0.0.1") as url:
        proxied = ask(url, "POST", "/login", tls, sign_in)
        rebound = ask(url, "GET", "/login", {"Host": PUBLIC, "X-Forwarded-Host": "evil.example"})
    with served_dashboard(env, tmp_path / "b.log", *options, "--trusted-proxy", "10.0.0.5") as url:
        # uvicorn, left to itself, believes X-Forwarded-* from 127.0.0.1 and X-Forwarded-For
        # would make the request look like it came from the configured proxy.
        claimed = ask(url, "POST", "/login", {**tls, "X-Forwarded-For": "10.0.0.5"}, sign_in)

    assert proxied.status == 303 and rebound.status == 421
    assert "secure" in session_cookie(proxied) and "max-age=1800" in session_cookie(proxied)
    # Not believed: the scheme stays http, so the Origin the browser names is not ours.
    assert claimed.status == 403
