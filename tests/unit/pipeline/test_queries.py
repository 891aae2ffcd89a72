"""The SQL files as pipeline/queries.py reads them, and the code's use of them: no database."""

from __future__ import annotations

import re

import pytest

from pipeline.queries import Q, load_functions, load_migrations, order_functions, parse_queries
from tests.support.paths import REPO

ROOT = REPO
CODE = [*(ROOT / "pipeline").rglob("*.py"), *(ROOT / "stages").rglob("*.py")]


def queries_the_code_names() -> set[str]:
    used: set[str] = set()
    for path in CODE:
        used |= set(re.findall(r"""Q\[["']([a-z0-9_]+)["']\]""", path.read_text()))
    return used


def test_every_named_query_the_code_uses_exists() -> None:
    used = queries_the_code_names()
    assert used, "found no query references; the pattern is wrong"
    assert used - set(Q) == set(), "queries used but not defined"


def test_every_named_query_is_used_by_the_code() -> None:
    assert set(Q) - queries_the_code_names() == set(), "queries defined but never used: delete them"


def test_the_code_names_each_query_it_runs_literally() -> None:
    # Q[some_variable] would hide a use from the two tests above.
    dynamic = [p.name for p in CODE if re.search(r"""\bQ\[(?!["'])""", p.read_text())]
    assert dynamic == []


def test_no_sql_strings_in_the_runtime_code() -> None:
    # Upper-case keywords opening a string literal (docstrings open with three quotes).
    sql = re.compile(r"(?<![\"'])[\"'](SELECT|INSERT|UPDATE|DELETE|CREATE|LISTEN) ")
    offenders = [p.name for p in (ROOT / "pipeline").rglob("*.py") if sql.search(p.read_text())]
    assert offenders == []


def test_parse_queries_rejects_duplicates_and_keeps_bodies() -> None:
    parsed = parse_queries("-- preamble\n-- name: a\nSELECT 1;\n-- name: b\n-- why\nSELECT 2;\n")
    assert parsed == {"a": "SELECT 1;", "b": "-- why\nSELECT 2;"}
    with pytest.raises(ValueError, match="twice"):
        parse_queries("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;\n")


def test_migrations_are_numbered_from_one() -> None:
    assert [m.version for m in load_migrations()][:1] == [1]


def function(name: str, body: str = "SELECT 1", returns: str = "integer") -> str:
    return (
        f"-- {name}, which the comment may say calls other_function(x).\n"
        f"CREATE OR REPLACE FUNCTION {name}() RETURNS {returns}\n"
        f"LANGUAGE sql AS $$ {body} $$;\n"
    )


def test_a_function_file_comes_after_the_files_whose_functions_it_calls() -> None:
    texts = {
        "a_outer": function("a_outer", "SELECT z_inner() + m_middle()"),
        "m_middle": function("m_middle", "SELECT z_inner()"),
        "z_inner": function("z_inner"),
        "other_function": function("other_function"),
    }
    ordered = order_functions(texts)
    assert [f.name for f in ordered] == ["other_function", "z_inner", "m_middle", "a_outer"]
    assert ordered[-1].calls == {"z_inner", "m_middle"}
    # A name in a comment is no call.
    assert ordered[0].calls == frozenset()


def test_a_function_file_defines_exactly_the_function_it_is_named_after() -> None:
    with pytest.raises(RuntimeError, match="must define one function, misnamed"):
        order_functions({"misnamed": function("another_name")})
    with pytest.raises(RuntimeError, match="must define one function, two"):
        order_functions({"two": function("two") + function("two")})


def test_function_files_that_call_each_other_in_a_circle_are_refused() -> None:
    with pytest.raises(RuntimeError, match=r"circle: \['ping', 'pong'\]"):
        order_functions(
            {"ping": function("ping", "SELECT pong()"), "pong": function("pong", "SELECT ping()")}
        )


def test_trigger_functions_are_told_apart_by_what_they_return() -> None:
    ordered = order_functions(
        {"on_insert": function("on_insert", returns="trigger"), "plain": function("plain")}
    )
    assert {f.name: f.is_trigger for f in ordered} == {"on_insert": True, "plain": False}


def test_the_shipped_function_files_each_define_their_function() -> None:
    names = [f.name for f in load_functions()]
    assert "pipeline_claim" in names
    assert len(names) == len(set(names))


def test_each_advisory_lock_key_belongs_to_one_named_query() -> None:
    # Two kinds of work under one key wait for each other for no reason (a worker's start, which
    # syncs schedules, waited for a prune batch).
    holders: dict[str, list[str]] = {}
    for name, sql in Q.items():
        for key in re.findall(r"pg_(?:try_)?advisory_(?:xact_)?lock\((\d+)\)", sql):
            holders.setdefault(key, []).append(name)
    assert len(holders) >= 3, "found too few advisory locks; the pattern is wrong"
    assert {key: names for key, names in holders.items() if len(names) > 1} == {}
