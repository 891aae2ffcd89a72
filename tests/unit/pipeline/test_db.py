"""How a database is named in messages."""

from __future__ import annotations

from pg_pipeline.db import describe


def test_describe_names_the_host_and_hides_the_password() -> None:
    text = describe("postgresql://app:s3cret@db.internal:6543/shop")
    assert text == "db.internal:6543/shop" and "s3cret" not in text
