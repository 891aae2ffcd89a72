"""The dashboard's pure parts: input checks, the chart, the security helpers, the command's bind
check. No database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from pg_pipeline.admin.jobs import _like
from pg_pipeline.admin.status import Minute
from pg_pipeline.cli import main
from pg_pipeline.dashboard.forms import BadInput, job_query
from pg_pipeline.dashboard.pages.runs import _extraction
from pg_pipeline.dashboard.render import chart, environment
from pg_pipeline.dashboard.security import (
    EVERY_TENANT,
    HOSTS_ENV,
    SESSION_COOKIE,
    TENANT_TOKENS_ENV,
    TOKEN_ENV,
    TRUSTED_PROXIES_ENV,
    Access,
    Authority,
    Guard,
    Hosts,
    Sessions,
    is_loopback,
    parse_authority,
    parse_tenant_tokens,
    same_origin,
)
from pg_pipeline.dashboard.web import output_fields
from pg_pipeline.stage import Registry, stage
from tests.support.paths import REPO


def test_job_query_reads_every_filter() -> None:
    q = job_query(
        {
            "status": "failed",
            "stage": " ocr ",
            "since": "2026-12-01T09:30",
            "until": "2026-12-01T11:30+01:00",
            "zone": "Z",
            "q": "xref",
            "before": "42",
            "limit": "20",
        },
        "acme",
    )
    assert (q.status, q.stage, q.tenant, q.search, q.before, q.limit) == (
        "failed",
        "ocr",
        "acme",
        "xref",
        42,
        20,
    )
    assert q.since == datetime(2026, 12, 1, 9, 30, tzinfo=UTC)  # no offset: the form's zone
    assert q.until is not None and q.until.utcoffset() == timedelta(hours=1)


def test_empty_fields_mean_no_filter() -> None:
    q = job_query({"status": "", "stage": "", "q": "  "}, None)
    assert (q.status, q.stage, q.search, q.before, q.limit) == (None, None, None, None, 50)


@pytest.mark.parametrize(
    "params",
    [
        {"status": "done;drop"},
        {"since": "last tuesday"},
        {"since": "2026-12-01T09:30"},  # no offset, and no zone stated by the form
        {"since": "2026-12-01T09:30", "zone": "CET"},
        {"before": "0"},
        {"before": "9" * 20},
        {"limit": "100000"},
        {"stage": "a\x00b"},
        {"before": "5", "after": "3"},
        {"q": "boom", "status": "done"},
    ],
)
def test_job_query_refuses_what_cannot_be_right(params: dict[str, str]) -> None:
    with pytest.raises(BadInput):
        job_query(params, None)


def test_a_search_is_a_substring_not_a_pattern() -> None:
    assert _like("100%_x\\") == "%100\\%\\_x\\\\%"


def test_the_chart_has_a_bar_per_minute_scaled_to_the_busiest() -> None:
    now = datetime(2026, 12, 1, 10, 0, 30, tzinfo=UTC)
    drawn = chart(
        [
            Minute(datetime(2026, 12, 1, 10, 0, tzinfo=UTC), 8, 2),
            Minute(datetime(2026, 12, 1, 9, 30, tzinfo=UTC), 5, 0),
        ],
        now,
        height=100,
    )
    assert len(drawn.bars) == 60
    last = drawn.bars[-1]
    assert (last.done_h, last.failed_h, last.failed_y) == (80.0, 20.0, 0.0)
    assert drawn.bars[29].done_h == 50.0 and "09:30" in drawn.bars[29].title
    assert (drawn.done, drawn.failed, drawn.peak) == (13, 2, 10)
    assert chart([], now).peak == 1  # nothing finished: empty bars, no division by zero
    # The scale: 0 at the bottom, half the busiest minute midway, the busiest at the top.
    assert [(t.at, t.label) for t in drawn.y_ticks] == [(100.0, "0"), (50.0, "5"), (0.0, "10")]
    assert [t.at for t in drawn.x_ticks] == [0.0, 300.0, 600.0]
    assert drawn.x_ticks[0].label == "\u221260 min (09:01)"
    assert [t.label for t in chart([], now).y_ticks] == ["0", "1"]


def test_templates_escape_everything() -> None:
    html = environment().from_string("{{ x }}").render(x="<script>alert(1)</script>")
    assert html == "&lt;script&gt;alert(1)&lt;/script&gt;"


def test_an_output_with_evidence_is_an_extraction() -> None:
    found = _extraction(
        "extract",
        7,
        {"title": "T", "evidence": {"title": {"confidence": 0.9}}, "warnings": ["w"]},
    )
    assert found is not None
    assert found.fields == [("title", "T", {"confidence": 0.9})]
    assert found.warnings == ["w"]
    assert _extraction("upload", 1, {"pages": 2}) is None


def test_fields_come_in_the_models_order_then_the_rest_as_stored() -> None:
    # jsonb stores keys shortest first: "title" before "issuing_authority" and "reference".
    stored = {"lots": [], "title": "T", "legacy": 1, "reference": "R", "evidence": {}}
    found = _extraction("extract", 7, stored, ["reference", "title", "lots", "missing"])
    assert found is not None
    assert [name for name, _, _ in found.fields] == ["reference", "title", "lots", "legacy"]
    unordered = _extraction("extract", 7, stored, None)
    assert unordered is not None
    assert [name for name, _, _ in unordered.fields] == ["lots", "title", "legacy", "reference"]


class Out(BaseModel):
    zeta: int = 0
    alpha: int = 0


def test_the_field_order_is_the_output_models() -> None:
    registry = Registry()

    @stage("ordered", registry=registry)
    def ordered(job: Out, ctx: Any) -> Out:
        return job

    assert output_fields(registry, "ordered") == ["zeta", "alpha"]
    assert output_fields(registry, "unknown") is None


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.0.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("192.168.1.4", False),
        ("example.com", False),
        ("", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_csrf_tokens_are_bound_to_the_cookie_and_the_process() -> None:
    guard, other = Guard(None), Guard(None)
    nonce = guard.new_nonce()
    assert guard.csrf_ok(nonce, guard.csrf_token(nonce))
    assert not guard.csrf_ok(guard.new_nonce(), guard.csrf_token(nonce))
    assert not other.csrf_ok(nonce, guard.csrf_token(nonce))
    assert not guard.csrf_ok(None, guard.csrf_token(nonce))


def test_the_session_cookie_is_not_the_token() -> None:
    guard = Guard("s3cret")
    session = guard.sessions.start(EVERY_TENANT)
    assert "s3cret" not in session
    assert guard.access({}, "Bearer s3cret") == EVERY_TENANT
    assert guard.access({}, "Bearer nope") is None
    assert guard.access({SESSION_COOKIE: session}, None) == EVERY_TENANT
    assert guard.access({}, None) is None
    assert Guard(None).access({}, None) == EVERY_TENANT  # no token: loopback rules apply


ACME_TOKEN = "acme-token-0123456789"
ZETA_TOKEN = "zeta-token-0123456789"


def test_a_tenant_token_sees_its_tenant_alone() -> None:
    guard = Guard("admin-token", {"acme": ACME_TOKEN, "zeta": ZETA_TOKEN})
    assert guard.required and guard.tenants == {"acme", "zeta"}
    assert guard.access({}, f"Bearer {ACME_TOKEN}") == Access("acme")
    assert guard.access({}, f"Bearer {ZETA_TOKEN}") == Access("zeta")
    assert guard.access({}, "Bearer admin-token") == EVERY_TENANT
    acme_cookie = guard.sessions.start(Access("acme"))
    assert len({acme_cookie, guard.sessions.start(Access("zeta"))}) == 2
    assert guard.access({SESSION_COOKIE: acme_cookie}, None) == Access("acme")
    tampered = acme_cookie[:-1] + ("A" if acme_cookie[-1] != "A" else "B")
    assert guard.access({SESSION_COOKIE: tampered}, None) is None
    assert guard.access({}, "Bearer acme") is None
    # Tenant tokens alone: every request still needs one.
    assert Guard(None, {"acme": ACME_TOKEN}).access({}, None) is None


def test_a_session_ends_at_its_max_age_or_when_ended() -> None:
    now = [1_000.0]
    sessions = Sessions(60, clock=lambda: now[0])
    kept, ended = sessions.start(EVERY_TENANT), sessions.start(Access("acme"))
    sessions.end(ended)
    now[0] += 59
    assert (sessions.find(kept), sessions.find(ended)) == (EVERY_TENANT, None)
    now[0] += 1
    assert sessions.find(kept) is None
    assert sessions.find("") is None


@pytest.mark.parametrize(
    ("tokens", "reason"),
    [
        ({"acme": "short"}, "shorter than 16"),
        ({"acme": ACME_TOKEN, "zeta": ACME_TOKEN}, "also another one's token"),
        ({"acme": "admin-token-0123456789"}, "also another one's token"),
        ({"": ACME_TOKEN}, "needs a tenant"),
    ],
)
def test_tenant_tokens_that_cannot_be_right_are_refused(
    tokens: dict[str, str], reason: str
) -> None:
    with pytest.raises(ValueError, match=reason):
        Guard("admin-token-0123456789", tokens)


def test_tenant_tokens_are_read_from_their_variable() -> None:
    assert parse_tenant_tokens("") == {}
    assert parse_tenant_tokens(f" acme={ACME_TOKEN}, zeta={ZETA_TOKEN}==\n") == {
        "acme": ACME_TOKEN,
        "zeta": ZETA_TOKEN + "==",  # the first = ends the tenant: base64 padding is kept
    }
    for bad in ("acme", "acme=", "=tok", f"acme={ACME_TOKEN},acme={ZETA_TOKEN}"):
        with pytest.raises(ValueError, match=TENANT_TOKENS_ENV):
            parse_tenant_tokens(bad)


def test_same_origin() -> None:
    here = "http://127.0.0.1:8080"
    assert same_origin("http://127.0.0.1:8080", "same-origin", here)
    assert same_origin(None, None, here)  # no browser headers: curl, the tests
    assert not same_origin("https://evil.example", None, here)
    assert not same_origin("https://127.0.0.1:8080", None, here)  # another scheme
    assert not same_origin("http://127.0.0.1:8081", None, here)  # another port
    assert not same_origin(None, "cross-site", here)
    assert not same_origin("null", None, here)
    assert same_origin("https://dash.example.com", None, "https://dash.example.com:443")
    assert same_origin("HTTPS://Dash.Example.com", None, "https://dash.example.com")


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("127.0.0.1", Authority("127.0.0.1", None)),
        ("LocalHost.:8080", Authority("localhost", 8080)),
        ("[::1]:80", Authority("::1", 80)),
        ("queue_1.internal", Authority("queue_1.internal", None)),
        ("", None),
        ("127.0.0.1:", None),
        ("127.0.0.1:99999", None),
        ("[::1", None),
        ("[nope]:80", None),
        ("a b", None),
        ("evil.example,127.0.0.1", None),
        ("http://127.0.0.1", None),
    ],
)
def test_a_host_header_is_a_name_or_address_and_a_port(text: str, found: Authority | None) -> None:
    assert parse_authority(text) == found


def test_host_names_and_proxies_that_cannot_be_right_are_refused() -> None:
    for names in (["dash.example.com:443"], ["https://dash.example.com"], ["a/b"]):
        with pytest.raises(ValueError, match=HOSTS_ENV):
            Hosts(names)
    with pytest.raises(ValueError, match=TRUSTED_PROXIES_ENV):
        Hosts(proxies=["proxy.internal"])
    hosts = Hosts(["Dash.Example.com."], ["10.0.0.0/8", "::1"])
    assert hosts.allowed("dash.example.com") and hosts.allowed("127.0.0.2")
    assert not hosts.allowed("example.com")
    assert hosts.trusted("10.1.2.3") and hosts.trusted("::1")
    assert not hosts.trusted("127.0.0.1") and not hosts.trusted(None)


def test_the_command_refuses_a_public_bind_without_a_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    assert main(["dashboard", "--host", "0.0.0.0"]) == 2
    assert "not a loopback address" in capsys.readouterr().err


def test_the_command_takes_tenant_tokens_as_the_token_a_public_bind_needs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    monkeypatch.setenv(TENANT_TOKENS_ENV, "acme")
    assert main(["dashboard", "--host", "0.0.0.0"]) == 2
    assert "is not TENANT=TOKEN" in capsys.readouterr().err

    monkeypatch.setenv(TENANT_TOKENS_ENV, f"acme={ACME_TOKEN}")
    main(["dashboard", "--host", "0.0.0.0"])  # past the bind check, to the database
    err = capsys.readouterr().err
    assert "not a loopback address" not in err and "127.0.0.1:1" in err


def test_the_pages_leave_every_security_decision_to_security_py() -> None:
    # Tokens, sessions, the CSRF nonce and the checks of a change are decided in one place:
    # a page asks the gate (through handler.py) and never reads a cookie or a header for it.
    pages = REPO / "pipeline" / "dashboard" / "pages"
    found = sorted(pages.glob("*.py"))
    assert len(found) > 5
    for path in found:
        text = path.read_text(encoding="utf-8")
        for word in ("cookies", "set_cookie", "authorization", "csrf_ok", "Guard(", "same_origin"):
            assert word not in text, (path.name, word)


def test_the_command_refuses_a_pool_size_or_statement_timeout_out_of_range(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for option in (["--pool-size", "0"], ["--statement-timeout", "0"]):
        with pytest.raises(SystemExit) as exited:
            main(["dashboard", *option])
        assert exited.value.code == 2
        assert option[0] in capsys.readouterr().err
