"""A US city RFP: USD, ``3:00 p.m. Eastern Time``, no CPV, no lots.

``build`` makes the family's notices (``variant`` picks the buyer, title and lot count);
``build_unseen`` its one notice in other wording and layout, written after the rules were
frozen and measured once, to see how the rules carry over to new phrasing.
"""

from __future__ import annotations

import random
from datetime import timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from .layout import Doc
from .values import EN_MONTHS, WEEKDAYS, Spec, en_amount, pick_date

US_BUYERS = [
    ("City of Riverton", "purchasing@rivertonva.example", "Eastern"),
    ("City of Cedar Falls Public Works", "bids@cedarfalls.example", "Central"),
    ("Town of Maple Grove", "procurement@maplegrove.example", "Eastern"),
    ("City of Silver Lake", "rfp@silverlake.example", "Pacific"),
    ("Harbor County Purchasing Division", "purchasing@harborcounty.example", "Eastern"),
]
US_TITLES = [
    "Request for Proposals for Citywide Janitorial Services",
    "Request for Proposals for Parking Enforcement Software",
    "Request for Proposals for Stormwater Master Plan Update",
    "Request for Proposals for Fleet Maintenance Services",
    "Request for Proposals for Website Redesign and Hosting",
]
US_ZONES = {
    "Eastern": "America/New_York",
    "Central": "America/Chicago",
    "Pacific": "America/Los_Angeles",
}


def build(rng: random.Random, variant: int) -> tuple[Spec, Doc]:
    buyer, email, zone = US_BUYERS[variant % len(US_BUYERS)]
    title = US_TITLES[variant % len(US_TITLES)]
    project = title.removeprefix("Request for Proposals for ")
    budget = Decimal(rng.randrange(50, 2000) * 1000)
    deadline = pick_date(rng, (14, 15, 16), (0, 30)).replace(tzinfo=ZoneInfo(US_ZONES[zone]))
    ref = f"RFP No. {rng.randrange(23, 28)}-{rng.randrange(1000, 9999)}"
    has_budget = variant % 2 == 0
    spec = Spec(
        "us",
        project,
        buyer,
        ref.removeprefix("RFP No. "),
        deadline,
        budget.quantize(Decimal("0.01")) if has_budget else None,
        "USD" if has_budget else None,
        [],
        [],
        email,
    )
    doc = Doc(f"{buyer} - {ref}")
    doc.line(buyer.upper(), "F2")
    doc.line("REQUEST FOR PROPOSALS", "F2")
    doc.line(project, "F2")
    doc.line(ref)
    issue = deadline - timedelta(days=28)
    doc.kv("Issue Date:", f"{EN_MONTHS[issue.month - 1]} {issue.day}, {issue.year}")
    doc.line("1. INTRODUCTION", "F2")
    doc.para(
        f'The {buyer} (the "City") is soliciting proposals from qualified firms to provide '
        f"{project.lower()}. Proposers must carry general liability insurance of not less "
        f"than $1,000,000 per occurrence and provide a bid bond of 5% of the proposed "
        f"price."
    )
    if has_budget:
        doc.para(
            f"The City has budgeted an amount not to exceed ${en_amount(budget)} for this contract."
        )
    doc.line("2. SCHEDULE", "F2")
    conf = deadline - timedelta(days=14)
    questions = deadline - timedelta(days=7)
    doc.kv(
        "Pre-proposal conference:",
        f"{EN_MONTHS[conf.month - 1]} {conf.day}, {conf.year} at 10:00 a.m.",
    )
    doc.kv(
        "Deadline for written questions:",
        f"{EN_MONTHS[questions.month - 1]} {questions.day}, {questions.year} at 5:00 p.m.",
    )
    hour12 = deadline.hour - 12 if deadline.hour > 12 else deadline.hour
    due = (
        f"{hour12}:{deadline.minute:02d} p.m. {zone} Time on {WEEKDAYS[deadline.weekday()]}, "
        f"{EN_MONTHS[deadline.month - 1]} {deadline.day}, {deadline.year}"
    )
    doc.kv("Proposals due:", due)
    doc.line("3. SUBMISSION", "F2")
    doc.para(
        f"Proposals must be received no later than {due}. Late proposals will not be "
        "opened. Proposals will be opened publicly the following day at 10:00 a.m."
    )
    doc.para(
        f"All questions shall be directed in writing to the Purchasing Agent at {email}. "
        "Do not reply to system notifications from no-reply@bidportal.example."
    )
    doc.line("4. MINIMUM QUALIFICATIONS", "F2")
    doc.para(
        f"Proposers shall demonstrate annual revenues of at least ${en_amount(budget * 3)} "
        "in each of the last three fiscal years."
    )
    return spec, doc


def build_unseen(rng: random.Random) -> tuple[Spec, Doc]:
    buyer, email = "Oak Hollow Unified School District", "bids@ohusd.example"
    title = "Solar Photovoltaic Systems at Three School Sites"
    deadline = pick_date(rng, (14,), (0,)).replace(tzinfo=ZoneInfo("America/Los_Angeles"))
    ref = f"{rng.randrange(23, 28)}-{rng.randrange(100, 999)}"
    spec = Spec("us", title, buyer, ref, deadline, None, None, [], [], email)
    doc = Doc(f"{buyer} - Invitation for Bids No. {ref}")
    doc.line("INVITATION FOR BIDS", "F2")
    doc.line(f"Bid No. {ref}")
    doc.kv("Project:", title)
    doc.kv("Issued by:", buyer)
    walk = deadline - timedelta(days=12)
    doc.para(
        f"A mandatory job walk will be held on {EN_MONTHS[walk.month - 1]} {walk.day}, "
        f"{walk.year} at 9:00 a.m. Bid security of 10% is required."
    )
    doc.para(
        f"Sealed bids will be received until 2:00 PM Pacific Time, "
        f"{WEEKDAYS[deadline.weekday()]}, {EN_MONTHS[deadline.month - 1]} {deadline.day}, "
        f"{deadline.year}, and then publicly opened and read aloud."
    )
    doc.para(f"Questions: {email}. Plan room support: support@planroom.example.")
    return spec, doc
