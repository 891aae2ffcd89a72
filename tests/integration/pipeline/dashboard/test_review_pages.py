"""The Review page: steps waiting for a person, listed per tenant, each answered through a form
drawn from the JSON schema of what it waits for (Starlette's TestClient on a real PostgreSQL,
the stage run by pg_pipeline.testing.drain)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

import psycopg
import pytest
from pydantic import BaseModel, Field
from starlette.testclient import TestClient

from pg_pipeline import Context, dashboard, enqueue
from pg_pipeline.runs import run_output
from pg_pipeline.stage import Registry, stage
from pg_pipeline.testing import drain
from tests.integration.pipeline.dashboard.test_pages import LOCAL

Conn = psycopg.Connection[Any]
REGISTRY = Registry()
#: A 1x1 grey PNG.
PIXEL = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAACklEQVR4nGNgAAAAAgAB"
    "SK+kcQAAAABJRU5ErkJggg=="
)


class Invoice(BaseModel):
    number: str


class Approval(BaseModel):
    approver: str = Field(min_length=2)
    amount: Decimal | None = None
    due: datetime | None = None
    tier: Literal["low", "high"] = "low"
    tags: list[str] = []


class Approved(BaseModel):
    invoice: str
    approval: Approval


@stage("approve", registry=REGISTRY, lease=30)
def approve(job: Invoice, ctx: Context) -> Approved:
    got = ctx.wait_for(
        "approval",
        Approval,
        timeout=3600,
        proposal=Approval(approver="ann", amount=Decimal("10.50"), tags=["q1"]),
        detail={
            "title": f"Invoice {job.number}",
            "order": list(Approval.model_fields),
            "flagged": ["amount"],
            "fields": {
                "amount": {
                    "needs_review": True,
                    "why": "confidence 0.40, below 0.75",
                    "confidence": 0.4,
                    "evidence": "Total: 10,5O <b>EUR</b>",
                    "snippet": "Net 8.82\nTotal: 10,5O EUR",
                    "image": PIXEL,
                },
                "approver": {"needs_review": False, "image": "data:image/svg+xml;base64,PHN2Zz4="},
            },
        },
    )
    return Approved(invoice=job.number, approval=got)


def waiting_run(conn: Conn, number: str = "7", tenant: str | None = None) -> int:
    run_id = enqueue(conn, "approve", Invoice(number=number), tenant_id=tenant, registry=REGISTRY)
    drained = drain(conn, registry=REGISTRY, run_id=run_id)
    assert not drained.failed
    return run_id


def resume(conn: Conn, run_id: int) -> Approved:
    drain(conn, registry=REGISTRY, run_id=run_id)
    out = run_output(conn, run_id, "approve")
    assert out is not None
    return Approved.model_validate(out)


@pytest.fixture
def client(db_url: str) -> Iterator[TestClient]:
    with TestClient(dashboard.app(db_url, token=""), base_url=LOCAL) as c:
        yield c


def form_of(client: TestClient, path: str) -> tuple[str, str]:
    page = client.get(path)
    assert page.status_code == 200, page.text
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page.text)
    assert found, page.text
    return page.text, found[1]


def inputs(page: str) -> dict[str, str]:
    """The form's text inputs and textareas by field, as the browser would send them."""
    values = {
        name: html.unescape(value)
        for name, value in re.findall(r'<input [^>]*name="(field\.[^"]+)" value="([^"]*)"', page)
    }
    for name, text in re.findall(
        r'<textarea [^>]*name="(field\.[^"]+)"[^>]*>(.*?)</textarea>', page, re.S
    ):
        values[name] = html.unescape(text)
    for name, body in re.findall(r'<select [^>]*name="(field\.[^"]+)">(.*?)</select>', page, re.S):
        chosen = re.search(r"<option(?: value=\"[^\"]*\")? selected>([^<]*)</option>", body)
        values[name] = html.unescape(chosen[1]) if chosen else ""
    return values


def test_the_queue_lists_waiting_steps_and_the_nav_links_it(client: TestClient, conn: Conn) -> None:
    run_id = waiting_run(conn)

    page = client.get("/review")

    assert page.status_code == 200
    assert 'href="/review"' in page.text
    [row] = re.findall(r'<tr data-job="(\d+)" data-run="(\d+)">(.*?)</tr>', page.text, re.S)
    assert row[1] == str(run_id) and "Invoice 7" in row[2] and "approval" in row[2]


def test_the_form_is_drawn_from_the_schema_prefilled_with_the_evidence_beside(
    client: TestClient, conn: Conn
) -> None:
    run_id = waiting_run(conn)

    page, _ = form_of(client, f"/review/{run_id}")

    assert inputs(page) == {
        "field.approver": "ann",
        "field.amount": "10.50",
        "field.due": "",
        "field.tier": "low",
        "field.tags": "q1",
    }
    # In the model's order, which the stored (jsonb) schema no longer has.
    assert re.findall(r'<tr data-field="(\w+)"', page) == list(Approval.model_fields)
    amount = re.search(r'<tr data-field="amount" class="flagged">(.*?)</tr>', page, re.S)
    assert amount is not None
    assert "check" in amount[1] and "40%" in amount[1] and "below 0.75" in amount[1]
    assert "Total: 10,5O &lt;b&gt;EUR&lt;/b&gt;" in amount[1]  # evidence is text, never markup
    assert f'src="{PIXEL}"' in amount[1]
    assert "image/svg" not in page, "a picture that is not a PNG data URI is not shown"


def test_correcting_a_field_resumes_the_step_with_the_corrected_value(
    client: TestClient, conn: Conn
) -> None:
    run_id = waiting_run(conn)
    page, token = form_of(client, f"/review/{run_id}")
    values = inputs(page) | {"field.amount": "10.80", "field.tier": "high"}

    sent = client.post(
        f"/review/{run_id}",
        data={"csrf": token, "name": "approval", "action": "correct", **values},
        follow_redirects=False,
    )

    assert sent.status_code == 303, sent.text
    assert resume(conn, run_id).approval == Approval(
        approver="ann", amount=Decimal("10.80"), tier="high", tags=["q1"]
    )
    assert f'data-run="{run_id}"' not in client.get("/review").text
    gone = client.get(f"/review/{run_id}")
    assert gone.status_code == 200 and 'id="gone"' in gone.text and 'id="accept"' not in gone.text


def test_accepting_sends_the_proposal_as_it_was(client: TestClient, conn: Conn) -> None:
    run_id = waiting_run(conn)
    _, token = form_of(client, f"/review/{run_id}")

    # The form's values are ignored: accepting means "as proposed".
    client.post(
        f"/review/{run_id}",
        data={"csrf": token, "action": "accept", "field.amount": "999"},
        follow_redirects=False,
    )

    assert resume(conn, run_id).approval.amount == Decimal("10.50")


@pytest.mark.parametrize(
    ("field", "text", "why"),
    [
        ("field.amount", "ten euros", "must be a number"),
        ("field.due", "next tuesday", "date and time"),
        ("field.tier", "urgent", "must be one of low, high"),
    ],
)
def test_a_value_that_cannot_be_right_shows_on_the_form_and_nothing_is_sent(
    client: TestClient, conn: Conn, field: str, text: str, why: str
) -> None:
    run_id = waiting_run(conn)
    page, token = form_of(client, f"/review/{run_id}")
    values = inputs(page) | {field: text}

    sent = client.post(f"/review/{run_id}", data={"csrf": token, "action": "correct", **values})

    assert sent.status_code == 422
    assert 'id="errors"' in sent.text and why in sent.text
    if field != "field.tier":  # a select offers its options alone
        assert html.escape(text) in sent.text, "what the reviewer typed is kept"
    assert f'data-run="{run_id}"' in client.get("/review").text, "still waiting"


def test_a_schema_error_shows_beside_its_field(client: TestClient, conn: Conn) -> None:
    run_id = waiting_run(conn)
    page, token = form_of(client, f"/review/{run_id}")
    values = inputs(page) | {"field.approver": "a"}  # the schema wants 2 characters at least

    sent = client.post(f"/review/{run_id}", data={"csrf": token, "action": "correct", **values})

    assert sent.status_code == 422
    row = re.search(r'<tr data-field="approver" class="invalid">(.*?)</tr>', sent.text, re.S)
    assert row is not None and "field-error" in row[1] and "too short" in row[1]


def test_an_answer_to_a_step_answered_meanwhile_says_so(client: TestClient, conn: Conn) -> None:
    run_id = waiting_run(conn)
    page, token = form_of(client, f"/review/{run_id}")
    answer = {"csrf": token, "action": "correct", **inputs(page)}
    assert client.post(f"/review/{run_id}", data=answer, follow_redirects=False).status_code == 303

    again = client.post(f"/review/{run_id}", data=answer)

    assert again.status_code == 409 and 'id="gone"' in again.text


def test_a_post_without_its_csrf_token_answers_nothing(client: TestClient, conn: Conn) -> None:
    run_id = waiting_run(conn)
    form_of(client, f"/review/{run_id}")  # the cookie, not the form's token

    sent = client.post(f"/review/{run_id}", data={"action": "accept", "csrf": "0" * 64})

    assert sent.status_code == 403
    assert f'data-run="{run_id}"' in client.get("/review").text


ACME, ZETA = "acme-token-0123456789abcdef", "zeta-token-0123456789abcdef"


def test_a_tenant_sees_and_answers_its_own_reviews_alone(db_url: str, conn: Conn) -> None:
    tokens = {"acme": ACME, "zeta": ZETA}
    app = dashboard.app(db_url, token="admin-token-0123456789abcdef", tenant_tokens=tokens)
    mine, theirs = waiting_run(conn, "1", "acme"), waiting_run(conn, "2", "zeta")
    remote = "http://dash.example"
    with TestClient(app, base_url=remote, headers={"Authorization": f"Bearer {ACME}"}) as acme:
        queue = acme.get("/review").text
        assert f'data-run="{mine}"' in queue and f'data-run="{theirs}"' not in queue
        assert acme.get(f"/review/{theirs}").status_code == 404
        _, token = form_of(acme, f"/review/{mine}")
        stolen = acme.post(f"/review/{theirs}", data={"csrf": token, "action": "accept"})
        assert stolen.status_code == 404
    with TestClient(app, base_url=remote, headers={"Authorization": f"Bearer {ZETA}"}) as zeta:
        assert f'data-run="{theirs}"' in zeta.get("/review").text


def test_a_read_only_dashboard_shows_the_form_without_its_buttons(db_url: str, conn: Conn) -> None:
    run_id = waiting_run(conn)
    with TestClient(dashboard.app(db_url, token="", read_only=True), base_url=LOCAL) as ro:
        page, token = form_of(ro, f"/review/{run_id}")
        assert 'id="accept"' not in page and "Read-only" in page
        assert (
            ro.post(f"/review/{run_id}", data={"csrf": token, "action": "accept"}).status_code
            == 403
        )
