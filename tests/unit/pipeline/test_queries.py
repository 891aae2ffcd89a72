"""The SQL files as pipeline/queries.py reads them, and the code's use of them: no database."""

from __future__ import annotations

import re

import pytest

from pg_pipeline.queries import (
    Q,
    channel,
    check_schema,
    in_schema,
    load_functions,
    load_migrations,
    order_functions,
    parse_queries,
)
from tests.support.paths import REPO

ROOT = REPO
CODE = [*(ROOT / "pipeline").rglob("*.py"), *(ROOT / "stages").rglob("*.py")]


def queries_the_code_names() -> set[str]:
    used: set[str] = set()
    for path in CODE:
        # Q, or q: the queries of a schema named in the call (pipeline/migrate.py)
        used |= set(re.findall(r"""\b[Qq]\[["']([a-z0-9_]+)["']\]""", path.read_text()))
    return used


def test_every_named_query_the_code_uses_exists() -> None:
    used = queries_the_code_names()
    assert used, "found no query references; the pattern is wrong"
    assert used - set(Q) == set(), "queries used but not defined"


def test_every_named_query_is_used_by_the_code() -> None:
    assert set(Q) - queries_the_code_names() == set(), "queries defined but never used: delete them"


def test_the_code_names_each_query_it_runs_literally() -> None:
    # Q[some_variable] would hide a use from the two tests above.
    dynamic = [p.name for p in CODE if re.search(r"""\b[Qq]\[(?!["'])""", p.read_text())]
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
        f"-- {name}, which the comment may say calls pipeline.other_function(x).\n"
        f"CREATE OR REPLACE FUNCTION pipeline.{name}() RETURNS {returns}\n"
        f"LANGUAGE sql AS $$ {body} $$;\n"
    )


def test_a_function_file_comes_after_the_files_whose_functions_it_calls() -> None:
    texts = {
        "a_outer": function("a_outer", "SELECT pipeline.z_inner() + pipeline.m_middle()"),
        "m_middle": function("m_middle", "SELECT pipeline.z_inner()"),
        "z_inner": function("z_inner"),
        "other_function": function("other_function"),
    }
    ordered = order_functions(texts)
    assert [f.name for f in ordered] == ["other_function", "z_inner", "m_middle", "a_outer"]
    assert ordered[-1].calls == {"z_inner", "m_middle"}
    # A name in a comment is no call.
    assert ordered[0].calls == frozenset()


def test_only_whole_words_call_or_define_a_function() -> None:
    body = "SELECT mypipeline.z_inner() + x_pipeline.m_middle() + pipeline . z_inner()"
    texts = {
        "a_outer": function("a_outer", body),
        "m_middle": function("m_middle"),
        "z_inner": function("z_inner"),
        # A call, and no second definition: `or_create` is another word.
        "other_function": function("other_function")
        + "SELECT or_create or replace function pipeline.m_middle();\n",
    }
    calls = {f.name: f.calls for f in order_functions(texts)}
    assert calls == dict.fromkeys(texts, frozenset()) | {"other_function": {"m_middle"}}
    case = function("m_middle").replace("CREATE OR REPLACE FUNCTION", "create Or Replace function")
    [middle] = order_functions({"m_middle": case, "a_outer": function("a_outer", "SELECT 1")})[1:]
    assert middle.name == "m_middle"


def test_a_function_file_defines_exactly_the_function_it_is_named_after() -> None:
    with pytest.raises(RuntimeError, match=r"must define one function, pipeline\.misnamed"):
        order_functions({"misnamed": function("another_name")})
    with pytest.raises(RuntimeError, match=r"must define one function, pipeline\.two"):
        order_functions({"two": function("two") + function("two")})


def test_function_files_that_call_each_other_in_a_circle_are_refused() -> None:
    with pytest.raises(RuntimeError, match=r"circle: \['ping', 'pong'\]"):
        order_functions(
            {
                "ping": function("ping", "SELECT pipeline.pong()"),
                "pong": function("pong", "SELECT pipeline.ping()"),
            }
        )


def test_trigger_functions_are_told_apart_by_what_they_return() -> None:
    ordered = order_functions(
        {"on_insert": function("on_insert", returns="trigger"), "plain": function("plain")}
    )
    assert {f.name: f.is_trigger for f in ordered} == {"on_insert": True, "plain": False}


def test_the_shipped_function_files_each_define_their_function() -> None:
    names = [f.name for f in load_functions()]
    assert "claim" in names
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


def test_another_schema_takes_the_place_of_pipeline_wherever_the_sql_names_the_schema() -> None:
    sql = (
        "CREATE SCHEMA IF NOT EXISTS pipeline; ALTER TABLE jobs SET SCHEMA pipeline;\n"
        "SELECT pg_notify('pipeline_jobs', x) FROM pipeline.jobs j JOIN pipeline.outputs o "
        "USING (id) WHERE pipeline.claim_ok(j) AND to_regclass('pipeline.migrations') IS NULL;\n"
        "LISTEN pipeline_cancel;"
    )
    assert in_schema(sql, "tenant_a") == (
        'CREATE SCHEMA IF NOT EXISTS "tenant_a"; ALTER TABLE jobs SET SCHEMA "tenant_a";\n'
        'SELECT pg_notify(\'tenant_a_jobs\', x) FROM "tenant_a".jobs j JOIN "tenant_a".outputs o '
        'USING (id) WHERE "tenant_a".claim_ok(j) '
        "AND to_regclass('\"tenant_a\".migrations') IS NULL;\n"
        "LISTEN tenant_a_cancel;"
    )
    assert in_schema(sql, "pipeline") == sql


def test_names_that_only_contain_pipeline_are_not_a_schema() -> None:
    sql = 'SELECT my_pipeline.jobs, x.pipeline.y, "pipeline".jobs, pipeline_jobs_total FROM t'
    assert in_schema(sql, "other") == sql


def test_a_schema_name_needs_no_escaping_anywhere_it_goes() -> None:
    for name in ["pipeline", "jobs_2", "_q", "a" * 56]:
        assert check_schema(name) == name
    for name in ["", "Pipeline", "pg_queue", "x;drop", 'a"b', "it's", "1st", "a" * 57, "é"]:
        with pytest.raises(ValueError, match="lower-case letters"):
            check_schema(name)


def test_two_schemas_never_share_a_notification_channel() -> None:
    assert channel("jobs", "pipeline") == "pipeline_jobs"
    assert channel("cancel", "other") == "other_cancel"
    names = {channel(kind, s) for kind in ("jobs", "cancel") for s in ("a", "a_jobs", "a_cancel")}
    assert len(names) == 6
