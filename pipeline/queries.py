"""The named queries of sql/queries.sql, parsed once at import."""

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


Q: dict[str, LiteralString] = parse_queries(sql_text("queries.sql"))
