"""Rule-based extraction of tender fields from OCR'd notice text.

Deterministic: regular expressions plus label heuristics for public-procurement notices (EU/TED
standard forms and eForms, UK Find a Tender, US RFPs, German and French notices, and free-form
invitations to tender). It tolerates typical OCR noise: doubled spaces, values wrapped onto the
next line, ``O`` read for ``0`` inside references and numbers, spaces around separators and
ligatures.

The rule throughout is *unknown over wrong*: a field is only filled when a label (or an
unambiguous pattern such as a CPV code) says what the value is.

Modules by concern: ``normalise`` (text clean-up and bounds), ``furniture`` (running headers,
footers and page numbers, blanked first), ``labels`` (the vocabulary per family and language, as
data), ``lines`` (finding labelled values), ``dates``, ``amounts``, ``codes`` (CPV, references,
e-mail), ``names`` (title and authority), ``statements`` (the buyer and the title a dossier's
sentences state when no label does), ``lots``, ``evidence`` (what each rule returns) and
``fields`` (the other fields' rules and the entry point). The vocabulary holds English, French,
German and Cyrillic (Russian, Ukrainian, Bulgarian) labels; other scripts are warned about.
"""

from pg_pipeline_documents.extract_offline.fields import extract_offline, extract_offline_explained

__all__ = ["extract_offline", "extract_offline_explained"]
