"""What the families share: a notice's true values (``Spec``), CPV codes, amounts and dates
as printed, and lot titles."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from make_samples import checked_cpv

from pg_pipeline_documents.tender import Lot, TenderFields


@dataclass
class Spec:
    family: str
    title: str
    authority: str
    reference: str
    deadline: datetime
    value: Decimal | None
    currency: str | None
    cpv: list[str]  # 8-digit stems; the truth carries the check digit
    lots: list[tuple[str, Decimal | None]]
    email: str

    def fields(self) -> TenderFields:
        codes: list[str] = []
        for stem in self.cpv:
            code = checked_cpv(f"{stem}-{check_digit(stem)}")
            if code not in codes:
                codes.append(code)
        return TenderFields(
            title=self.title,
            issuing_authority=self.authority,
            reference=self.reference,
            submission_deadline=self.deadline,
            estimated_value=self.value,
            currency=self.currency if self.value is not None else None,
            cpv_codes=codes,
            lots=[
                Lot(number=i, title=t, estimated_value=v)
                for i, (t, v) in enumerate(self.lots, start=1)
            ],
            contact_email=self.email,
        )


def check_digit(stem: str) -> int:
    return sum(int(d) * w for d, w in zip(stem, (3, 7, 1, 3, 7, 1, 3, 7), strict=True)) % 10


CPV_POOL = [
    "45214200",
    "45233120",
    "45261210",
    "45331000",
    "45310000",
    "45421000",
    "71221000",
    "71320000",
    "90911200",
    "90919200",
    "30213100",
    "48000000",
    "72222300",
    "34144900",
    "33190000",
    "09310000",
    "79421000",
    "50232000",
    "44212320",
    "45262300",
]


def split_value(rng: random.Random, total: Decimal, n: int) -> list[Decimal]:
    weights = [rng.randint(2, 9) for _ in range(n)]
    parts = [(total * w / sum(weights)).quantize(Decimal("1000")) for w in weights]
    parts[-1] = total - sum(parts[:-1])
    return [p.quantize(Decimal("0.01")) for p in parts]


def en_amount(v: Decimal, decimals: bool = True) -> str:
    return f"{v:,.2f}" if decimals else f"{v:,.0f}"


def spaced_amount(v: Decimal, dec: str = ",") -> str:
    return f"{v:,.2f}".replace(",", " ").replace(".", dec)


def de_amount(v: Decimal) -> str:
    return f"{v:,.2f}".replace(",", "_").replace(".", ",").replace("_", ".")


def pick_date(rng: random.Random, hours: Sequence[int], minutes: Sequence[int]) -> datetime:
    day = datetime(2026, 9, 1) + timedelta(days=rng.randrange(0, 200))
    return day.replace(hour=rng.choice(hours), minute=rng.choice(minutes))


EN_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
FR_MONTHS = [
    "janvier",
    "février",
    "mars",
    "avril",
    "mai",
    "juin",
    "juillet",
    "août",
    "septembre",
    "octobre",
    "novembre",
    "décembre",
]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def hex_uuid(rng: random.Random) -> str:
    h = rng.randbytes(16).hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


LOT_TITLES_EN = [
    "Civil engineering works",
    "Electrical installations",
    "Mechanical installations",
    "Northern district",
    "Southern district",
    "Consumables for wards",
    "Laboratory supplies",
    "Software licences and support",
    "Data migration services",
    "Street lighting maintenance",
    "Traffic signal maintenance",
]
