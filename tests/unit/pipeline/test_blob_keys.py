"""The blob keys a payload names: what its run references, found without the database."""

from __future__ import annotations

import hashlib

import pytest

from pg_pipeline.blobs import blob_keys, content_key, names_blob
from tests.unit.pipeline.test_usage import make_context

A = content_key(hashlib.sha256(b"a").hexdigest())
B = content_key(hashlib.sha256(b"b").hexdigest())


def test_every_key_a_payload_names_is_found_once_and_sorted() -> None:
    text = f'{{"x": "{B}", "y": ["{A}", "{B}"], "url": "s3://bucket/prefix/{A}?v=1"}}'
    assert blob_keys(text) == sorted([A, B])


def test_look_alikes_are_not_keys() -> None:
    digest = A.rsplit("/", 1)[1]
    assert blob_keys(f"sha256/{digest[2:4]}/{digest}") == []  # not the digest's first two
    assert blob_keys(f"{A}0") == []  # a longer run of hex digits
    assert blob_keys(A.upper()) == []
    assert blob_keys(A[:-1]) == []
    assert blob_keys('{"n": 1}') == [] and not names_blob('{"n": 1}')
    assert names_blob("sha256/ nothing more") and blob_keys("sha256/ nothing more") == []


def test_a_stage_references_only_keys_and_adds_nothing_for_none() -> None:
    ctx = make_context()
    with pytest.raises(ValueError, match="not a blob key: 'sha256/x'"):
        ctx.reference_blobs(A, "sha256/x")
    ctx.reference_blobs()
    assert not ctx.has_steps, "a refused call adds nothing, and no keys nothing either"
    ctx.reference_blobs(B, A, B)
    assert len(ctx.transaction_steps) == 1
