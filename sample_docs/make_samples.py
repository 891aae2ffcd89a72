"""Generate the sample tender PDFs in sample_docs/ and their ground truth.

Run from anywhere:  .venv/bin/python sample_docs/make_samples.py

Five fictional public-procurement contract notices are laid out with the standard Type1 fonts
(Helvetica, Helvetica-Bold) by a small hand-written PDF writer.  One is kept born-digital, the
others are rendered with pypdfium2 and degraded like scans of varying quality.  Every PDF X.pdf
gets ground_truth/X.json with the text drawn on each page (line by line) and the fields a perfect
extractor would return, as the JSON of pg_pipeline_documents.tender.TenderFields.

The output is deterministic: fixed seeds, no timestamps, our own PDF writer for every file.  With
the same Pillow/libjpeg, zlib and pdfium builds a re-run reproduces the files byte for byte.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Literal

import pypdfium2 as pdfium
from PIL import Image, ImageChops, ImageDraw, ImageFilter

from pg_pipeline_documents.tender import Lot, TenderFields

OUT_DIR = Path(__file__).resolve().parent
TRUTH_DIR = OUT_DIR / "ground_truth"

# A4 in PostScript points.
PAGE_W = 595.28
PAGE_H = 841.89
MARGIN_L = 62.0
MARGIN_R = 62.0
TEXT_W = PAGE_W - MARGIN_L - MARGIN_R
TOP_Y = 770.0
BOTTOM_Y = 72.0

# --------------------------------------------------------------------------------------------
# Font metrics: advance widths (1/1000 em) of the printable ASCII range 32..126, from the Adobe
# Font Metrics of the base-14 fonts.  WinAnsiEncoding agrees with ASCII on this range.
# --------------------------------------------------------------------------------------------

_HELVETICA_WIDTHS = (
    "278 278 355 556 556 889 667 191 333 333 389 584 278 333 278 278 "  # space .. /
    "556 556 556 556 556 556 556 556 556 556 278 278 584 584 584 556 1015 "  # 0 .. @
    "667 667 722 722 667 611 778 722 278 500 667 556 833 722 778 667 778 722 667 611 722 "
    "667 944 667 667 611 "  # A .. Z
    "278 278 278 469 556 333 "  # [ \ ] ^ _ `
    "556 556 500 556 556 278 556 556 222 222 500 222 833 556 556 556 556 333 500 278 556 "
    "500 722 500 500 500 "  # a .. z
    "334 260 334 584"  # { | } ~
)
_HELVETICA_BOLD_WIDTHS = (
    "278 333 474 556 556 889 722 238 333 333 389 584 278 333 278 278 "
    "556 556 556 556 556 556 556 556 556 556 333 333 584 584 584 611 975 "
    "722 722 722 722 667 611 778 722 278 556 722 611 833 722 778 667 778 722 667 611 722 "
    "667 944 667 667 611 "
    "333 278 333 584 556 333 "
    "556 611 556 611 556 333 611 611 278 278 556 278 889 611 611 611 611 389 556 333 611 "
    "556 778 556 556 500 "
    "389 280 389 584"
)


def _width_table(spec: str) -> dict[str, int]:
    widths = [int(w) for w in spec.split()]
    assert len(widths) == 95, len(widths)
    return {chr(32 + i): w for i, w in enumerate(widths)}


FontName = Literal["F1", "F2"]  # F1 = Helvetica, F2 = Helvetica-Bold
WIDTHS: dict[str, dict[str, int]] = {
    "F1": _width_table(_HELVETICA_WIDTHS),
    "F2": _width_table(_HELVETICA_BOLD_WIDTHS),
}


def text_width(text: str, font: FontName, size: float) -> float:
    table = WIDTHS[font]
    return sum(table[ch] for ch in text) * size / 1000.0


def wrap(text: str, font: FontName, size: float, width: float) -> list[str]:
    """Greedy word wrap at spaces only (never at hyphens, so no word is split across lines)."""
    lines: list[str] = []
    current = ""
    for word in text.split():
        candidate = f"{current} {word}" if current else word
        if current and text_width(candidate, font, size) > width:
            lines.append(current)
            current = word
        else:
            current = candidate
    if current:
        lines.append(current)
    return lines


# --------------------------------------------------------------------------------------------
# CPV codes: 8 digits, a dash and a check digit = sum(digit * weight) mod 10 with the weights
# 3, 7, 1 repeating from the left (fits every published code we checked, e.g. 45000000-7).
# --------------------------------------------------------------------------------------------


def cpv_check_digit(stem: str) -> int:
    assert len(stem) == 8 and stem.isdigit(), stem
    weights = (3, 7, 1, 3, 7, 1, 3, 7)
    return sum(int(d) * w for d, w in zip(stem, weights, strict=True)) % 10


def checked_cpv(code: str) -> str:
    stem, _, check = code.partition("-")
    if cpv_check_digit(stem) != int(check):
        raise ValueError(f"CPV code {code} fails its check digit")
    return code


# --------------------------------------------------------------------------------------------
# The notices
# --------------------------------------------------------------------------------------------

MoneyStyle = Literal["en", "de", "se"]


def money(currency: str, value: Decimal, style: MoneyStyle) -> str:
    """How the notice prints an amount: EUR 1,250,000.00 / EUR 2.480.000,00 / SEK 4 860 000,00."""
    plain = f"{value:,.2f}"  # 1,250,000.00
    if style == "de":
        plain = plain.replace(",", "_").replace(".", ",").replace("_", ".")
    elif style == "se":
        plain = plain.replace(",", " ").replace(".", ",")
    return f"{currency} {plain}"


@dataclass(frozen=True)
class LotSpec:
    number: int
    title: str
    value: Decimal
    description: str


@dataclass(frozen=True)
class TenderSpec:
    title: str
    contract_type: str
    authority: str
    address: str
    contact_point: str
    email: str
    phone: str
    website: str
    reference: str
    deadline: datetime
    deadline_text: str  # the deadline as the notice states it
    opening_text: str
    currency: str
    money_style: MoneyStyle
    cpv: Sequence[tuple[str, str]]  # (code, label); the first one is the main code
    place: str
    nuts: str
    description: Sequence[str]
    lots: Sequence[LotSpec]
    lot_rule: str
    duration: str
    turnover: Decimal
    ability: str
    criteria: str
    review_body: str
    dispatch: str
    extra_info: Sequence[str] = ()
    annex: Sequence[tuple[str, str]] = ()  # (subheading, paragraph)

    @property
    def value(self) -> Decimal:
        return sum((lot.value for lot in self.lots), Decimal("0.00"))

    def fmt(self, value: Decimal) -> str:
        return money(self.currency, value, self.money_style)

    def fields(self) -> TenderFields:
        return TenderFields(
            title=self.title,
            issuing_authority=self.authority,
            reference=self.reference,
            submission_deadline=self.deadline,
            estimated_value=self.value,
            currency=self.currency,
            cpv_codes=[checked_cpv(code) for code, _ in self.cpv],
            lots=[Lot(number=x.number, title=x.title, estimated_value=x.value) for x in self.lots],
            contact_email=self.email,
        )


CET = timezone(timedelta(hours=1), "CET")
CEST = timezone(timedelta(hours=2), "CEST")
BST = timezone(timedelta(hours=1), "BST")

ROADS = TenderSpec(
    title="Resurfacing and Maintenance of Municipal Roads 2027-2029",
    contract_type="Works",
    authority="City of Westbrook, Department of Public Works",
    address="Town Hall, 12 Market Square, Westbrook WB4 2QT",
    contact_point="Procurement Unit, attention of Ms Helen Marsh",
    email="procurement@westbrook-city.example",
    phone="+44 1632 960 418",
    website="https://www.westbrook-city.example/tenders",
    reference="WB-PW-2027-014",
    deadline=datetime(2027, 3, 15, 12, 0, tzinfo=CET),
    deadline_text="15 March 2027, 12:00 CET",
    opening_text="15 March 2027, 14:00 CET, by electronic means without a public session",
    currency="EUR",
    money_style="en",
    cpv=(
        ("45233120-6", "Road construction works"),
        ("45233141-9", "Road-maintenance works"),
        ("45233142-6", "Road-repair works"),
        ("45233220-7", "Surface work for roads"),
    ),
    place="Municipal road network of the City of Westbrook",
    nuts="UKK23",
    description=(
        "The City of Westbrook intends to conclude works contracts for the resurfacing, "
        "repair and routine maintenance of approximately 84 kilometres of municipal roads "
        "over a period of three construction seasons. The works include milling of worn "
        "asphalt layers, laying of new binder and surface courses, repair of potholes and "
        "longitudinal cracks, adjustment of gully and manhole covers, and the renewal of "
        "road markings and traffic signs on the treated sections.",
        "Works will be ordered in annual programmes agreed with the Department of Public "
        "Works before the start of each season. Traffic management, temporary signage and "
        "the protection of pedestrians and cyclists during the works are part of the "
        "contract and shall comply with the national code of practice for works on the "
        "public highway.",
    ),
    lots=(
        LotSpec(
            1,
            "Resurfacing of arterial roads, northern district",
            Decimal("520000.00"),
            "Milling and replacement of the surface course on the main arterial roads north "
            "of the river, including kerb repairs and the adjustment of drainage covers.",
        ),
        LotSpec(
            2,
            "Pothole and crack repair programme",
            Decimal("310000.00"),
            "Reactive and planned repair of potholes, crack sealing and small patching works "
            "across the whole municipal network, with a maximum response time of 48 hours "
            "for dangerous defects.",
        ),
        LotSpec(
            3,
            "Road markings and signage renewal",
            Decimal("420000.00"),
            "Renewal of longitudinal and transverse markings with thermoplastic material, "
            "replacement of damaged traffic signs and installation of new pedestrian "
            "crossing signage near schools.",
        ),
    ),
    lot_rule="Tenders may be submitted for one, several or all lots.",
    duration="36 months from the signature of the contract",
    turnover=Decimal("900000.00"),
    ability=(
        "Tenderers shall demonstrate at least three completed contracts for asphalt "
        "resurfacing or road maintenance works in the last five years, each with a value of "
        "not less than half of the estimated value of the lot concerned, and shall have "
        "access to a certified asphalt plant within 60 kilometres of Westbrook."
    ),
    criteria=(
        "The contract will be awarded to the most economically advantageous tender on the "
        "basis of the following criteria: price, weighting 60 per cent; quality of the "
        "work methodology and traffic management plan, weighting 30 per cent; and reduction "
        "of carbon emissions through recycled asphalt content, weighting 10 per cent."
    ),
    review_body="Westbrook High Court, Commercial Division, 4 Queen Street, Westbrook WB1 1AA",
    dispatch="1 February 2027",
    extra_info=(
        "A site visit is not mandatory. Tenderers are encouraged to inspect the road "
        "sections listed in Annex B of the technical specifications before preparing their "
        "price schedules.",
    ),
)

LAPTOPS = TenderSpec(
    title="Supply of Laptop Computers and Peripherals for Secondary Schools",
    contract_type="Supplies",
    authority="Northfield Regional Education Board",
    address="Riverside House, 3 Canal Road, Northfield NF2 7HB",
    contact_point="Commercial Services Team, attention of Mr David Okafor",
    email="tenders@northfield-education.example",
    phone="+44 1632 960 771",
    website="https://www.northfield-education.example/procurement",
    reference="NREB/ICT/2027/03",
    deadline=datetime(2027, 4, 22, 10, 0, tzinfo=BST),
    deadline_text="22 April 2027 at 10:00 BST (UTC+01:00)",
    opening_text="22 April 2027 at 11:00 BST in the offices of the Board",
    currency="GBP",
    money_style="en",
    cpv=(
        ("30213100-6", "Portable computers"),
        ("30213000-5", "Personal computers"),
        ("30200000-1", "Computer equipment and supplies"),
    ),
    place="Twenty-two secondary schools in the Northfield region",
    nuts="UKE42",
    description=(
        "The Board seeks suppliers for the delivery, configuration and warranty support of "
        "laptop computers for pupils and teaching staff, together with docking stations, "
        "external monitors, keyboards and other peripherals for staff workplaces. Devices "
        "must be delivered pre-enrolled in the Board's device management service and "
        "labelled with asset tags before distribution to the schools.",
        "The supplier shall provide a four-year on-site warranty with next business day "
        "repair or replacement, secure data erasure of returned devices and a take-back "
        "service for packaging and end-of-life equipment.",
    ),
    lots=(
        LotSpec(
            1,
            "Laptop computers for pupils and staff",
            Decimal("540000.00"),
            "Approximately 1,200 laptop computers with a minimum of 16 GB memory and 512 GB "
            "solid-state storage, a battery life of at least ten hours and a robust chassis "
            "suitable for daily use by pupils.",
        ),
        LotSpec(
            2,
            "Docking stations, monitors and peripherals",
            Decimal("144500.00"),
            "Around 350 docking stations, 350 monitors of 24 inches, keyboards, mice and "
            "headsets for staff workplaces, delivered and installed in the schools.",
        ),
    ),
    lot_rule="Tenders may be submitted for all lots; each lot is awarded separately.",
    duration="48 months, including the warranty period",
    turnover=Decimal("1000000.00"),
    ability=(
        "Tenderers shall be authorised resellers of the manufacturer of the offered devices "
        "and shall provide at least two references for deliveries of more than 500 portable "
        "computers to public or educational bodies within the last three years."
    ),
    criteria=(
        "The contract will be awarded on the basis of the most economically advantageous "
        "tender: total cost of ownership over four years, weighting 55 per cent; technical "
        "quality and durability of the devices, weighting 30 per cent; warranty and service "
        "levels, weighting 15 per cent."
    ),
    review_body="High Court of Justice, Technology and Construction Court, London",
    dispatch="9 March 2027",
)

CLEANING = TenderSpec(
    title="Cleaning Services for Administrative Buildings of Lakeside County",
    contract_type="Services",
    authority="Lakeside County Administrative Board",
    address="Storgatan 41, 852 30 Lakeside",
    contact_point="Procurement Office, attention of Ms Karin Lindqvist",
    email="upphandling@lakeside-county.example",
    phone="+46 60 19 43 00",
    website="https://www.lakeside-county.example/upphandling",
    reference="LCAB-2027-0412",
    deadline=datetime(2027, 5, 31, 23, 59, tzinfo=CEST),
    deadline_text="2027-05-31 23:59 (UTC+02:00)",
    opening_text="2027-06-01 09:00 (UTC+02:00)",
    currency="SEK",
    money_style="se",
    cpv=(
        ("90911200-8", "Building-cleaning services"),
        ("90919200-4", "Office cleaning services"),
        ("90911300-9", "Window-cleaning services"),
    ),
    place="Administrative buildings of Lakeside County",
    nuts="SE321",
    description=(
        "Lakeside County Administrative Board invites tenders for daily cleaning, periodic "
        "deep cleaning and window cleaning of its administrative buildings, with a total "
        "floor area of approximately 38,000 square metres. The services include the supply "
        "of cleaning materials and consumables, waste sorting at the workplaces and the "
        "cleaning of meeting rooms after events outside normal office hours.",
        "Cleaning shall be performed with eco-labelled products and microfibre methods. The "
        "contractor shall appoint a contract manager who speaks Swedish or English and who "
        "attends monthly quality meetings with the Board.",
    ),
    lots=(
        LotSpec(
            1,
            "Daily cleaning of office premises in Lakeside city centre",
            Decimal("3120000.00"),
            "Daily cleaning of the main administrative building and the archive building in "
            "the city centre, approximately 24,000 square metres.",
        ),
        LotSpec(
            2,
            "Window cleaning and periodic deep cleaning",
            Decimal("1040000.00"),
            "Window cleaning four times a year and deep cleaning of floors, carpets and "
            "kitchens twice a year in all buildings covered by the contract.",
        ),
        LotSpec(
            3,
            "Cleaning of regional service centres",
            Decimal("700000.00"),
            "Daily cleaning of five regional service centres located outside the city, "
            "including the reception areas open to the public.",
        ),
    ),
    lot_rule="Tenders may be submitted for a maximum of two lots.",
    duration="24 months with an option to extend twice by 12 months",
    turnover=Decimal("6000000.00"),
    ability=(
        "Tenderers shall hold a certified quality management system and an environmental "
        "management system, or equivalent, and shall have performed at least two comparable "
        "cleaning contracts for office buildings of more than 10,000 square metres in the "
        "last three years."
    ),
    criteria=(
        "The lowest price will be the sole award criterion, provided that all mandatory "
        "requirements of the specification are fulfilled. The price is evaluated as the "
        "total annual price for the services described in the price schedule."
    ),
    review_body="Administrative Court of Lakeside, Box 123, 851 04 Lakeside",
    dispatch="2027-04-19",
    annex=(
        (
            "Service levels",
            "Offices, corridors and sanitary facilities shall be cleaned every working day "
            "between 06:00 and 08:30 or between 16:30 and 20:00. Meeting rooms shall be ready "
            "for use within one hour of a call-off. Quality is measured by joint inspections "
            "according to the method described in Annex C; two failed inspections in a row "
            "give rise to a price reduction.",
        ),
        (
            "Staff and working conditions",
            "The contractor shall ensure that its staff and the staff of its subcontractors "
            "receive at least the wages and working conditions of the applicable collective "
            "agreement for the cleaning sector. All staff working in the buildings shall carry "
            "a visible identity card and shall have completed training in safe handling of "
            "chemicals and in the security rules of the Board.",
        ),
        (
            "Environmental requirements",
            "Vehicles used for the transport of staff and materials between the buildings "
            "shall meet at least the Euro 6 emission standard. The contractor shall report the "
            "quantities of cleaning chemicals and consumables used each quarter, broken down by "
            "building, and shall propose measures to reduce them during the contract.",
        ),
        (
            "Transfer of the service",
            "The current contract expires on 30 September 2027. The new contractor shall take "
            "over the services on 1 October 2027 after a transition period of four weeks, "
            "during which it shall visit all premises together with the Board and the current "
            "contractor.",
        ),
    ),
)

LIGHTING = TenderSpec(
    title="Replacement of Street Lighting with LED Luminaires",
    contract_type="Works",
    authority="Municipality of Ravensdorf",
    address="Rathausplatz 1, 85221 Ravensdorf",
    contact_point="Central Procurement Office, attention of Mr Jonas Weber",
    email="vergabe@ravensdorf.example",
    phone="+49 8131 5500 240",
    website="https://www.ravensdorf.example/vergabe",
    reference="RAV-VG-27-0087",
    deadline=datetime(2027, 6, 30, 11, 0, tzinfo=CEST),
    deadline_text="30.06.2027, 11:00 (CEST)",
    opening_text="30.06.2027, 11:30 (CEST), not public",
    currency="EUR",
    money_style="de",
    cpv=(
        ("45316110-9", "Installation of road lighting equipment"),
        ("34993000-4", "Road lights"),
        ("50232100-1", "Street-lighting maintenance services"),
    ),
    place="Municipal territory of Ravensdorf",
    nuts="DE217",
    description=(
        "The Municipality of Ravensdorf intends to replace approximately 4,600 conventional "
        "street lights with energy-efficient LED luminaires, including the dismantling and "
        "disposal of the existing lamp heads, the supply and installation of new luminaires "
        "with a remote dimming interface and the update of the lighting register.",
        "The works shall be carried out street by street according to a schedule agreed "
        "with the municipal building authority. The contractor shall guarantee that no "
        "street remains unlit for more than one night during the conversion.",
    ),
    lots=(
        LotSpec(
            1,
            "Supply and installation of LED luminaires",
            Decimal("1980000.00"),
            "Supply, installation and commissioning of LED luminaires and control modules, "
            "including the dismantling of the existing lamp heads.",
        ),
        LotSpec(
            2,
            "Maintenance and monitoring for five years",
            Decimal("500000.00"),
            "Preventive and corrective maintenance of the converted installations and "
            "operation of the remote monitoring system for a period of five years.",
        ),
    ),
    lot_rule="Tenders may be submitted for one or both lots.",
    duration="Lot 1: 18 months; Lot 2: 60 months",
    turnover=Decimal("1500000.00"),
    ability=(
        "Tenderers shall be registered as qualified electrical installation companies and "
        "shall provide at least three references for street lighting conversion projects "
        "with more than 1,000 luminaires each in the last five years."
    ),
    criteria=(
        "Award is made to the most economically advantageous tender: price, weighting 70 "
        "per cent; energy efficiency of the offered luminaires, weighting 20 per cent; "
        "warranty period beyond the statutory minimum, weighting 10 per cent."
    ),
    review_body="Public Procurement Review Chamber of Southern Bavaria, Munich",
    dispatch="24.05.2027",
)

FIRE_STATION = TenderSpec(
    title="Architectural and Engineering Design Services for a New Fire Station",
    contract_type="Services",
    authority="Harbourside County Council",
    address="County Buildings, Quay Street, Harbourside H91 XK72",
    contact_point="Capital Projects Office, attention of Mr Liam Gallagher",
    email="capitalprojects@harbourside-coco.example",
    phone="+353 91 509 600",
    website="https://www.harbourside-coco.example/tenders",
    reference="HCC/CAP/2027/118",
    deadline=datetime(2027, 9, 10, 14, 0, tzinfo=UTC),
    deadline_text="2027-09-10T14:00:00Z",
    opening_text="2027-09-10T15:00:00Z",
    currency="EUR",
    money_style="en",
    cpv=(
        ("71200000-0", "Architectural and related services"),
        ("71320000-7", "Engineering design services"),
        ("71240000-2", "Architectural, engineering and planning services"),
    ),
    place="Site of the former cattle market, Harbourside",
    nuts="IE042",
    description=(
        "Harbourside County Council requires an integrated design team to design a new "
        "four-bay fire station with training tower, dormitories and a community education "
        "room. The services cover all stages from the feasibility review to the completion "
        "of the works, including the preparation of tender documents for the construction "
        "contract and the supervision of the works on site.",
        "The building shall achieve a nearly zero-energy standard and a minimum BER rating "
        "of A2. The design team shall consult the Chief Fire Officer and the local "
        "community during the design stages.",
    ),
    lots=(
        LotSpec(
            1,
            "Architectural design and planning permission",
            Decimal("385000.00"),
            "Architectural design, landscape design, planning application and conservation "
            "advice for the listed market wall on the site.",
        ),
        LotSpec(
            2,
            "Structural and building services engineering",
            Decimal("265000.00"),
            "Civil and structural engineering, mechanical and electrical building services "
            "engineering and energy modelling.",
        ),
    ),
    lot_rule="Tenders may be submitted for all lots.",
    duration="54 months, subject to the progress of the construction contract",
    turnover=Decimal("500000.00"),
    ability=(
        "The lead designer shall be a registered architect with at least ten years of "
        "post-qualification experience and shall have designed at least one emergency "
        "services building or comparable operational building in the last eight years."
    ),
    criteria=(
        "The contract will be awarded to the most economically advantageous tender: quality "
        "of the proposed team and methodology, weighting 60 per cent; price, weighting 40 "
        "per cent. A minimum quality score of 50 per cent is required."
    ),
    review_body="The High Court, Four Courts, Inns Quay, Dublin 7",
    dispatch="2027-07-26",
    annex=(
        (
            "Stage 1: Feasibility review and brief",
            "Review of the site surveys, the operational brief prepared by the fire service and "
            "the cost plan; preparation of an options report for the layout of the appliance "
            "bays, the drill yard and the training tower.",
        ),
        (
            "Stage 2: Concept and developed design",
            "Preparation of the concept design, pre-planning consultation with the planning "
            "authority and the preparation of the developed design with an updated cost plan. "
            "The Council will review the design at the end of each stage before instructing the "
            "next stage.",
        ),
        (
            "Stage 3: Planning, fire safety and disability access certificates",
            "Preparation and submission of the planning application, the fire safety "
            "certificate application and the disability access certificate application, and "
            "responses to any requests for further information.",
        ),
        (
            "Stage 4: Tender documents for the works",
            "Preparation of the detailed design, specifications and bills of quantities for "
            "the construction contract, assistance with the tender evaluation and with the "
            "award of the works contract.",
        ),
        (
            "Stage 5: Construction and handover",
            "Inspection of the works, certification of payments, management of variations and "
            "the preparation of the safety file and the operation and maintenance manuals. The "
            "design team shall remain available during the twelve-month defects period.",
        ),
    ),
)


# --------------------------------------------------------------------------------------------
# Layout: a notice becomes pages of positioned text runs, plus the text of each visual line
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    text: str
    font: FontName
    size: float
    x: float
    y: float
    gray: float = 0.0


@dataclass
class Page:
    runs: list[Run] = field(default_factory=list)
    rules: list[tuple[float, float, float, float]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "\n".join(self.lines)


BODY = 10.0
LEAD = 13.6


class Layout:
    def __init__(self, spec: TenderSpec) -> None:
        self.spec = spec
        self.pages: list[Page] = []
        self.y = 0.0
        self._new_page()

    def _new_page(self) -> None:
        page = Page()
        header = f"{self.spec.authority} - Contract notice {self.spec.reference}"
        page.runs.append(Run(header, "F1", 8.0, MARGIN_L, 800.0, 0.35))
        page.lines.append(header)
        page.rules.append((MARGIN_L, 794.0, PAGE_W - MARGIN_R, 794.0))
        self.pages.append(page)
        self.y = TOP_Y

    @property
    def page(self) -> Page:
        return self.pages[-1]

    def _ensure(self, height: float) -> None:
        if self.y - height < BOTTOM_Y:
            self._new_page()

    def line(self, runs: Sequence[Run]) -> None:
        self.page.runs.extend(runs)
        self.page.lines.append(" ".join(run.text for run in runs))

    def space(self, points: float) -> None:
        if self.y < TOP_Y:
            self.y -= points

    def paragraph(
        self, text: str, font: FontName = "F1", size: float = BODY, lead: float = LEAD
    ) -> None:
        for chunk in wrap(text, font, size, TEXT_W):
            self._ensure(lead)
            self.y -= lead
            self.line([Run(chunk, font, size, MARGIN_L, self.y)])
        self.space(5.0)

    def heading(self, text: str) -> None:
        self.space(6.0)
        self._ensure(16.0 + 3 * LEAD)  # keep a heading with the start of its section
        self.y -= 16.0
        self.line([Run(text, "F2", 11.0, MARGIN_L, self.y)])
        self.y -= 3.0

    def subheading(self, text: str) -> None:
        self._ensure(2 * LEAD)
        self.y -= LEAD
        self.line([Run(text, "F2", BODY, MARGIN_L, self.y)])

    def labelled(self, label: str, *values: str) -> None:
        """A bold label and its value(s) on the same baseline; each value wraps under itself."""
        indent = text_width(label + " ", "F2", BODY)
        first = True
        for value in values:
            for chunk in wrap(value, "F1", BODY, TEXT_W - indent):
                self._ensure(LEAD)
                self.y -= LEAD
                value_run = Run(chunk, "F1", BODY, MARGIN_L + indent, self.y)
                if first:
                    self.line([Run(label, "F2", BODY, MARGIN_L, self.y), value_run])
                    first = False
                else:
                    self.line([value_run])
        self.y -= 2.0

    def lot_table(self) -> None:
        spec = self.spec
        col_no, col_title = MARGIN_L + 4.0, MARGIN_L + 44.0
        right = PAGE_W - MARGIN_R - 4.0
        title_w = 290.0
        rows_h = sum(len(wrap(x.title, "F1", BODY, title_w)) for x in spec.lots) * LEAD
        self._ensure(2 * LEAD + rows_h + 12.0)
        self.y -= 6.0
        self.page.rules.append((MARGIN_L, self.y, PAGE_W - MARGIN_R, self.y))
        self.y -= LEAD
        head_value = "Estimated value (excl. VAT)"
        self.line(
            [
                Run("Lot", "F2", BODY, col_no, self.y),
                Run("Title", "F2", BODY, col_title, self.y),
                Run(head_value, "F2", BODY, right - text_width(head_value, "F2", BODY), self.y),
            ]
        )
        self.y -= 5.0
        self.page.rules.append((MARGIN_L, self.y, PAGE_W - MARGIN_R, self.y))
        for lot in spec.lots:
            value = spec.fmt(lot.value)
            for i, chunk in enumerate(wrap(lot.title, "F1", BODY, title_w)):
                self.y -= LEAD
                runs = [Run(chunk, "F1", BODY, col_title, self.y)]
                if i == 0:
                    runs.insert(0, Run(str(lot.number), "F1", BODY, col_no, self.y))
                    x_value = right - text_width(value, "F1", BODY)
                    runs.append(Run(value, "F1", BODY, x_value, self.y))
                self.line(runs)
            self.y -= 4.0
            self.page.rules.append((MARGIN_L, self.y, PAGE_W - MARGIN_R, self.y))
        self.y -= 6.0

    def finish(self) -> list[Page]:
        total = len(self.pages)
        for number, page in enumerate(self.pages, start=1):
            footer = f"Page {number} of {total}"
            x = PAGE_W - MARGIN_R - text_width(footer, "F1", 8.0)
            page.rules.append((MARGIN_L, 56.0, PAGE_W - MARGIN_R, 56.0))
            page.runs.append(Run(footer, "F1", 8.0, x, 44.0, 0.35))
            page.lines.append(footer)
        return self.pages


def lay_out(spec: TenderSpec) -> list[Page]:
    doc = Layout(spec)
    cpv_main, *cpv_more = spec.cpv
    doc.y -= 12.0
    doc.line([Run("CONTRACT NOTICE", "F2", 9.0, MARGIN_L, doc.y, 0.35)])
    doc.y -= 13.0
    doc.line([Run(f"Open procedure - {spec.contract_type}", "F1", 9.0, MARGIN_L, doc.y, 0.35)])
    doc.y -= 6.0
    for chunk in wrap(spec.title, "F2", 16.0, TEXT_W):
        doc.y -= 20.0
        doc.line([Run(chunk, "F2", 16.0, MARGIN_L, doc.y)])
    doc.y -= 16.0
    doc.line([Run(spec.authority, "F1", 11.0, MARGIN_L, doc.y)])
    doc.y -= 4.0

    doc.heading("Section I: Contracting authority")
    doc.labelled("Official name:", spec.authority)
    doc.labelled("Postal address:", spec.address)
    doc.labelled("Contact point:", spec.contact_point)
    doc.labelled("E-mail:", spec.email)
    doc.labelled("Telephone:", spec.phone)
    doc.labelled("Internet address:", spec.website)
    doc.space(4.0)
    doc.paragraph(
        "The procurement documents are available for unrestricted and full direct access, free "
        "of charge, at the internet address above. Tenders must be submitted electronically "
        "through the e-procurement portal indicated in the procurement documents; tenders "
        "sent by post or by e-mail will not be accepted."
    )

    doc.heading("Section II: Object")
    doc.labelled("Title:", spec.title)
    doc.labelled("Reference number:", spec.reference)
    doc.labelled("Main CPV code:", f"{cpv_main[0]} {cpv_main[1]}")
    doc.labelled("Additional CPV codes:", *(f"{code} {label}" for code, label in cpv_more))
    doc.labelled("Type of contract:", spec.contract_type)
    doc.labelled("Place of performance:", f"{spec.place} (NUTS code {spec.nuts})")
    doc.subheading("Short description")
    for text in spec.description:
        doc.paragraph(text)
    doc.labelled("Estimated total value (excluding VAT):", spec.fmt(spec.value))
    doc.labelled("Division into lots:", f"Yes. {spec.lot_rule}")
    doc.lot_table()
    for lot in spec.lots:
        doc.subheading(f"Lot {lot.number}: {lot.title}")
        doc.paragraph(lot.description)
    doc.labelled("Duration of the contract:", spec.duration)
    doc.labelled("Variants:", "Variants will not be accepted.")

    doc.heading("Section III: Legal, economic, financial and technical information")
    doc.subheading("Exclusion grounds and conditions for participation")
    doc.paragraph(
        "Tenderers shall confirm by means of the European Single Procurement Document that "
        "none of the mandatory or discretionary exclusion grounds applies to them, and shall "
        "be enrolled in the relevant professional or trade register of the country in which "
        "they are established. Groups of economic operators may submit a joint tender; the "
        "members of the group will be jointly and severally liable for the performance of "
        "the contract."
    )
    doc.subheading("Economic and financial standing")
    doc.paragraph(
        "Minimum average annual turnover of "
        f"{spec.fmt(spec.turnover)} in the last three financial years, and professional "
        "liability insurance appropriate to the nature of the contract."
    )
    doc.subheading("Technical and professional ability")
    doc.paragraph(spec.ability)

    doc.heading("Section IV: Procedure")
    doc.labelled("Type of procedure:", "Open procedure")
    doc.subheading("Award criteria")
    doc.paragraph(spec.criteria)
    doc.labelled("Time limit for receipt of tenders:", spec.deadline_text)
    doc.labelled("Languages in which tenders may be submitted:", "English")
    doc.labelled("Tender validity:", "The tender must remain valid for 6 months.")
    doc.labelled("Opening of tenders:", spec.opening_text)

    doc.heading("Section V: Complementary information")
    doc.paragraph(
        "Requests for clarification must be submitted through the e-procurement portal no "
        "later than ten days before the time limit for receipt of tenders. Answers will be "
        "published anonymously to all interested economic operators. The contracting "
        "authority reserves the right not to award the contract. Questions about this "
        f"notice may be sent to {spec.email}, quoting the reference {spec.reference}."
    )
    for text in spec.extra_info:
        doc.paragraph(text)
    doc.labelled("Review body:", spec.review_body)
    doc.labelled("Date of dispatch of this notice:", spec.dispatch)
    if spec.annex:
        doc.heading("Annex A: Further details of the requirements")
        for subheading, text in spec.annex:
            doc.subheading(subheading)
            doc.paragraph(text)
    return doc.finish()


# --------------------------------------------------------------------------------------------
# A minimal PDF writer: catalog, page tree, base-14 fonts, text or image pages, xref table
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScanImage:
    """An already encoded page image: JPEG (DCTDecode) or packed 1-bit rows (FlateDecode)."""

    data: bytes
    width: int
    height: int
    bits: int  # 8 for grayscale JPEG, 1 for bilevel
    filter: Literal["DCTDecode", "FlateDecode"]


def _pdf_string(text: str) -> bytes:
    raw = text.encode("cp1252")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def _text_content(page: Page) -> bytes:
    ops: list[str] = []
    if page.rules:
        ops.append("q 0.5 G 0.5 w")
        ops.extend(f"{x1:.2f} {y1:.2f} m {x2:.2f} {y2:.2f} l S" for x1, y1, x2, y2 in page.rules)
        ops.append("Q")
    out = "\n".join(ops).encode("ascii") + b"\n"
    for run in page.runs:
        head = f"BT /{run.font} {run.size:g} Tf {run.gray:g} g 1 0 0 1 {run.x:.2f} {run.y:.2f} Tm "
        out += head.encode("ascii") + _pdf_string(run.text) + b" Tj ET\n"
    return out


class PdfWriter:
    def __init__(self) -> None:
        self.objects: list[bytes] = []

    def add(self, body: bytes) -> int:
        self.objects.append(body)
        return len(self.objects)

    def reserve(self) -> int:
        return self.add(b"null")

    def put(self, number: int, body: bytes) -> None:
        self.objects[number - 1] = body

    def add_stream(self, entries: str, data: bytes) -> int:
        head = f"<< {entries} /Length {len(data)} >>\nstream\n".encode("ascii")
        return self.add(head + data + b"\nendstream")

    def serialize(self, root: int, info: int) -> bytes:
        out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
        offsets = []
        for number, body in enumerate(self.objects, start=1):
            offsets.append(len(out))
            out += f"{number} 0 obj\n".encode("ascii") + body + b"\nendobj\n"
        file_id = hashlib.md5(bytes(out)).hexdigest()
        xref_at = len(out)
        out += f"xref\n0 {len(self.objects) + 1}\n0000000000 65535 f \n".encode("ascii")
        out += b"".join(f"{offset:010d} 00000 n \n".encode("ascii") for offset in offsets)
        out += (
            f"trailer\n<< /Size {len(self.objects) + 1} /Root {root} 0 R /Info {info} 0 R "
            f"/ID [<{file_id}> <{file_id}>] >>\nstartxref\n{xref_at}\n%%EOF\n"
        ).encode("ascii")
        return bytes(out)


def write_pdf(pages: Sequence[Page | ScanImage], title: str) -> bytes:
    pdf = PdfWriter()
    catalog = pdf.reserve()
    tree = pdf.reserve()
    helv = pdf.add(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    )
    bold = pdf.add(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>"
    )
    info = pdf.add(
        b"<< /Title "
        + _pdf_string(title)
        + b" /Producer (pg-pipeline sample_docs/make_samples.py)"
        + b" /CreationDate (D:20270101090000+01'00') >>"
    )
    kids = []
    for item in pages:
        if isinstance(item, Page):
            content = pdf.add_stream("/Filter /FlateDecode", zlib.compress(_text_content(item), 9))
            resources = f"<< /Font << /F1 {helv} 0 R /F2 {bold} 0 R >> >>"
        else:
            image = pdf.add_stream(
                f"/Type /XObject /Subtype /Image /Width {item.width} /Height {item.height} "
                f"/ColorSpace /DeviceGray /BitsPerComponent {item.bits} /Filter /{item.filter}",
                item.data,
            )
            draw = f"q {PAGE_W:.2f} 0 0 {PAGE_H:.2f} 0 0 cm /Im0 Do Q\n".encode("ascii")
            content = pdf.add_stream("", draw)
            resources = f"<< /XObject << /Im0 {image} 0 R >> >>"
        kids.append(
            pdf.add(
                (
                    f"<< /Type /Page /Parent {tree} 0 R /MediaBox [0 0 {PAGE_W:.2f} {PAGE_H:.2f}] "
                    f"/Resources {resources} /Contents {content} 0 R >>"
                ).encode("ascii")
            )
        )
    kid_refs = " ".join(f"{kid} 0 R" for kid in kids)
    pdf.put(tree, f"<< /Type /Pages /Kids [{kid_refs}] /Count {len(kids)} >>".encode("ascii"))
    pdf.put(catalog, f"<< /Type /Catalog /Pages {tree} 0 R >>".encode("ascii"))
    return pdf.serialize(catalog, info)


# --------------------------------------------------------------------------------------------
# Scanning: render the born-digital pages and degrade them
# --------------------------------------------------------------------------------------------


def render_gray(pdf_bytes: bytes, dpi: int) -> list[Image.Image]:
    doc = pdfium.PdfDocument(pdf_bytes)
    images: list[Image.Image] = []
    try:
        for index in range(len(doc)):
            page = doc[index]
            bitmap = page.render(scale=dpi / 72.0, grayscale=True)
            image: Image.Image = bitmap.to_pil().convert("L")
            images.append(image)
            bitmap.close()
            page.close()
    finally:
        doc.close()
    return images


def noise(size: tuple[int, int], rng: random.Random, cell: int = 1) -> Image.Image:
    """Uniform noise in 0..255; with cell > 1 it is drawn coarse and enlarged (blotches)."""
    width, height = size
    small = (-(-width // cell), -(-height // cell))
    image = Image.frombytes("L", small, rng.randbytes(small[0] * small[1]))
    if cell == 1:
        return image
    return image.resize(size, Image.Resampling.BILINEAR)


def specks(image: Image.Image, rng: random.Random, count: int, radius: float) -> Image.Image:
    """Dust on the glass: count dark dots of up to radius pixels at random places."""
    image = image.copy()
    draw = ImageDraw.Draw(image)
    for _ in range(count):
        x, y = rng.uniform(0, image.width), rng.uniform(0, image.height)
        r = rng.uniform(0.5, radius)
        draw.ellipse((x - r, y - r, x + r, y + r), fill=rng.randrange(20, 90))
    return image


def levels(image: Image.Image, black: int, white: int) -> Image.Image:
    """Map 0..255 onto black..white: grey paper, not quite black toner."""
    return image.point([black + (white - black) * v // 255 for v in range(256)])


def jpeg(image: Image.Image, quality: int, dpi: int) -> ScanImage:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality, dpi=(dpi, dpi))
    return ScanImage(buffer.getvalue(), image.width, image.height, 8, "DCTDecode")


def scan_gray(image: Image.Image, rng: random.Random, dpi: int) -> ScanImage:
    image = levels(image, 22, 242)
    image = Image.blend(image, noise(image.size, rng, 24), 0.04)
    image = Image.blend(image, noise(image.size, rng), 0.05)
    return jpeg(image, 55, dpi)


def scan_bilevel(image: Image.Image, rng: random.Random) -> ScanImage:
    image = Image.blend(image, noise(image.size, rng), 0.16)
    image = specks(image, rng, 300, 2.2)
    bilevel = image.point([255 if v > 150 else 0 for v in range(256)], "1")
    data = zlib.compress(bilevel.tobytes(), 9)  # PIL packs 1 = white, as DeviceGray reads it
    return ScanImage(data, bilevel.width, bilevel.height, 1, "FlateDecode")


def scan_poor(image: Image.Image, rng: random.Random, dpi: int) -> ScanImage:
    width, height = image.size
    image = levels(image, 48, 236)
    # Uneven lighting: the paper darkens towards one edge, as if lifted off the glass.
    shade = Image.linear_gradient("L").rotate(90).resize((width, height))
    shade = shade.point([255 - 42 * v // 255 for v in range(256)])
    image = ImageChops.multiply(image, shade)
    angle = rng.choice((-1.0, 1.0)) * rng.uniform(1.1, 1.9)
    image = image.rotate(angle, resample=Image.Resampling.BICUBIC, fillcolor=214)
    image = image.filter(ImageFilter.GaussianBlur(0.75))
    image = Image.blend(image, noise(image.size, rng, 16), 0.07)
    image = Image.blend(image, noise(image.size, rng), 0.07)
    image = specks(image, rng, 350, 1.6)
    return jpeg(image, 40, dpi)


# --------------------------------------------------------------------------------------------
# Samples
# --------------------------------------------------------------------------------------------


def save(name: str, spec: TenderSpec, pages: list[Page], pdf_bytes: bytes) -> None:
    (OUT_DIR / name).write_bytes(pdf_bytes)
    truth = {
        "pages": [page.text() for page in pages],
        "fields": spec.fields().model_dump(mode="json"),
    }
    TRUTH_DIR.mkdir(exist_ok=True)
    text = json.dumps(truth, indent=2, ensure_ascii=False) + "\n"
    (TRUTH_DIR / name.replace(".pdf", ".json")).write_text(text, encoding="utf-8")
    print(f"{name}: {len(pages)} pages, {len(pdf_bytes) / 1024:.0f} KiB")


def main() -> None:
    for spec in (ROADS, LAPTOPS, CLEANING, LIGHTING, FIRE_STATION):
        spec.fields()  # validates CPV check digits and the field model before drawing anything

    pages = lay_out(ROADS)
    save("tender.pdf", ROADS, pages, write_pdf(pages, ROADS.title))

    pages = lay_out(LAPTOPS)
    rng = random.Random(200)
    born = write_pdf(pages, LAPTOPS.title)
    scans = [scan_gray(image, rng, 200) for image in render_gray(born, 200)]
    save("scanned_gray_200dpi.pdf", LAPTOPS, pages, write_pdf(scans, LAPTOPS.title))

    pages = lay_out(CLEANING)
    rng = random.Random(300)
    born = write_pdf(pages, CLEANING.title)
    bilevel = [scan_bilevel(image, rng) for image in render_gray(born, 300)]
    save("scanned_1bit_300dpi.pdf", CLEANING, pages, write_pdf(bilevel, CLEANING.title))

    pages = lay_out(LIGHTING)
    rng = random.Random(150)
    born = write_pdf(pages, LIGHTING.title)
    poor = [scan_poor(image, rng, 150) for image in render_gray(born, 150)]
    save("scanned_poor_150dpi_skewed.pdf", LIGHTING, pages, write_pdf(poor, LIGHTING.title))

    # Mixed: page 1 keeps its text layer, the following pages arrive as 200 dpi scans.
    pages = lay_out(FIRE_STATION)
    rng = random.Random(201)
    born = write_pdf(pages, FIRE_STATION.title)
    later = [scan_gray(image, rng, 200) for image in render_gray(born, 200)[1:]]
    mixed: list[Page | ScanImage] = [pages[0], *later]
    save("mixed.pdf", FIRE_STATION, pages, write_pdf(mixed, FIRE_STATION.title))


if __name__ == "__main__":
    main()
