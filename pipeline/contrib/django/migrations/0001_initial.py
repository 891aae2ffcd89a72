"""Create pg-pipeline's schema by running pg-pipeline's own migrations (sql/ is their source).

Not atomic: pg-pipeline's migrate() runs in a transaction of its own, under its advisory lock,
and sets the search_path for that transaction, which must not outlast it into Django's.
Another app's migration that builds on the queue (a view over pipeline.jobs, say) depends on
("pg_pipeline", "0001_initial").
"""

from __future__ import annotations

from django.db import migrations

from pg_pipeline.contrib.django.schema import create_schema


class Migration(migrations.Migration):  # type: ignore[misc]  # Django ships no types
    initial = True
    atomic = False
    dependencies: list[tuple[str, str]] = []
    operations = [migrations.RunPython(create_schema, migrations.RunPython.noop, elidable=False)]
