"""Credentials never reach a message: pg_pipeline.redact, the DSN helpers and the LLM errors."""

from __future__ import annotations

import socket

import pytest

from pg_pipeline.db import describe, scrub
from pg_pipeline.redact import redact
from pg_pipeline_documents.extract_llm import LlmExtractor, LlmUnavailable
from tests.support.fake_llm_server import FakeLlmServer, Reply

SECRET = "s3cretPW"

REDACTED = [
    # passwords in URLs, whatever the scheme, with awkward characters and in quotes
    ("postgresql://app:s3cretPW@db:5432/shop", "postgresql://app:***@db:5432/shop"),
    ("redis://:s3cretPW@cache:6379/0", "redis://:***@cache:6379/0"),
    ("https://bot:s3cretPW@llm.example/v1", "https://bot:***@llm.example/v1"),
    ("postgresql://app:s3c@ret/PW@db/shop", "postgresql://app:***@db/shop"),
    ('in URI: "postgres://user:s3cretPW@[::1"', 'in URI: "postgres://user:***@[::1"'),
    # key=value conninfo, quoted, unquoted, unterminated, and libpq's other password
    ("host=db password=s3cretPW dbname=shop", "host=db password=*** dbname=shop"),
    ("host=db password='s3cret PW' port=5", "host=db password='***' port=5"),
    ("host=db password='s3cretPW", "host=db password='***"),
    ("sslpassword=s3cretPW sslmode=verify-full", "sslpassword=*** sslmode=verify-full"),
    ("PGPASSWORD=s3cretPW pipeline status", "PGPASSWORD=*** pipeline status"),
    (
        "postgresql:///shop?host=/tmp&password=s3cretPW&x=1",
        "postgresql:///shop?host=/tmp&password=***&x=1",
    ),
    # API keys and tokens by name, in env, query, JSON, Python reprs and headers
    ("PIPELINE_LLM_API_KEY=s3cretPW", "PIPELINE_LLM_API_KEY=***"),
    ("https://x.example/v1?api-key=s3cretPW&v=2", "https://x.example/v1?api-key=***&v=2"),
    ('{"api_key": "s3cretPW", "model": "m"}', '{"api_key": "***", "model": "m"}'),
    ("{'client_secret': 's3cretPW'}", "{'client_secret': '***'}"),
    ("aws_secret_access_key = s3cretPW", "aws_secret_access_key = ***"),
    ("X-Api-Key: s3cretPW", "X-Api-Key: ***"),
    ("access_token=s3cretPW", "access_token=***"),
    ("Authorization: Bearer s3cretPW", "Authorization: Bearer ***"),
    ("authorization: Basic czNjcmV0UFc=", "authorization: Basic ***"),
    ("'Authorization': 'Token s3cretPW'", "'Authorization': 'Token ***'"),
    ("sent Bearer s3cretPWs3cretPW upstream", "sent Bearer *** upstream"),
    # keys recognisable by their shape alone
    ("key sk-proj-s3cretPWs3cretPWs3cretPW rejected", "key sk-*** rejected"),
    ("sk-ant-api03-s3cretPWs3cretPWs3cretPW", "sk-***"),
    ("token ghp_s3cretPWs3cretPWs3cretPWs3cretPW", "token ghp_***"),
    ("id AKIAS3CRETPWS3CRETPW", "id AKIA***"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJzM2NyZXRQVyJ9.c2lnbmF0dXJl", "jwt ***"),
]


@pytest.mark.parametrize(("text", "expected"), REDACTED)
def test_redact_masks_the_credential_and_keeps_the_rest(text: str, expected: str) -> None:
    assert redact(text) == expected


KEPT = [
    'FATAL:  password authentication failed for user "app"',
    'connection to server at "db" (10.0.0.5), port 5432 failed: Connection refused',
    "postgresql://app@db:5432/shop",
    "https://llm.example:8443/v1/chat/completions",
    "max_tokens: 100, tokenizer: bpe",
    "the bearer of this notice",
    "task-force risk-assessment",
    "lots.0.number: Input should be a valid integer",
]


@pytest.mark.parametrize("text", KEPT)
def test_redact_leaves_text_without_credentials_alone(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize("text", [t for t, _ in REDACTED] + KEPT)
def test_redacting_twice_changes_nothing_more(text: str) -> None:
    assert redact(redact(text)) == redact(text)


def test_redact_masks_every_credential_of_a_multi_line_message() -> None:
    text = (
        "request to https://u:s3cretPW@llm/v1 failed\n"
        "headers: {'Authorization': 'Bearer s3cretPW2'}\n"
        "retry with password=s3cretPW3"
    )
    assert "s3cret" not in redact(text)


# -- describe and scrub: where a DSN points, and a driver's message about it ------------------


MALFORMED = [
    ("postgresql://user:s3cretPW@dbhost:notaport/app", "dbhost"),
    ("postgres://user:s3cretPW@[::1", "::1"),
    ("postgresql://user:s3cretPW@dbhost/app?bogus=1", "dbhost"),
    ("host=dbhost password='s3cretPW", "dbhost"),
    ("host=dbhost password=s3cretPW bogus=1", "dbhost"),
    ("host='dbhost password=s3cretPW", "dbhost"),
    # a raw `/`, `?` or `@` in a password: libpq itself reads part of it as the host or port
    ("postgresql://user:s3c/retPW@dbhost/app", "dbhost"),
    ("postgresql://user:s3c?retPW@dbhost/app", "dbhost"),
    ("postgresql://user:s3c@retPW@dbhost/app", "dbhost"),
    # a dbname that is itself a connection string
    ("dbname=postgresql://user:s3cretPW@dbhost/app", "dbhost"),
]


@pytest.mark.parametrize(("dsn", "host"), MALFORMED)
def test_describe_names_the_host_of_a_malformed_dsn_and_never_its_password(
    dsn: str, host: str
) -> None:
    text = describe(dsn)
    assert host in text
    assert "s3c" not in text and "retPW" not in text


def test_describe_keeps_the_host_port_and_database_of_a_well_formed_dsn() -> None:
    assert describe("postgresql://app:s3cretPW@db.internal:6543/shop") == "db.internal:6543/shop"
    assert describe("host=/var/run/postgresql dbname=shop") == "/var/run/postgresql:5432/shop"
    assert describe("postgresql://%2Ftmp/shop") == "/tmp:5432/shop"
    assert describe("postgresql://u:s3cretPW@[::1]:5433/shop") == "::1:5433/shop"


def test_describe_says_so_when_nothing_can_be_read() -> None:
    assert describe("s3cretPW") == "an unparsable DATABASE_URL"


def test_scrub_removes_the_dsn_its_password_and_other_credentials() -> None:
    dsn = "postgres://user:s3cretPW@[::1"
    message = f'end of string reached in IPv6 host address in URI: "{dsn}" (s3cretPW)'
    cleaned = scrub(message, dsn)
    assert "s3cretPW" not in cleaned and "IPv6 host address" in cleaned
    assert scrub("token=abc123xyz", None) == "token=***"


# -- the LLM endpoint's errors ------------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_an_unreachable_llm_endpoint_is_named_without_its_credentials() -> None:
    base_url = f"http://bot:{SECRET}@127.0.0.1:{closed_port()}/v1?api-key={SECRET}2"
    with LlmExtractor(base_url=base_url, model="m", api_key="sk-key-" + SECRET, timeout_s=5) as x:
        with pytest.raises(LlmUnavailable) as caught:
            x.extract("text")
        assert "unreachable" in str(caught.value) and "127.0.0.1" in str(caught.value)
        assert SECRET not in str(caught.value) and SECRET not in repr(x)


def test_an_llm_endpoint_error_is_reported_without_the_urls_credentials() -> None:
    with FakeLlmServer() as server:
        server.reply(Reply(status=503))
        base_url = server.base_url.replace("http://", f"http://bot:{SECRET}@")
        extractor = LlmExtractor(base_url=base_url, model="m", timeout_s=5)
        with extractor, pytest.raises(LlmUnavailable) as caught:
            extractor.extract("text")
    assert "HTTP 503" in str(caught.value) and SECRET not in str(caught.value)
