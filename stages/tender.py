"""The fields a tender notice is reduced to.

The contract between OCR text, the extractors and the ground truth in sample_docs/.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field


class Lot(BaseModel):
    model_config = ConfigDict(extra="forbid")

    number: int = Field(ge=1)
    title: str
    estimated_value: Decimal | None = None


class TenderFields(BaseModel):
    """All but the lists is optional: an extractor says 'unknown' with None, never guesses."""

    model_config = ConfigDict(extra="forbid")

    title: str | None = None
    issuing_authority: str | None = None
    reference: str | None = None
    # Timezone-aware when the notice states a zone; naive datetimes are local to the issuer.
    submission_deadline: datetime | None = None
    estimated_value: Decimal | None = None
    currency: str | None = Field(default=None, pattern=r"^[A-Z]{3}$")
    cpv_codes: list[str] = Field(default_factory=list)  # "45000000-7": 8 digits, dash, check digit
    lots: list[Lot] = Field(default_factory=list)
    contact_email: str | None = None


class FieldEvidence(BaseModel):
    """Why an extractor filled a field (or left it empty): how sure it is and where it read it."""

    model_config = ConfigDict(extra="forbid")

    confidence: float = Field(ge=0, le=1)
    rule: str  # which rule found it: "label", "letterhead", "llm", ...
    source: str | None = None  # the line the value was read from, as normalised
    line: int | None = Field(default=None, ge=1)  # 1-based line in the document's text
    page: int | None = Field(default=None, ge=1)  # 1-based page, when the pages were known
    rejected: str | None = None  # a candidate the extractor was not sure enough of to keep
    note: str | None = None  # e.g. where the LLM and the offline rules disagree


class TenderExtraction(TenderFields):
    """TenderFields with the evidence for each field, as the `extract` stage stores it.

    ``TenderFields.model_validate(x.model_dump(include=set(TenderFields.model_fields)))`` gives
    the plain fields: that is what `pipeline submit --wait` prints (and ``--explain`` adds
    the rest).
    """

    evidence: dict[str, FieldEvidence] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    extractor: str | None = None  # "offline" or "llm"

    def fields(self) -> TenderFields:
        return TenderFields.model_validate(self.model_dump(include=set(TenderFields.model_fields)))
