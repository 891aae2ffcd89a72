"""The Django app: brings pg-pipeline's schema up to date after each `manage.py migrate`."""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class PipelineConfig(AppConfig):  # type: ignore[misc]  # Django ships no types
    name = "pg_pipeline.contrib.django"
    label = "pg_pipeline"  # "django" would clash with Django's own apps' labels
    verbose_name = "pg-pipeline"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The app's migration 0001 creates the schema; pg-pipeline's later versions bring
        # migrations of their own, applied here without a Django migration per version.
        post_migrate.connect(_migrate_after_django, sender=self)


def _migrate_after_django(sender: Any, using: str, plan: Any = None, **_: Any) -> None:
    from django.db import connections
    from django.db.migrations.recorder import MigrationRecorder

    from pg_pipeline.contrib.django.schema import apply_migrations

    recorder = MigrationRecorder(connections[using])
    if (PipelineConfig.label, "0001_initial") in recorder.applied_migrations():
        apply_migrations(connections[using])
