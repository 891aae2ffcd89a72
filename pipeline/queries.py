"""The named queries of sql/queries*.sql, parsed once at import."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import LiteralString, cast

_HEADER = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def sql_text(filename: str) -> str:
    return resources.files("pipeline.sql").joinpath(filename).read_text(encoding="utf-8")


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


def load_migrations() -> list[Migration]:
    folder = resources.files("pipeline.sql.migrations")
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = re.fullmatch(r"(\d{4})_([a-z0-9_]+)\.sql", entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migrations must be numbered 1..N without gaps, found {versions}")
    return found


def load_queries() -> dict[str, LiteralString]:
    """Every named query: sql/queries.sql and, by concern, sql/queries_*.sql. A name defined in
    two files is an error, so a query has one home."""
    merged: dict[str, LiteralString] = {}
    names = sorted(
        entry.name
        for entry in resources.files("pipeline.sql").iterdir()
        if re.fullmatch(r"queries(_[a-z0-9_]+)?\.sql", entry.name)
    )
    for filename in names:
        for name, body in parse_queries(sql_text(filename)).items():
            if name in merged:
                raise ValueError(f"query {name!r} is defined twice (again in {filename})")
            merged[name] = body
    return merged


Q: dict[str, LiteralString] = load_queries()
