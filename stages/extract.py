"""Field extraction entry point: an LLM when one is configured, the built-in rules otherwise."""

from __future__ import annotations

from collections.abc import Sequence

from pg_pipeline_documents.extract_llm import LlmExtractor, UsageReport
from pg_pipeline_documents.extract_offline import extract_offline_explained
from pg_pipeline_documents.layout import PageLayout
from pg_pipeline_documents.tender import FieldEvidence, TenderExtraction, TenderFields

__all__ = ["cross_check", "extract_fields", "with_page_markers"]


def with_page_markers(pages: Sequence[str]) -> str:
    """The document as the LLM reads it: each page under a ``=== page N ===`` line."""
    if len(pages) == 1:
        return pages[0]
    return "\n".join(f"=== page {n} ===\n{text}" for n, text in enumerate(pages, start=1))


def cross_check(llm: TenderFields, offline: TenderExtraction) -> TenderExtraction:
    """The LLM's fields, each with the offline rules' reading as a second opinion.

    Where both read a value and they differ, the field keeps the LLM's value, its evidence
    says so, and a warning names the field: a reviewer looks at those first.
    """
    evidence: dict[str, FieldEvidence] = {}
    warnings = list(offline.warnings)
    for name in TenderFields.model_fields:
        mine, theirs = getattr(llm, name), getattr(offline, name)
        rules = offline.evidence.get(name)
        if mine in (None, []):
            continue
        if theirs in (None, []):
            evidence[name] = FieldEvidence(confidence=0.7, rule="llm")
        elif mine == theirs:
            evidence[name] = FieldEvidence(
                confidence=0.95,
                rule="llm",
                source=rules.source if rules else None,
                line=rules.line if rules else None,
                page=rules.page if rules else None,
                note="the offline rules agree",
            )
        else:
            shown = theirs if not isinstance(theirs, list) else f"{len(theirs)} item(s)"
            evidence[name] = FieldEvidence(
                confidence=0.5,
                rule="llm",
                source=rules.source if rules else None,
                line=rules.line if rules else None,
                page=rules.page if rules else None,
                note=f"the offline rules read {str(shown)[:200]!r}",
            )
            warnings.append(f"{name}: the LLM and the offline rules disagree")
    data = llm.model_dump()
    return TenderExtraction(**data, evidence=evidence, warnings=warnings, extractor="llm")


def extract_fields(
    text: str | Sequence[str],
    layouts: Sequence[PageLayout | None] | None = None,
    usage: UsageReport | None = None,
) -> TenderExtraction:
    """Extract with ``LlmExtractor.from_env()`` when ``PIPELINE_LLM_BASE_URL`` is set.

    ``text`` is the document's text, or its pages in order (the evidence then names pages);
    ``layouts``, when given, holds each page's layout (None for a page read without one).
    The LLM's errors propagate (``LlmUnavailable`` is transient, ``ExtractionFailed`` permanent):
    silently falling back to the rules would mix two extractors' output in one run. The offline
    rules still run beside it, as a cross-check. ``usage`` (a stage's ctx.usage) is told the
    LLM's tokens.
    """
    pages = [text] if isinstance(text, str) else list(text)
    offline = extract_offline_explained(pages, layouts)
    extractor = LlmExtractor.from_env()
    if extractor is None:
        return offline
    with extractor:
        return cross_check(extractor.extract(with_page_markers(pages), usage), offline)
