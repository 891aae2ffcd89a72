"""LlmExtractor against a real local HTTP server speaking the chat-completions API."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest

from pg_pipeline_documents.errors import DocumentError
from pg_pipeline_documents.extract import extract_fields
from pg_pipeline_documents.extract_llm import ExtractionFailed, LlmExtractor, LlmUnavailable
from pg_pipeline_documents.tender import TenderFields
from tests.support.fake_llm_server import FakeLlmServer, Reply

NOTICE = "CONTRACT NOTICE\nTitle: Road works\nReference: WB/2027/0042\n"
VALID = json.dumps(
    {
        "title": "Road works",
        "issuing_authority": "Westbridge City Council",
        "reference": "WB/2027/0042",
        "submission_deadline": "2027-03-15T12:00:00+01:00",
        "estimated_value": "1250000.00",
        "currency": "GBP",
        "cpv_codes": ["45233142-6"],
        "lots": [{"number": 1, "title": "North", "estimated_value": 750000}],
        "contact_email": "procurement@westbridge.gov.uk",
    }
)


@pytest.fixture
def server() -> Iterator[FakeLlmServer]:
    with FakeLlmServer() as srv:
        yield srv


def make(server: FakeLlmServer, **kw: object) -> LlmExtractor:
    settings: dict[str, object] = {"model": "test-model", "api_key": "sk-test", "timeout_s": 5}
    settings.update(kw)
    return LlmExtractor(base_url=server.base_url, **settings)  # type: ignore[arg-type]


def test_valid_answer_is_parsed_and_schema_is_sent(server: FakeLlmServer) -> None:
    server.reply(VALID)
    with make(server) as extractor:
        fields = extractor.extract(NOTICE)

    assert fields.title == "Road works"
    assert fields.reference == "WB/2027/0042"
    assert fields.submission_deadline == datetime(
        2027, 3, 15, 12, tzinfo=timezone(timedelta(hours=1))
    )
    assert fields.estimated_value == Decimal("1250000")
    assert fields.lots[0].estimated_value == Decimal("750000")

    (body,) = server.requests
    assert body["model"] == "test-model"
    rf = body["response_format"]
    assert rf["type"] == "json_schema"
    assert rf["json_schema"]["name"] == "tender_fields"
    assert rf["json_schema"]["strict"] is False
    assert rf["json_schema"]["schema"] == TenderFields.model_json_schema()
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user"]
    assert body["messages"][1]["content"] == NOTICE
    assert server.headers[0]["authorization"] == "Bearer sk-test"


def test_invalid_then_valid_is_retried_with_the_error(server: FakeLlmServer) -> None:
    server.reply('{"title": "Road works", "currency": "pounds"}', VALID)
    with make(server, max_retries=2) as extractor:
        fields = extractor.extract(NOTICE)

    assert fields.currency == "GBP"
    first, second = server.requests
    assert len(first["messages"]) == 2
    follow_up = second["messages"]
    assert [m["role"] for m in follow_up] == ["system", "user", "assistant", "user"]
    assert follow_up[2]["content"] == '{"title": "Road works", "currency": "pounds"}'
    assert "currency" in follow_up[3]["content"]


def test_each_request_reports_its_tokens_and_the_model(server: FakeLlmServer) -> None:
    server.reply('{"title": "Road works", "currency": "pounds"}', VALID)
    reported: list[dict[str, object]] = []
    with make(server, max_retries=2) as extractor:
        extractor.extract(NOTICE, usage=lambda **counters: reported.append(counters))
    # The fake server's usage field: 1 prompt and 1 completion token a request.
    assert reported == [
        {"llm_calls": 1, "model": "test-model", "tokens_in": 1, "tokens_out": 1},
        {"llm_calls": 1, "model": "test-model", "tokens_in": 1, "tokens_out": 1},
    ]


def test_fenced_json_is_accepted(server: FakeLlmServer) -> None:
    server.reply("```json\n" + VALID + "\n```")
    with make(server) as extractor:
        assert extractor.extract(NOTICE).reference == "WB/2027/0042"


def test_always_invalid_raises_extraction_failed_with_reason(server: FakeLlmServer) -> None:
    server.reply("not json at all", '{"lots": [{"number": 0, "title": "x"}]}')
    with make(server, max_retries=1) as extractor, pytest.raises(ExtractionFailed) as info:
        extractor.extract(NOTICE)

    assert isinstance(info.value, DocumentError)
    assert "2 attempt(s)" in str(info.value)
    assert "lots.0.number" in str(info.value)
    assert len(server.requests) == 2


def test_empty_content_counts_as_invalid(server: FakeLlmServer) -> None:
    server.reply(Reply(content=None, finish_reason="length"))
    with make(server, max_retries=0) as extractor, pytest.raises(ExtractionFailed) as info:
        extractor.extract(NOTICE)
    assert "no content" in str(info.value)


def test_long_text_is_truncated(server: FakeLlmServer) -> None:
    server.reply(VALID)
    with make(server, max_chars=100) as extractor:
        extractor.extract("x" * 5000)
    sent = server.requests[0]["messages"][1]["content"]
    assert sent.startswith("x" * 100)
    assert len(sent) < 150


def test_server_down_raises_llm_unavailable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    extractor = LlmExtractor(base_url=f"http://127.0.0.1:{port}/v1", model="m", timeout_s=5)
    with extractor, pytest.raises(LlmUnavailable) as info:
        extractor.extract(NOTICE)
    assert not isinstance(info.value, DocumentError)


def test_timeout_raises_llm_unavailable(server: FakeLlmServer) -> None:
    release = threading.Event()
    server.reply(Reply(content=VALID, hold=release))
    try:
        with make(server, timeout_s=0.3) as extractor, pytest.raises(LlmUnavailable, match="timed"):
            extractor.extract(NOTICE)
    finally:
        release.set()


@pytest.mark.parametrize("status", [429, 500, 503])
def test_overload_statuses_are_transient(server: FakeLlmServer, status: int) -> None:
    server.reply(Reply(status=status))
    with make(server) as extractor, pytest.raises(LlmUnavailable, match=str(status)):
        extractor.extract(NOTICE)


def test_bad_request_is_permanent(server: FakeLlmServer) -> None:
    server.reply(Reply(status=400))
    with make(server) as extractor, pytest.raises(ExtractionFailed, match="400"):
        extractor.extract(NOTICE)


def test_from_env(monkeypatch: pytest.MonkeyPatch, server: FakeLlmServer) -> None:
    monkeypatch.delenv("PIPELINE_LLM_BASE_URL", raising=False)
    assert LlmExtractor.from_env() is None

    env = {"PIPELINE_LLM_BASE_URL": server.base_url, "PIPELINE_LLM_MODEL": "llama3"}
    extractor = LlmExtractor.from_env(env)
    assert extractor is not None
    assert extractor.model == "llama3"
    assert "sk-" not in repr(extractor)
    extractor.close()

    with pytest.raises(ValueError, match="PIPELINE_LLM_MODEL"):
        LlmExtractor.from_env({"PIPELINE_LLM_BASE_URL": server.base_url})


def test_extract_fields_uses_llm_when_configured(
    monkeypatch: pytest.MonkeyPatch, server: FakeLlmServer
) -> None:
    monkeypatch.setenv("PIPELINE_LLM_BASE_URL", server.base_url)
    monkeypatch.setenv("PIPELINE_LLM_MODEL", "llama3")
    monkeypatch.delenv("PIPELINE_LLM_API_KEY", raising=False)
    server.reply(VALID)
    assert extract_fields(NOTICE).issuing_authority == "Westbridge City Council"
    assert server.requests[0]["model"] == "llama3"


def test_extract_fields_falls_back_to_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PIPELINE_LLM_BASE_URL", raising=False)
    fields = extract_fields(NOTICE)
    assert fields.title == "Road works"
    assert fields.reference == "WB/2027/0042"


def test_temperature_can_be_left_to_the_server(server: FakeLlmServer) -> None:
    server.reply(VALID, VALID)
    with make(server) as extractor:
        extractor.extract(NOTICE)
    with make(server, temperature=None) as extractor:
        extractor.extract(NOTICE)
    first, second = server.requests
    assert first["temperature"] == 0
    assert "temperature" not in second
