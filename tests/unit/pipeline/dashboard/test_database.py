"""The dashboard's database settings, checked before any connection is made."""

from __future__ import annotations

import pytest

from pg_pipeline.dashboard.database import Database


def test_a_pool_size_or_statement_timeout_that_cannot_be_right_is_refused() -> None:
    dsn = "postgresql://nobody@127.0.0.1:1/none"
    with pytest.raises(ValueError, match="pool size"):
        Database(dsn, pool_size=0)
    with pytest.raises(ValueError, match="statement timeout"):
        Database(dsn, statement_timeout_s=0)
    assert Database(dsn, statement_timeout_s=0.25).timeout_ms == 250
