"""Field extraction entry point: an LLM when one is configured, the built-in rules otherwise."""

from __future__ import annotations

from stages.extract_llm import LlmExtractor
from stages.extract_offline import extract_offline
from stages.tender import TenderFields

__all__ = ["extract_fields"]


def extract_fields(text: str) -> TenderFields:
    """Extract with ``LlmExtractor.from_env()`` when ``PIPELINE_LLM_BASE_URL`` is set.

    The LLM's errors propagate (``LlmUnavailable`` is transient, ``ExtractionFailed`` permanent):
    silently falling back to the rules would mix two extractors' output in one run.
    """
    extractor = LlmExtractor.from_env()
    if extractor is None:
        return extract_offline(text)
    with extractor:
        return extractor.extract(text)
