"""Two versions of a stage's outputs side by side (pg_pipeline.output_versions): parts aligned
by part, outputs without a part by their jobs' order, JSON objects field by field; a version
named by its code version first, else by its generation."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pg_pipeline.output_versions import NoSuchVersion, OutputVersion, diff_parts, pick_version

NOW = datetime(2026, 12, 2, tzinfo=UTC)


def test_parts_align_by_part_and_a_part_missing_on_one_side_shows_as_none() -> None:
    left = [(1, 10, "1", {"t": "a"}), (2, 11, "1", {"t": "b"})]
    right = [(2, 21, "2", {"t": "B"}), (3, 22, "2", {"t": "c"})]
    parts = diff_parts(left, right)
    assert [(p.part, p.left, p.right) for p in parts] == [
        (1, {"t": "a"}, None),
        (2, {"t": "b"}, {"t": "B"}),
        (3, None, {"t": "c"}),
    ]
    assert [p.changed for p in parts] == [True, True, True]
    assert parts[0].fields is None  # one side is missing: nothing to compare field by field
    assert [(f.field, f.left, f.right) for f in parts[1].changed_fields] == [("t", "b", "B")]


def test_outputs_without_parts_align_by_their_jobs_order() -> None:
    parts = diff_parts([(None, 1, None, [1, 2]), (None, 2, None, "x")], [(None, 5, "2", [1, 2])])
    assert [(p.part, p.left, p.right, p.changed) for p in parts] == [
        (None, [1, 2], [1, 2], False),
        (None, "x", None, True),
    ]


def test_fields_added_or_dropped_are_changes_and_a_null_is_not_a_missing_field() -> None:
    [part] = diff_parts([(0, 1, "1", {"a": 1, "gone": None})], [(0, 2, "2", {"a": 1, "new": 2})])
    changed = {f.field: (f.in_left, f.in_right) for f in part.changed_fields}
    assert changed == {"gone": (True, False), "new": (False, True)}


VERSIONS = [
    OutputVersion("extract", 0, "2", 1, NOW),
    OutputVersion("extract", 1, "code-abc", 1, NOW, "extract"),
    OutputVersion("extract", 2, "2", 1, NOW, "extract"),
]


def test_a_version_is_its_code_versions_newest_generation_else_a_generation_number() -> None:
    assert pick_version(VERSIONS, "2").generation == 2  # a code version wins over a number
    assert pick_version(VERSIONS, "generation:1").code_version == "code-abc"
    assert pick_version(VERSIONS, "gen:0").generation == 0
    assert pick_version(VERSIONS, "code-abc").generation == 1
    assert pick_version(VERSIONS, "1").generation == 1  # no code version "1": generation 1


@pytest.mark.parametrize("selector", ["9", "generation:9", "generation:-1", "nope", ""])
def test_a_version_not_stored_is_refused_naming_those_there_are(selector: str) -> None:
    with pytest.raises(NoSuchVersion, match=r"there are: generation 0 \(2\), generation 1"):
        pick_version(VERSIONS, selector)
