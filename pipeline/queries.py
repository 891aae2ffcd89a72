"""The SQL files shipped as pg_pipeline.sql: named queries (sql/queries*.sql, parsed once at
import),
numbered migrations (sql/migrations) and function files (sql/functions); see pipeline/migrate.py
for how the last two reach a database.

Every object lives in a schema of its own, `pipeline` unless PIPELINE_SCHEMA (or the `schema=`
argument of connect() and migrate()) names another. The SQL spells the schema literally, as
`pipeline.jobs` (and `SCHEMA pipeline`), so that it reads as it runs in psql; in_schema() puts
another schema's quoted name in its place, and the notification channels' names
(`pipeline_jobs`, `pipeline_cancel`) take that schema's name too, so that two installations in
one database neither share tables nor wake each other's workers.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from dataclasses import dataclass
from importlib import resources
from typing import LiteralString, cast

#: Where every table, view, function and type lives; PIPELINE_SCHEMA names another.
DEFAULT_SCHEMA = "pipeline"
SCHEMA_ENV = "PIPELINE_SCHEMA"
#: Lower-case letters, digits and underscores, so that the name needs no escaping anywhere it
#: goes (a quoted identifier, a channel name, a string literal), and short enough that
#: "<schema>_cancel" stays within PostgreSQL's 63-byte names. pg_ is PostgreSQL's own.
_SCHEMA_NAME = re.compile(r"(?!pg_)[a-z_][a-z0-9_]{0,55}")
#: The schema where the SQL names it: `pipeline.` (not inside another name, nor after a quote:
#: "pipeline".x is someone's spelling, not ours; `'pipeline.%I'` in a format() is ours), and
#: `SCHEMA pipeline`.
_QUALIFIER = re.compile(r"(?<![\w.$\"])pipeline(?=\.)")
_SCHEMA_CLAUSE = re.compile(r"(?:(?<=\bSCHEMA )|(?<=\bSCHEMA IF NOT EXISTS ))pipeline\b")
_CHANNEL = re.compile(r"\bpipeline_(jobs|cancel|doctor)\b")


def check_schema(name: str) -> str:
    """`name` if it can be pg-pipeline's schema, else ValueError saying what can."""
    if not _SCHEMA_NAME.fullmatch(name):
        raise ValueError(
            f"schema name {name!r}: use 1 to 56 lower-case letters, digits and underscores, "
            "starting with a letter or an underscore (and not with pg_)"
        )
    return name


def configured_schema() -> str:
    """PIPELINE_SCHEMA, else `pipeline`: the schema of this process's named queries (Q)."""
    return check_schema(os.environ.get(SCHEMA_ENV, "").strip() or DEFAULT_SCHEMA)


def in_schema(sql: str, schema: str) -> str:
    """`sql`, as written for the schema `pipeline`, for `schema` (a checked name) instead."""
    if schema == DEFAULT_SCHEMA:
        return sql
    sql = _QUALIFIER.sub(f'"{schema}"', sql)
    sql = _SCHEMA_CLAUSE.sub(f'"{schema}"', sql)
    return _CHANNEL.sub(lambda m: f"{schema}_{m[1]}", sql)


def channel(kind: str, schema: str) -> str:
    """The notification channel of `kind` ("jobs" or "cancel") for an installation in `schema`:
    as the SQL's NOTIFY and LISTEN name it."""
    return in_schema(f"pipeline_{kind}", schema)


_HEADER = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


@dataclass(frozen=True)
class FunctionFile:
    """sql/functions/NAME.sql: `CREATE OR REPLACE FUNCTION NAME`, the only spelling of NAME."""

    name: str
    sql: str
    #: Other functions of sql/functions that its body calls: they are created before it.
    calls: frozenset[str]

    @property
    def file(self) -> str:
        return f"{self.name}.sql"

    @property
    def sha256(self) -> str:
        return function_hash(self.sql)

    @property
    def is_trigger(self) -> bool:
        return _RETURNS_TRIGGER.search(_strip_comments(self.sql)) is not None


_COMMENT = re.compile(r"--[^\n]*")
_RETURNS_TRIGGER = re.compile(r"\bRETURNS\s+trigger\b", re.IGNORECASE)
# These two begin with their first word and check the word boundary after it, in a lookbehind
# (`\bpipeline` says the same as `pipeline(?<!\wpipeline)`): a pattern that begins with \b is
# tried at every position of the text, one that begins with a word is searched for: over every
# function file, 0.8 ms, not 3.4.
_DEFINES = re.compile(
    r"create(?<!\wcreate)\s+or\s+replace\s+function\s+pipeline\.(\w+)\s*\(", re.IGNORECASE
)
_CALLS = re.compile(r"pipeline(?<!\wpipeline)\.(\w+)\s*\(")


def _strip_comments(sql: str) -> str:
    return _COMMENT.sub("", sql)


def sql_text(filename: str) -> str:
    return resources.files("pg_pipeline.sql").joinpath(filename).read_text(encoding="utf-8")


def parse_queries(text: str) -> dict[str, LiteralString]:
    """Split a file on its '-- name: X' headers; text before the first header is a preamble."""
    parts = _HEADER.split(text)
    queries: dict[str, LiteralString] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in queries:
            raise ValueError(f"query {name!r} is defined twice")
        # The SQL comes from our own packaged file, never from input: it is as literal as code.
        queries[name] = cast(LiteralString, body.strip())
    return queries


def migration_names() -> list[tuple[int, str]]:
    """(version, name) of every file of sql/migrations, by version, from the file names alone:
    what pending_changes() compares, which every command asks before its own statements."""
    found: list[tuple[int, str]] = []
    for entry in resources.files("pg_pipeline.sql.migrations").iterdir():
        match = re.fullmatch(r"(\d{4})_([a-z0-9_]+)\.sql", entry.name)
        if match:
            found.append((int(match[1]), match[2]))
    found.sort()
    versions = [version for version, _ in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migrations must be numbered 1..N without gaps, found {versions}")
    return found


def load_migrations() -> list[Migration]:
    folder = resources.files("pg_pipeline.sql.migrations")
    return [
        Migration(version, name, folder.joinpath(f"{version:04d}_{name}.sql").read_text("utf-8"))
        for version, name in migration_names()
    ]


def function_texts() -> dict[str, str]:
    """Every file of sql/functions: its name without .sql, and its text."""
    return {
        entry.name.removesuffix(".sql"): entry.read_text(encoding="utf-8")
        for entry in resources.files("pg_pipeline.sql.functions").iterdir()
        if entry.name.endswith(".sql")
    }


def function_hash(text: str) -> str:
    """What pipeline.functions records of a function file's text once migrate() applied it."""
    return hashlib.sha256(text.encode()).hexdigest()


def load_functions() -> list[FunctionFile]:
    """Every file of sql/functions, in the order migrate() creates them (see order_functions)."""
    return order_functions(function_texts())


def order_functions(texts: dict[str, str]) -> list[FunctionFile]:
    """The function files by name (file name without .sql: text), each after the ones whose
    functions it calls, then by name: a SQL-language function's body is checked against what
    exists when it is created."""
    found: dict[str, FunctionFile] = {}
    for name, text in texts.items():
        code = _strip_comments(text)
        defined = _DEFINES.findall(code)
        if defined != [name]:
            raise RuntimeError(
                f"sql/functions/{name}.sql must define one function, pipeline.{name}, with a"
                f" CREATE OR REPLACE FUNCTION; it defines {defined}"
            )
        # One pass over the body, not one search per other file.
        calls = set(_CALLS.findall(code)) & set(texts) - {name}
        found[name] = FunctionFile(name, text, frozenset(calls))
    ordered: list[FunctionFile] = []
    placed: set[str] = set()
    while len(ordered) < len(found):
        ready = sorted(n for n, f in found.items() if n not in placed and f.calls <= placed)
        if not ready:
            circle = sorted(set(found) - placed)
            raise RuntimeError(f"sql/functions: these files call each other in a circle: {circle}")
        ordered.extend(found[n] for n in ready)
        placed.update(ready)
    return ordered


def load_queries() -> dict[str, LiteralString]:
    """Every named query: sql/queries.sql and, by concern, sql/queries_*.sql. A name defined in
    two files is an error, so a query has one home."""
    merged: dict[str, LiteralString] = {}
    names = sorted(
        entry.name
        for entry in resources.files("pg_pipeline.sql").iterdir()
        if re.fullmatch(r"queries(_[a-z0-9_]+)?\.sql", entry.name)
    )
    for filename in names:
        for name, body in parse_queries(sql_text(filename)).items():
            if name in merged:
                raise ValueError(f"query {name!r} is defined twice (again in {filename})")
            merged[name] = body
    return merged


@functools.cache
def queries_for(schema: str) -> dict[str, LiteralString]:
    """Every named query, for the installation in `schema` (a checked name)."""
    # The SQL is ours, and the schema's name a checked identifier: as literal as code.
    return {name: in_schema(sql, schema) for name, sql in load_queries().items()}


#: The named queries for this process's schema (configured_schema()). A connection made for
#: another schema (connect(schema=)) runs them against its own: see pipeline/db.py.
Q: dict[str, LiteralString] = queries_for(configured_schema())
