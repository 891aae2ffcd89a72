"""Which language tesseract reads a document's scanned pages in, decided once per document.

The `upload` stage decides, before it fans the pages out, and each page's job carries the
decision in its payload (``OcrPage.lang``): the pages are read in parallel by many workers, and
none of them could otherwise know what the others saw. The evidence, cheapest first:

1. the text layer of the document's first pages (read by the same child that counts the pages,
   :func:`pdfinfo.inspect_pdf`), when it has enough words;
2. else a first pass, in English at a low resolution, over a band of the first page
   (:data:`DETECT_BAND`, below the heading, where a notice's running text is): English's model
   reads a French or German page's short function words ("de", "la", "der", "und") well enough
   to tell the language. At 150 dpi the band costs about two fifths of the CPU a page's reading
   takes (the whole page at that resolution, three quarters). When the band does not tell (a
   cover page, a short letter), the first pages are read whole, until one does.

A language whose data is not installed falls back to English, as does a document that does not
say (too few words, or a language this does not know).
"""

from __future__ import annotations

import functools
import logging
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

from pg_pipeline import RetryableError
from pg_pipeline_documents.errors import DocumentError
from pg_pipeline_documents.ocr_engine import ocr_page

logger = logging.getLogger(__name__)

DEFAULT_LANGUAGE = "eng"
#: Characters of the text layer the upload stage reads for the decision (the first pages').
SAMPLE_CHARS = 6000
#: The first pass over a scanned document: the band of its first page it reads first (top and
#: bottom, fractions of the page's height), how many of its first pages it may then read whole
#: to find one that tells, at what resolution, and how long one look may take.
DETECT_PAGES = 3
#: At most one band and DETECT_PAGES whole pages are read.
DETECT_LOOKS = 1 + DETECT_PAGES
DETECT_BAND = (0.2, 0.6)
DETECT_DPI = 150
#: A look takes 1 to 3 s of CPU; 30 s allows for a loaded machine while all four looks stay well
#: inside the upload stage's own timeout.
DETECT_TIMEOUT_S = 30.0


def _words(spaced: str) -> frozenset[str]:
    return frozenset(spaced.split())


#: Frequent short words of each language that the others rarely print, by tesseract language
#: (not "in", "an" or "des", which two of them share). Spelled without accents too, as English's
#: model reads them on a French or German page.
FUNCTION_WORDS: dict[str, frozenset[str]] = {
    "eng": _words(
        "the and of to for is are be by with this that shall will from which or not "
        "any all has have been were their its"
    ),
    "fra": _words(
        "le la les de du et un une pour par sur dans est au aux avec sont ce cette qui que "
        "ou pas leur être etre à été ete ses"
    ),
    "deu": _words(
        "der die das und den dem für fur mit von zu im ist ein eine einer auf bei nicht oder "
        "sich wird werden nach aus zur zum sind auch über uber"
    ),
}
#: A language is chosen when its words are at least this many and this many times the next's.
MIN_WORDS = 8
MIN_LEAD = 2.0

_WORD = re.compile(r"[^\W\d_]+")


def guess_language(text: str) -> str | None:
    """The tesseract language whose function words ``text`` uses most, or None when too few
    of them or no clear lead."""
    counts: Counter[str] = Counter()
    for word in _WORD.findall(text.lower()):
        for lang, words in FUNCTION_WORDS.items():
            if word in words:
                counts[lang] += 1
    ranked = [*counts.most_common(2), ("", 0), ("", 0)]
    (best, hits), (_, runner_up) = ranked[0], ranked[1]
    if hits >= MIN_WORDS and hits >= MIN_LEAD * runner_up:
        return best
    return None


def document_language(pdf: Path, text_sample: str, page_count: int) -> str:
    """The language to read the scanned pages of ``pdf`` in (see the module's docstring)."""
    guess = guess_language(text_sample)
    if guess is None:
        guess = _first_pass(pdf, page_count)
    if guess is None:
        return DEFAULT_LANGUAGE
    if guess not in installed_languages():
        logger.warning(
            "%s reads as %s, whose tesseract data is not installed: reading it as %s",
            pdf.name,
            guess,
            DEFAULT_LANGUAGE,
        )
        return DEFAULT_LANGUAGE
    return guess


def _first_pass(pdf: Path, page_count: int) -> str | None:
    """The language the first page's band tells, read in English, or else the first whole page
    that tells one (a cover page, a short letter, a blank band); None when none does."""
    looks = [(0, DETECT_BAND)] + [(index, None) for index in range(min(page_count, DETECT_PAGES))]
    for index, band in looks:
        try:
            page = ocr_page(
                pdf,
                index,
                dpi=DETECT_DPI,
                timeout_s=DETECT_TIMEOUT_S,
                lang=DEFAULT_LANGUAGE,
                layout=False,
                band=band,
            )
        except (DocumentError, RetryableError, RuntimeError, IndexError) as exc:
            # The page's own job will meet the same trouble and report it; the language only
            # falls back.
            logger.warning("%s: no language from page %d: %s", pdf.name, index + 1, exc)
            return None
        guess = guess_language(page.text)
        if guess is not None:
            return guess
    return None


@functools.cache
def installed_languages() -> frozenset[str]:
    """The languages tesseract has data for (``tesseract --list-langs``), once per process."""
    binary = shutil.which("tesseract")
    if binary is None:
        return frozenset()
    try:
        listed = subprocess.run(
            [binary, "--list-langs"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    # The first line says where the data lives; each next line names a language.
    return frozenset(line.strip() for line in listed.splitlines()[1:] if line.strip())
