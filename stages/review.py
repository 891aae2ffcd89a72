"""Review of uncertain fields: which fields a person should look at, what the reviewer is shown,
and what their answer teaches (labels).

The `review` stage (stages/documents.py) runs after `extract` when review is on for the
document. A field needs review when its evidence's confidence is below its threshold (a value
kept, or a candidate the extractor left out), or when it is required and nothing was read; the
stage then waits (``ctx.wait_for``) for a person's `TenderFields`, which the dashboard's Review
page asks for. Everything here is pure: settings from the environment, and functions of the
extraction and the pages' text.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pg_pipeline import AppError, app_settings, inputs
from pg_pipeline_documents.layout import PageLayout, lines_of
from pg_pipeline_documents.tender import FieldEvidence, TenderExtraction, TenderFields

__all__ = [
    "FIELDS",
    "Label",
    "ReviewSettings",
    "Reviewed",
    "corrections",
    "needs_review",
    "review_detail",
    "review_enabled",
    "review_settings",
    "snippet",
]

REVIEW_ENV = "PIPELINE_REVIEW"  #: on/off for documents whose submitter did not say
THRESHOLD_ENV = "PIPELINE_REVIEW_THRESHOLD"  #: the confidence below which a field is reviewed
THRESHOLDS_ENV = "PIPELINE_REVIEW_THRESHOLDS"  #: per field: `currency=0.5,title=0.9`
REQUIRED_ENV = "PIPELINE_REVIEW_REQUIRED"  #: fields reviewed when missing: `title,reference`
TIMEOUT_ENV = "PIPELINE_REVIEW_TIMEOUT"  #: how long a review may wait: 90s, 15m, 2h, 7d
#: The wait's name: what the dashboard's Review page lists and `pg_pipeline.signal` answers.
WAIT_NAME = "review"

#: Below it a value is asked about. Measured (python -m benchmarks.review_share): the offline
#: rules give 0.7 to many values read by a label's root or heading, right all but once in the
#: corpus; asking below 0.75 instead made 121 of its 193 documents wait to catch one more wrong
#: value than below 0.7 (12 documents). Values under 0.5 are left out as candidates, always asked.
DEFAULT_THRESHOLD = 0.7
DEFAULT_TIMEOUT_S = 7 * 86_400.0
FIELDS = tuple(TenderFields.model_fields)

SNIPPET_LINES = 2  #: lines shown above and below the line a value was read from
SNIPPET_LINE_CHARS = 200  #: characters of each snippet line shown
_ON = {"1", "on", "true", "yes"}
_OFF = {"", "0", "off", "false", "no"}


class ReviewSettings(BaseModel):
    """Which fields a document's review looks at, and for how long it waits.

    Taken from the environment of the worker that extracted the document, and carried in the
    `review` job's payload: the stage decides again from the top when it resumes, and must
    decide the same, whichever worker (with whichever environment) resumes it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    threshold: float = Field(default=DEFAULT_THRESHOLD, ge=0, le=1)
    #: field -> its own threshold, instead of `threshold`
    thresholds: dict[str, float] = Field(default_factory=dict)
    #: fields a value must be given for: missing, they are reviewed whatever the confidences
    required: list[str] = Field(default_factory=list)
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0)

    @field_validator("thresholds")
    @classmethod
    def _known_thresholds(cls, value: dict[str, float]) -> dict[str, float]:
        _known(value, "thresholds")
        bad = [f"{k}={v}" for k, v in value.items() if not 0 <= v <= 1]
        if bad:
            raise ValueError(f"a threshold is a confidence from 0 to 1, not {', '.join(bad)}")
        return value

    @field_validator("required")
    @classmethod
    def _known_required(cls, value: list[str]) -> list[str]:
        _known(value, "required")
        return list(dict.fromkeys(value))

    def threshold_of(self, name: str) -> float:
        return self.thresholds.get(name, self.threshold)


def _known(names: Sequence[str] | Mapping[str, Any], what: str) -> None:
    unknown = [n for n in names if n not in FIELDS]
    if unknown:
        raise ValueError(
            f"{what} names no field of TenderFields: {', '.join(unknown)}; "
            f"the fields are {', '.join(FIELDS)}"
        )


APP_NAME = "documents"  #: the app's name, whose table of pipeline.toml holds `[documents.review]`
#: [documents.review] in pipeline.toml, key -> the variable that wins over it
CONFIG_KEYS = {
    "enabled": REVIEW_ENV,
    "threshold": THRESHOLD_ENV,
    "thresholds": THRESHOLDS_ENV,
    "required": REQUIRED_ENV,
    "timeout": TIMEOUT_ENV,
}


def review_config() -> tuple[dict[str, Any], str]:
    """The `[documents.review]` table of the config file (pipeline.toml, see pg_pipeline.apps)
    and its name for errors; empty without one."""
    try:
        table, source = app_settings(APP_NAME)
    except AppError as exc:
        raise RuntimeError(str(exc)) from None
    where = f"{source or 'pipeline.toml'} [{APP_NAME}.review]"
    unknown = sorted(set(table) - {"review"})
    if unknown:
        raise RuntimeError(
            f"{source} [{APP_NAME}]: unknown setting(s) {', '.join(unknown)}; known: review"
        )
    review = table.get("review", {})
    if not isinstance(review, dict):
        raise RuntimeError(f"{where}: review must be a table of settings")
    unknown = sorted(set(review) - set(CONFIG_KEYS))
    if unknown:
        raise RuntimeError(
            f"{where}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(CONFIG_KEYS)}"
        )
    return review, where


def _switch(raw: Any, name: str) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in _ON:
        return True
    if text in _OFF:
        return False
    raise RuntimeError(f"{name} must be on or off, not {raw!r}")


def review_enabled(
    asked: bool | None = None,
    environ: Mapping[str, str] | None = None,
    config: tuple[Mapping[str, Any], str] | None = None,
) -> bool:
    """Whether a document is reviewed: what its submitter asked (`pipeline submit --review`,
    or `review` in the `upload` payload), else PIPELINE_REVIEW, else `enabled` in
    `[documents.review]` of pipeline.toml (off by default)."""
    if asked is not None:
        return asked
    env = os.environ if environ is None else environ
    raw = env.get(REVIEW_ENV, "").strip()
    if raw:
        return _switch(raw, REVIEW_ENV)
    table, where = review_config() if config is None else config
    return _switch(table.get("enabled", False), f"{where}: enabled")


def _pairs(raw: str, name: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in raw.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError
            out[key.strip()] = float(value)
        except ValueError:
            raise RuntimeError(
                f"{name} must read field=confidence,... (e.g. currency=0.5), not {item.strip()!r}"
            ) from None
    return out


def review_settings(
    environ: Mapping[str, str] | None = None,
    config: tuple[Mapping[str, Any], str] | None = None,
) -> ReviewSettings:
    """The settings of `[documents.review]` in pipeline.toml, each overridden by its
    PIPELINE_REVIEW_* variable when set; RuntimeError naming the variable or the file when one
    cannot be right, so that a worker refuses to start rather than mis-review."""
    env = os.environ if environ is None else environ
    table, where = review_config() if config is None else config
    review_enabled(None, env, (table, where))
    values: dict[str, Any] = {}
    said: dict[str, str] = {}  # field -> where its value came from, for errors

    def take(key: str, field: str, from_env: Any) -> None:
        if from_env is not None:
            values[field], said[field] = from_env, CONFIG_KEYS[key]
        elif key in table:
            values[field], said[field] = table[key], f"{where}: {key}"

    raw = env.get(THRESHOLD_ENV, "").strip()
    threshold: float | None = None
    if raw:
        try:
            threshold = float(raw)
        except ValueError:
            raise RuntimeError(
                f"{THRESHOLD_ENV} must be a confidence from 0 to 1, not {raw!r}"
            ) from None
    take("threshold", "threshold", threshold)
    raw = env.get(THRESHOLDS_ENV, "").strip()
    take("thresholds", "thresholds", _pairs(raw, THRESHOLDS_ENV) if raw else None)
    raw = env.get(REQUIRED_ENV, "").strip()
    take("required", "required", [n.strip() for n in raw.split(",") if n.strip()] if raw else None)
    raw = env.get(TIMEOUT_ENV, "").strip()
    timeout = table.get("timeout") if not raw else None
    try:
        if raw:
            values["timeout_s"], said["timeout_s"] = inputs.duration(raw), TIMEOUT_ENV
        elif isinstance(timeout, str):
            values["timeout_s"], said["timeout_s"] = inputs.duration(timeout), f"{where}: timeout"
        elif timeout is not None:
            values["timeout_s"], said["timeout_s"] = timeout, f"{where}: timeout"
    except ValueError as exc:
        raise RuntimeError(
            f"{said.get('timeout_s', TIMEOUT_ENV if raw else where)}: {exc}"
        ) from None
    try:
        return ReviewSettings(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        raise RuntimeError(f"{said.get(field, field)}: {first['msg']}") from None


def _empty(value: Any) -> bool:
    return value is None or value == []


def needs_review(extraction: TenderFields, settings: ReviewSettings) -> dict[str, str]:
    """The fields a person should look at, in the model's order, each with why.

    A value kept below its threshold, or a candidate the extractor left out (its confidence is
    below the extractor's own floor, so below any sensible threshold), and a required field
    without a value. A field the extractor found nothing for, and that is not required, is not
    asked about: there is nothing to check, and a person would have to read the whole document.
    """
    evidence = extraction.evidence if isinstance(extraction, TenderExtraction) else {}
    out: dict[str, str] = {}
    for name in FIELDS:
        empty = _empty(getattr(extraction, name))
        ev = evidence.get(name)
        limit = settings.threshold_of(name)
        reasons = []
        if ev is not None and ev.confidence < limit and (not empty or ev.rejected is not None):
            what = "the value read" if not empty else "a candidate, left out,"
            reasons.append(f"{what} has confidence {ev.confidence:.2f}, below {limit:.2f}")
        if empty and name in settings.required:
            reasons.insert(0, "required, and no value was read")
        if reasons:
            out[name] = "; ".join(reasons)
    return out


class Label(BaseModel):
    """A correction a reviewer made: what the extractor gave, what the person says it is, and
    what the extractor read it from. What `pipeline documents labels` lists and
    `benchmarks.extraction_accuracy --labels-from-db` scores against."""

    model_config = ConfigDict(extra="forbid")

    field: str
    extracted: Any  #: as JSON (TenderFields' serialisation): null when nothing was read
    corrected: Any  #: as JSON
    evidence: str | None = None  #: the line the value (or the left-out candidate) was read from
    confidence: float | None = None
    page: int | None = None
    rejected: str | None = None  #: the candidate the extractor left out, when it did


def corrections(extraction: TenderExtraction, reviewed: TenderFields) -> list[Label]:
    """A label per field the reviewer changed, compared as values (1200.0 is 1200.00)."""
    got = extraction.fields()
    shown, fixed = got.model_dump(mode="json"), reviewed.model_dump(mode="json")
    labels = []
    for name in FIELDS:
        if getattr(got, name) == getattr(reviewed, name):
            continue
        ev: FieldEvidence | None = extraction.evidence.get(name)
        labels.append(
            Label(
                field=name,
                extracted=shown[name],
                corrected=fixed[name],
                evidence=None if ev is None else ev.source,
                confidence=None if ev is None else ev.confidence,
                page=None if ev is None else ev.page,
                rejected=None if ev is None else ev.rejected,
            )
        )
    return labels


ReviewStatus = Literal["sure", "accepted", "corrected", "timed_out"]


class Reviewed(BaseModel):
    """The `review` stage's output: the document's fields as they stand after review.

    status: "sure" (nothing needed review: no one was asked), "accepted" (a person saw the
    fields and changed nothing), "corrected" (they changed some: `labels` says which), or
    "timed_out" (no one answered in time: the extracted fields, unreviewed).
    """

    fields: TenderFields
    status: ReviewStatus
    #: the fields that needed review, each with why (empty when sure)
    flagged: dict[str, str] = Field(default_factory=dict)
    labels: list[Label] = Field(default_factory=list)
    filename: str | None = None


_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text)}


_LineT = TypeVar("_LineT")
#: Least share of words a page's line must have in common with the evidence to be its line.
MIN_LINE_LIKENESS = 0.3


def _evidence_line(
    ev: FieldEvidence, pages: Sequence[Sequence[tuple[str, _LineT]] | None]
) -> tuple[int, _LineT] | None:
    """The line of the pages (each a list of (its text, the line)) that shares most words with
    the evidence, on the evidence's page when it names one: (0-based page, the line), or None.
    The evidence quotes the line as the extractor normalised it, hence words, not text."""
    source = (ev.source or ev.rejected or "").split(" | ")[0]
    wanted = _words(source)
    if not wanted:
        return None
    candidates = (
        [ev.page - 1] if ev.page is not None and 0 < ev.page <= len(pages) else range(len(pages))
    )
    best: tuple[float, int, _LineT] | None = None
    for index in candidates:
        for text, line in pages[index] or ():
            have = _words(text)
            if not have:
                continue
            score = len(wanted & have) / len(wanted | have)
            if best is None or score > best[0]:
                best = (score, index, line)
    if best is None or best[0] < MIN_LINE_LIKENESS:
        return None
    return best[1], best[2]


def snippet(pages: Sequence[str], ev: FieldEvidence) -> str | None:
    """The lines around the one the value was read from, as the page's text has them."""
    found = _evidence_line(
        ev, [[(line, number) for number, line in enumerate(p.splitlines())] for p in pages]
    )
    if found is None:
        return None
    index, number = found
    lines = pages[index].splitlines()
    around = lines[max(0, number - SNIPPET_LINES) : number + SNIPPET_LINES + 1]
    return "\n".join(line.rstrip()[:SNIPPET_LINE_CHARS] for line in around).strip("\n")


Box = tuple[float, float, float, float]
#: Lines of the page shown above and below the one a value was read from, in its picture.
REGION_LINES = 3
REGION_MAX_PT = 200.0  #: tallest picture, in points of the page


def evidence_region(
    layouts: Sequence[PageLayout | None], ev: FieldEvidence
) -> tuple[int, Box, Box] | None:
    """Where on which page the value was read: (0-based page, the band of the page to draw,
    the line to outline), found as the snippet is, among the layout's visual lines; None when
    the page has no layout or no line like it."""
    found = _evidence_line(
        ev,
        [
            None
            if layout is None
            else [(" ".join(span.text for span in line), line) for line in lines_of(layout.spans)]
            for layout in layouts
        ],
    )
    if found is None:
        return None
    index, line = found
    layout = layouts[index]
    assert layout is not None
    mark = (
        min(s.x0 for s in line),
        min(s.y0 for s in line),
        max(s.x1 for s in line),
        max(s.y1 for s in line),
    )
    margin = min(
        REGION_LINES * max(mark[3] - mark[1], 8.0), (REGION_MAX_PT - (mark[3] - mark[1])) / 2
    )
    band = (0.0, max(0.0, mark[1] - margin), layout.width, min(layout.height, mark[3] + margin))
    return index, band, mark


def review_detail(
    extraction: TenderExtraction,
    pages: Sequence[str],
    flagged: Mapping[str, str],
    *,
    filename: str | None = None,
    images: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """What the reviewer sees beside each field, in the shape the dashboard's review form reads
    (docs/dashboard.md): `title`, `order` (the fields in the model's order), `flagged`, and per
    field `needs_review`, `why`, `confidence`,
    `evidence` (the line read), `page`, `snippet` (the lines around it), `rejected`, `note`,
    `image` (a PNG data URI of the page around the line, when one was drawn)."""
    fields: dict[str, dict[str, Any]] = {}
    for name in FIELDS:
        entry: dict[str, Any] = {"needs_review": name in flagged}
        if name in flagged:
            entry["why"] = flagged[name]
        ev = extraction.evidence.get(name)
        if ev is not None:
            entry.update(
                confidence=ev.confidence,
                rule=ev.rule,
                evidence=ev.source,
                page=ev.page,
                rejected=ev.rejected,
                note=ev.note,
                snippet=snippet(pages, ev),
            )
        if images and name in images:
            entry["image"] = images[name]
        fields[name] = {k: v for k, v in entry.items() if v is not None}
    return {
        "title": filename or "document",
        "order": list(FIELDS),
        "flagged": list(flagged),
        "warnings": [w[:SNIPPET_LINE_CHARS] for w in extraction.warnings[:20]],
        "extractor": extraction.extractor,
        "fields": fields,
    }
