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
