"""The SQL files as pipeline/queries.py reads them: no database."""

from __future__ import annotations

import pytest

from pipeline.queries import load_functions, order_functions


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
