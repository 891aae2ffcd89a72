"""Lots: headers, blocks and ruled tables of lots with their titles and values."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from pg_pipeline_documents.extract_offline.amounts import _amount_after_label, _amounts, _label_part
from pg_pipeline_documents.extract_offline.concepts import label_field, split_label
from pg_pipeline_documents.extract_offline.labels import (
    _DEADLINE_GENERIC,
    _INLINE_LOT_NO,
    _LOT_BLOCK_END,
    _LOT_HEADER,
    _LOT_HEADER_NO_NUMBER,
    _LOT_TABLE_HEADER,
    _LOT_TABLE_ROW,
    _LOT_TITLE_LINE,
    _NOT_VALUE,
    _NUMBERING,
    _TITLE_TAIL,
    _TOTAL_VALUE_LABELS,
    _VALUE_LABELS,
)
from pg_pipeline_documents.extract_offline.lines import _continue_value
from pg_pipeline_documents.extract_offline.normalise import _clean_text_value, _fix_digit_o, _words

#: Lot headers read at most: notices have tens of lots, rarely hundreds; a text with thousands of
#: lines that look like lot headers is not one, and the rules stay fast on it.
MAX_LOT_HEADERS = 500


@dataclass
class _LotDraft:
    number: int
    title: str | None
    value: Decimal | None
    lines: set[int]


def _split_title_and_amount(rest: str) -> tuple[str | None, Decimal | None]:
    rest = _fix_digit_o(rest)
    found = _amounts(rest)
    money = [a for a in found if a.currency is not None or a.value >= 1000]
    if not money:
        title = re.split(r"\s+\bCPV\b|\s{2,}", rest)[0]
        return _clean_text_value(title.strip(" -:.")), None
    # A speck of OCR noise next to a currency code ("- 7 SEK 700 000,00") reads as a tiny
    # amount; a contract's value is not that small when a real one follows.
    amount = next((a for a in money if a.value >= 1000), money[0])
    prefix = rest[: amount.start]
    tail = _TITLE_TAIL.search(prefix)
    title = prefix[: tail.start()] if tail else prefix
    return _clean_text_value(title.strip(" -:.(")), amount.value


def _same_title(a: str, b: str, *, strict: bool = False) -> bool:
    """Equal word for word, or one a prefix of the other (OCR junk trailing a table cell).

    ``strict`` allows only a short speck of noise after the common prefix ("... years in").
    """
    wa, wb = _words(a), _words(b)
    if not wa or not wb:
        return False
    short, long_ = sorted((wa, wb), key=len)
    if long_ == short:
        return True
    if not long_.startswith(short + " ") or len(short.split()) < 2:
        return False
    tail = long_[len(short) :].split()
    return not strict or (len(tail) <= 2 and all(len(t) <= 3 for t in tail))


def _agreed_title(first: str | None, second: str | None) -> str | None:
    """Two copies of a lot title (heading and table row): drop noise only one of them has."""
    if first and second and _same_title(first, second, strict=True):
        return min(first, second, key=lambda t: len(_words(t)))
    return first or second


def _merge_table(lines: Sequence[str], header: int, drafts: dict[int, _LotDraft]) -> set[int]:
    """Read the rows under a lot table header into ``drafts``; returns the lines used.

    OCR often loses a lone lot number in the first column. A row without one is matched to a
    lot already known by its title, else numbered from its neighbours in the table.
    """
    rows: list[tuple[int, int | None, str, Decimal | None]] = []
    skipped = 0
    for j in range(header + 1, min(header + 40, len(lines))):
        row = lines[j].replace("|", " ")
        if not re.search(r"[A-Za-z0-9]", row):
            continue
        m = _LOT_TABLE_ROW.match(row)
        title, value = _split_title_and_amount(m.group("rest")) if m else (None, None)
        num = int(m.group("num")) if m and m.group("num") else None
        if m is None or title is None or (value is None and num is None):
            if not rows and skipped < 2:  # a wrapped header cell before the first row
                skipped += 1
                continue
            break
        rows.append((j, num, title, value))
    numbers: list[int | None] = []
    for _j, num, title, _value in rows:
        known = [n for n, d in drafts.items() if d.title and _same_title(d.title, title)]
        numbers.append(known[0] if len(known) == 1 else num)
    for _ in range(2):  # fill gaps from neighbours: 1, ?, 3 -> 2; ?, 2 -> 1
        for k, n in enumerate(numbers):
            if n is not None:
                continue
            before = numbers[k - 1] if k > 0 else None
            after = numbers[k + 1] if k + 1 < len(numbers) else None
            if before is not None:
                numbers[k] = before + 1
            elif after is not None and after > 1:
                numbers[k] = after - 1
    used = {header}
    for (j, _num, title, value), n in zip(rows, numbers, strict=True):
        used.add(j)
        if n is None or n < 1:
            continue
        if n not in drafts:
            drafts[n] = _LotDraft(n, title, value, {header, j})
        else:
            d = drafts[n]
            d.title = _agreed_title(d.title, title)
            d.value = d.value if d.value is not None else value
            d.lines |= {header, j}
    return used


def _after_nonempty(lines: Sequence[str], i: int, count: int) -> int:
    """The index ``count`` non-empty lines after ``i`` (OCR's blank lines do not count)."""
    seen = 0
    for j in range(i + 1, len(lines)):
        seen += bool(lines[j])
        if seen == count:
            return j + 1
    return len(lines)


def _root_value_label(line: str) -> int | None:
    """Where the amount starts after a value label known by its roots ("Estimation du lot",
    "Schätzwert"), or None when the line opens with no such label."""
    split = split_label(line)
    if split is None or label_field(split.label) != "value":
        return None
    return len(line) - len(split.value) if split.value else len(line)


_LOT_COLUMN = re.compile(r"^\W*(?:lot|los|n[°o]\.?|nr\.?|#)(?:[\s.-]*(?:no|nr|n[°o])\.?)?\s", re.I)


def _root_table_header(line: str) -> bool:
    """A lot table's header row in words the phrase patterns lack: "Los-Nr. Leistung
    Schätzwert" opens with a lot column and has a title or value column named by its roots."""
    m = _LOT_COLUMN.match(line)
    if m is None or re.search(r"\d", line) or len(line.split()) > 7 or line.endswith("."):
        return False
    fields = {label_field(word) for word in line[m.end() :].replace("|", " ").split()}
    return bool(fields & {"title", "value"})


def _lots(lines: Sequence[str]) -> tuple[list[_LotDraft], set[int]]:
    """Lots with the line indexes they occupy (so that global fields can skip them)."""
    found: list[tuple[int, int | None, str]] = []
    for i, line in enumerate(lines):
        if len(found) >= MAX_LOT_HEADERS:
            break
        m = _LOT_HEADER.match(line)
        if m:
            raw = m.group("num")
            num = int(raw) if raw.isdigit() else 1  # "Lot l:", "Lot I:", "Lot't:" misread 1
            if num >= 1:
                found.append((i, num, (m.group("rest") or m.group("bracketed") or "").strip()))
            continue
        bare = _LOT_HEADER_NO_NUMBER.match(line)
        if bare:  # "Lot: Supply of ..." - the number was lost; see below
            found.append((i, None, bare.group("rest").strip()))
            continue
        inline = _INLINE_LOT_NO.search(line)
        if inline and re.match(r"^" + _NUMBERING + r"title\s*:", line, re.I):
            found.append((i, int(inline.group("num")), ""))
    # A header that lost its number sits between numbered ones: "Lot:", "Lot 2:" -> 1.
    headers: list[tuple[int, int, str]] = []
    for k, (i, maybe, rest) in enumerate(found):
        if maybe is None:
            after = found[k + 1][1] if k + 1 < len(found) else None
            before = found[k - 1][1] if k > 0 else None
            maybe = before + 1 if before else (after - 1 if after and after > 1 else None)
            if maybe is None or any(n == maybe for _, n, _ in found):
                continue
        headers.append((i, maybe, rest))

    drafts: dict[int, _LotDraft] = {}
    used: set[int] = set()
    for k, (i, num, rest) in enumerate(headers):
        next_header = headers[k + 1][0] if k + 1 < len(headers) else len(lines)
        block_end = min(next_header, _after_nonempty(lines, i, 15))
        for j in range(i + 1, block_end):
            if _LOT_BLOCK_END.search(lines[j]) or _DEADLINE_GENERIC.search(lines[j]):
                block_end = j
                break
        lot_lines = {i}
        title: str | None = None
        value: Decimal | None = None
        rest = _clean_text_value(rest) or ""
        if rest:
            hit = _continue_value(lines, i, rest, wrap_width=200)
            title, value = _split_title_and_amount(hit.value)
            lot_lines.update(range(i, hit.end + 1))
        else:
            same = _LOT_TITLE_LINE.match(lines[i])
            if same:
                title = _clean_text_value(_INLINE_LOT_NO.sub("", same.group("value")))
            else:
                prev_end = headers[k - 1][0] if k > 0 else -1
                candidates = [j for j in (i - 1, i - 2) if j > prev_end and j >= 0]
                candidates += [j for j in (i + 1, i + 2) if j < block_end]
                for j in candidates:
                    tm = _LOT_TITLE_LINE.match(lines[j])
                    if tm and not (j > i and any(h[0] in (j + 1, j + 2) for h in headers)):
                        title = _clean_text_value(tm.group("value"))
                        lot_lines.add(j)
                        break
        if value is None:
            for j in range(i + 1, block_end):
                m = _VALUE_LABELS.search(lines[j])
                if m and _NOT_VALUE.search(_label_part(lines[j], m.end())):
                    continue  # "Lot value including VAT", "Estimated value of the guarantee"
                got = None
                if m and not _TOTAL_VALUE_LABELS.search(lines[j]):
                    got = _amount_after_label(lines, j, m.end(), None)
                # "Budget for this lot" above its amount: the phrase pattern stops at "Budget",
                # the label known by its roots takes the whole line.
                if got is None and (at := _root_value_label(lines[j])) is not None:
                    got = _amount_after_label(lines, j, at, None)
                if got is not None:
                    value = got[0]
                    lot_lines.add(j)
                    break
        used |= lot_lines
        if title is None and value is None:
            continue
        if num in drafts:
            d = drafts[num]
            d.title = _agreed_title(d.title, title)
            d.value = d.value if d.value is not None else value
            d.lines |= lot_lines
        else:
            drafts[num] = _LotDraft(num, title, value, lot_lines)

    # Tables: "Lot | Title | Estimated value (EUR)" followed by "1 Microscopes 400,000".
    for i, line in enumerate(lines):
        if _LOT_TABLE_HEADER.match(line) or _root_table_header(line):
            used |= _merge_table(lines, i, drafts)
    # A table whose header OCR lost: a row naming a known lot's title, then an amount.
    for d in drafts.values():
        if d.value is not None or not d.title or len(_words(d.title).split()) < 3:
            continue
        for j, line in enumerate(lines):
            row = _LOT_TABLE_ROW.match(line)
            if j in used or _LOT_HEADER.match(line) or row is None:
                continue
            title, value = _split_title_and_amount(row.group("rest"))
            if value is not None and title and _same_title(title, d.title, strict=True):
                d.value = value
                used.add(j)
                break
    return [drafts[n] for n in sorted(drafts)], used
