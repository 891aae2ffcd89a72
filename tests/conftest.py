from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from pg_pipeline.db import make_pool
from tests.support import pg

pytest.register_assert_rewrite("tests.support.s3_server")
# moto_s3_endpoint, aws_test_env, s3_bucket; pgbouncer
pytest_plugins = ["tests.support.s3_server", "tests.support.pgbouncer"]


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    # A short path: the embedded server's Unix socket lives in its data directory.
    scratch = Path(tempfile.mkdtemp(prefix="pgp-"))
    try:
        url = pg.server_url(scratch)
        pg.build_template(url)
        yield url
    finally:
        if not os.environ.get("DATABASE_URL") and (scratch / "pgdata").exists():
            pg.stop_server(scratch / "pgdata")
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture
def db_url(server_url: str) -> Iterator[str]:
    """A fresh, migrated database for this test alone."""
    with pg.cloned_database(server_url) as url:
        yield url


@pytest.fixture
def conn(db_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(db_url, autocommit=True) as c:
        yield c


@pytest.fixture
def pool(db_url: str) -> Iterator[ConnectionPool]:
    p = make_pool(db_url, max_size=8, name="pg-pipeline tests")
    try:
        yield p
    finally:
        p.close()
