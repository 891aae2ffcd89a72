"""The LLM extractor's tokens-per-minute limit: keyed by endpoint, estimated from the pages,
corrected by the tokens the API reported."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from pg_pipeline import Limit
from pg_pipeline_documents.llm_limits import (
    ANSWER_TOKENS_ESTIMATE,
    LLM_TOKENS,
    endpoint_key,
    estimated_tokens,
    llm_token_limits,
)

ENV = {"PIPELINE_LLM_BASE_URL": "https://user:secret@api.example.com/v1/"}


class Doc(BaseModel):
    pages: int


def test_no_endpoint_no_limit() -> None:
    assert llm_token_limits({}) == []
    assert endpoint_key({"PIPELINE_LLM_TPM": "1000"}) is None


def test_the_key_is_the_endpoint_without_credentials_and_a_fingerprint_of_its_api_key() -> None:
    assert endpoint_key(ENV) == "https://api.example.com/v1"
    one = endpoint_key(ENV | {"PIPELINE_LLM_API_KEY": "sk-one"})
    two = endpoint_key(ENV | {"PIPELINE_LLM_API_KEY": "sk-two"})
    assert one is not None and two is not None and one != two
    assert "sk-one" not in one and one.startswith("https://api.example.com/v1 key:")
    assert endpoint_key(ENV | {"PIPELINE_LLM_LIMIT_KEY": "team-a"}) == "team-a"


def test_the_estimate_grows_with_the_pages_up_to_what_the_extractor_sends() -> None:
    one, three = estimated_tokens(1, {}), estimated_tokens(3, {})
    assert ANSWER_TOKENS_ESTIMATE < one < three
    # The extractor sends PIPELINE_LLM_MAX_CHARS of text at most (24000 by default).
    assert estimated_tokens(100, {}) == estimated_tokens(1000, {})
    assert estimated_tokens(100, {"PIPELINE_LLM_MAX_CHARS": "4000"}) < estimated_tokens(100, {})


def test_the_limit_charges_the_estimate_and_is_corrected_by_the_reported_tokens() -> None:
    (limit,) = llm_token_limits(ENV | {"PIPELINE_LLM_TPM": "30000"})
    assert isinstance(limit, Limit)
    assert (limit.name, limit.capacity, limit.per) == (LLM_TOKENS, 30000, 60)
    charge = limit.charge({"pages": 2}, lambda: Doc(pages=2), None)
    assert charge.key == "https://api.example.com/v1"
    assert charge.units == estimated_tokens(2, ENV)
    assert limit.actual_units({"tokens_in": 1200.0, "tokens_out": 300.0, "model": "m"}) == 1500
    assert limit.actual_units({"model": "m"}) is None  # nothing reported: the estimate stands


def test_a_bad_tpm_is_refused() -> None:
    with pytest.raises(ValueError, match="PIPELINE_LLM_TPM must be a whole number"):
        llm_token_limits(ENV | {"PIPELINE_LLM_TPM": "lots"})
