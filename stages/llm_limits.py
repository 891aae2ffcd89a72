"""The LLM extractor's tokens-per-minute limit, per configured endpoint (docs/limits.md).

With ``PIPELINE_LLM_BASE_URL`` set, every ``extract`` job is charged an estimate of the tokens
its request will take against the limit ``llm-tokens``, keyed by the endpoint: the claim holds
it back while the endpoint's last minute is full, instead of the endpoint answering 429 and the
job spending an attempt. After the run the charge is corrected by the tokens the API reported
(``ctx.usage(tokens_in=..., tokens_out=...)``).

The capacity: ``PIPELINE_LLM_TPM`` (tokens per minute, the provider's limit for the key) as the
default, or ``pipeline limits set llm-tokens N --per 60 [--key KEY]`` at runtime, which wins.
The key: ``PIPELINE_LLM_LIMIT_KEY`` when set (to share one limit among endpoints behind one
account), else the endpoint's URL without credentials and, with an API key, a fingerprint of it:
two keys on one URL are two limits, and the key itself is never stored.

The estimate is made at enqueue, before OCR has read the pages: what the request can send (the
pages' text at PAGE_CHARS_ESTIMATE each, at most ``PIPELINE_LLM_MAX_CHARS``, plus the prompt and
the schema) at CHARS_PER_TOKEN, plus ANSWER_TOKENS_ESTIMATE for the answer.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping
from typing import Any

from pg_pipeline import Limit
from pg_pipeline_documents.extract_llm import (
    BASE_URL_ENV,
    DEFAULT_MAX_CHARS,
    SYSTEM_PROMPT,
    _without_credentials,
)
from pg_pipeline_documents.tender import TenderFields

LLM_TOKENS = "llm-tokens"  #: the limit's name, for `pipeline limits set`
TPM_ENV = "PIPELINE_LLM_TPM"
LIMIT_KEY_ENV = "PIPELINE_LLM_LIMIT_KEY"
CHARS_PER_TOKEN = 4  #: English and most European text, as the OpenAI tokenizers cut it
PAGE_CHARS_ESTIMATE = 3000  #: a dense page of a tender notice
ANSWER_TOKENS_ESTIMATE = 1000  #: the JSON answer, with a few lots
#: what the stage reports after the run (the extractor's usage: ctx.usage)
ACTUAL_COUNTERS = ("tokens_in", "tokens_out")


def endpoint_key(environ: Mapping[str, str] | None = None) -> str | None:
    """The limit's key for the configured endpoint; None when no endpoint is configured."""
    env = os.environ if environ is None else environ
    base_url = env.get(BASE_URL_ENV, "").strip()
    if not base_url:
        return None
    chosen = env.get(LIMIT_KEY_ENV, "").strip()
    if chosen:
        return chosen
    key = _without_credentials(base_url).rstrip("/")
    api_key = env.get("PIPELINE_LLM_API_KEY", "").strip()
    if api_key:
        key += " key:" + hashlib.sha256(api_key.encode()).hexdigest()[:8]
    return key[:200]


def estimated_tokens(pages: int, environ: Mapping[str, str] | None = None) -> int:
    """The tokens one extraction of a document of `pages` pages is charged before it runs."""
    env = os.environ if environ is None else environ
    try:
        max_chars = int(float(env.get("PIPELINE_LLM_MAX_CHARS", "") or DEFAULT_MAX_CHARS))
    except ValueError:
        max_chars = DEFAULT_MAX_CHARS
    text = min(max(pages, 1) * PAGE_CHARS_ESTIMATE, max_chars)
    return math.ceil((text + _PROMPT_CHARS) / CHARS_PER_TOKEN) + ANSWER_TOKENS_ESTIMATE


_PROMPT_CHARS = len(SYSTEM_PROMPT) + len(json.dumps(TenderFields.model_json_schema()))


def tpm(environ: Mapping[str, str] | None = None) -> int | None:
    """PIPELINE_LLM_TPM as a whole number of tokens, None when unset."""
    env = os.environ if environ is None else environ
    raw = env.get(TPM_ENV, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{TPM_ENV} must be a whole number of tokens, got {raw!r}") from None
    if value < 0:
        raise ValueError(f"{TPM_ENV} must be >= 0, got {value}")
    return value


def llm_token_limits(environ: Mapping[str, str] | None = None) -> list[Limit]:
    """The extract stage's limits: the endpoint's tokens per minute, when an endpoint is set."""
    key = endpoint_key(environ)
    if key is None:
        return []
    return [
        Limit(
            LLM_TOKENS,
            key=key,
            units=lambda job: estimated_tokens(_pages(job), environ),
            actual=ACTUAL_COUNTERS,
            capacity=tpm(environ),
            per=60,
        )
    ]


def _pages(job: Any) -> int:
    return int(getattr(job, "pages", 1))
