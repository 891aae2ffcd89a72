"""`manage.py migrate` with pg_pipeline.contrib.django installed creates pg-pipeline's schema by
running pg-pipeline's own migrations, on the database PG_PIPELINE_DATABASE names."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection, connections, transaction
from django.test import override_settings

import tests.support.apps.jobs_app  # noqa: F401  registers the test stages
from pg_pipeline import enqueue
from pg_pipeline.queries import load_functions, load_migrations
from tests.support import pg
from tests.support.django_project import use_database

Conn = psycopg.Connection[Any]


@pytest.fixture
def empty_db(server_url: str) -> Iterator[str]:
    with pg.empty_database(server_url) as url:
        use_database(url)
        yield url
        connections.close_all()


def pipeline_versions(url: str) -> list[int]:
    with psycopg.connect(url) as conn:
        if conn.execute("SELECT to_regclass('pipeline.migrations')").fetchone() == (None,):
            return []
        return [r[0] for r in conn.execute("SELECT version FROM pipeline.migrations ORDER BY 1")]


def django_applied(url: str) -> list[tuple[str, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT app, name FROM django_migrations WHERE app = 'pg_pipeline'")
        return [(app, name) for app, name in rows]


def test_manage_py_migrate_creates_the_schema_with_pipelines_own_migrations(
    empty_db: str,
) -> None:
    call_command("migrate", verbosity=0)
    every = [m.version for m in load_migrations()]
    assert pipeline_versions(empty_db) == every
    assert django_applied(empty_db) == [("pg_pipeline", "0001_initial")]
    with transaction.atomic():  # and the queue takes jobs on Django's connection
        job_id = enqueue(connection, "noop", {"n": 1})
    with psycopg.connect(empty_db) as conn:
        assert conn.execute("SELECT type FROM pipeline.jobs WHERE id = %s", [job_id]).fetchone()
    call_command("migrate", verbosity=0)  # again: nothing to do, nothing breaks
    assert pipeline_versions(empty_db) == every


def test_migrate_brings_the_schema_up_to_date_after_an_upgrade_of_pipeline(
    empty_db: str,
) -> None:
    call_command("migrate", verbosity=0)
    changed = load_functions()[0]
    with psycopg.connect(empty_db) as conn:  # as if applied by an older pg-pipeline
        conn.execute(
            "UPDATE pipeline.functions SET sha256 = 'older' WHERE file = %s", [changed.file]
        )
    call_command("migrate", verbosity=0)  # no Django migration is pending, and still:
    with psycopg.connect(empty_db) as conn:
        row = conn.execute("SELECT sha256 FROM pipeline.functions WHERE file = %s", [changed.file])
        assert row.fetchone() == (changed.sha256,)


def test_migrate_leaves_a_database_the_setting_does_not_name_alone(empty_db: str) -> None:
    with override_settings(PG_PIPELINE_DATABASE="queue"):
        call_command("migrate", verbosity=0)
    assert pipeline_versions(empty_db) == []
    assert django_applied(empty_db) == [("pg_pipeline", "0001_initial")]


def test_the_app_has_no_model_changes_for_makemigrations_to_write(empty_db: str) -> None:
    # --check exits non-zero when a migration would be written (the app has no models).
    call_command("makemigrations", "pg_pipeline", check=True, dry_run=True, verbosity=0)
