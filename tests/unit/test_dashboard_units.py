"""The dashboard's pure parts: input checks, the chart, the security helpers, the command's bind
check. No database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from pipeline.cli import main
from pipeline.dashboard.data import Minute, _extraction, _like
from pipeline.dashboard.forms import BadInput, job_query
from pipeline.dashboard.render import chart, environment
from pipeline.dashboard.security import TOKEN_ENV, Guard, is_loopback, same_origin


def test_job_query_reads_every_filter() -> None:
    q = job_query(
        {
            "status": "failed",
            "stage": " ocr ",
            "since": "2026-12-01T09:30",
            "until": "2026-12-01T11:30+01:00",
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
    assert q.since == datetime(2026, 12, 1, 9, 30, tzinfo=UTC)  # no offset: UTC
    assert q.until is not None and q.until.utcoffset() == timedelta(hours=1)


def test_empty_fields_mean_no_filter() -> None:
    q = job_query({"status": "", "stage": "", "q": "  "}, None)
    assert (q.status, q.stage, q.search, q.before, q.limit) == (None, None, None, None, 50)


@pytest.mark.parametrize(
    "params",
    [
        {"status": "done;drop"},
        {"since": "last tuesday"},
        {"before": "0"},
        {"before": "9" * 20},
        {"limit": "100000"},
        {"stage": "a\x00b"},
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
    assert "s3cret" not in guard.session_value()
    assert guard.authorised({}, "Bearer s3cret")
    assert not guard.authorised({}, "Bearer nope")
    assert guard.authorised({"pipeline_dashboard_session": guard.session_value()}, None)
    assert not guard.authorised({}, None)


def test_same_origin() -> None:
    assert same_origin("http://127.0.0.1:8080", "same-origin", "127.0.0.1:8080")
    assert same_origin(None, None, "127.0.0.1:8080")  # no browser headers: curl, the tests
    assert not same_origin("https://evil.example", None, "127.0.0.1:8080")
    assert not same_origin(None, "cross-site", "127.0.0.1:8080")
    assert not same_origin("null", None, "127.0.0.1:8080")


def test_the_command_refuses_a_public_bind_without_a_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    assert main(["dashboard", "--host", "0.0.0.0"]) == 2
    assert "not a loopback address" in capsys.readouterr().err
