"""`pipeline submit --wait`: the fields JSON keeps its shape; --explain adds the evidence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import pg_pipeline_documents.cli as cli
from pg_pipeline.runs import StageProgress
from pg_pipeline_documents.extract_offline import extract_offline_explained
from pg_pipeline_documents.tender import TenderFields

NOTICE = (
    "Official name: Stadtwerke Lindenau GmbH\nE-mail: vergabe@stadtwerke-lindenau.example\n"
    "II.1.1) Title: Renovation of the heating network\nReference number: LIN-2026-031\n"
    "IV.2.2) Time limit for receipt of tenders\nDate: 02/11/2026\nLocal time: 14:00\n"
)


def printed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], stored: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    monkeypatch.setattr(
        cli, "run_progress", lambda conn, doc: [StageProgress("extract", {"done": 1})]
    )
    monkeypatch.setattr(cli, "run_output", lambda conn, doc, stage: stored)
    monkeypatch.setattr(cli, "run_status", lambda conn, doc: None)
    results = []
    for explain in (False, True):
        assert cli.wait_for_fields(None, [(Path("a.pdf"), 7)], 5, explain=explain) == 0  # type: ignore[arg-type]
        results.append(json.loads(capsys.readouterr().out))
    return results[0], results[1]


def test_fields_are_printed_as_before_and_explain_adds_the_evidence(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stored = extract_offline_explained(NOTICE).model_dump(mode="json")
    plain, explained = printed(monkeypatch, capsys, stored)
    assert list(plain) == ["document", "file", "fields"]
    assert list(plain["fields"]) == list(TenderFields.model_fields)
    assert plain["fields"]["submission_deadline"] == "2026-11-02T14:00:00"
    assert explained["fields"] == plain["fields"]
    evidence = explained["explain"]["evidence"]
    assert evidence["title"]["source"] == "II.1.1) Title: Renovation of the heating network"
    assert evidence["submission_deadline"]["confidence"] >= 0.8
    assert explained["explain"]["extractor"] == "offline"


def test_an_output_stored_before_evidence_existed_still_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stored = TenderFields(title="T", reference="R-1").model_dump(mode="json")
    plain, explained = printed(monkeypatch, capsys, stored)
    assert plain["fields"] == stored
    assert explained["explain"] == {"evidence": {}, "warnings": [], "extractor": None}
