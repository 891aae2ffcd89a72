"""pg-pipeline in a Django project: add "pg_pipeline.contrib.django" to INSTALLED_APPS.

`manage.py migrate` then creates pg-pipeline's schema (its tables, views and functions, in the
`pipeline` schema, beside Django's own) by running pg-pipeline's migrations, and brings it up
to date after an upgrade of pg-pipeline. Enqueue on Django's connection, in its transaction:

    with transaction.atomic():
        order = Order.objects.create(...)
        pg_pipeline.enqueue(connection, "invoice", {"order_id": order.pk})

Setting: PG_PIPELINE_DATABASE, the alias of the database that holds the queue ("default").
"""

from __future__ import annotations

from typing import Any

#: The settings name of the alias of the database that holds pg-pipeline's schema.
DATABASE_SETTING = "PG_PIPELINE_DATABASE"


def database_alias() -> str:
    """PG_PIPELINE_DATABASE, else "default"."""
    from django.conf import settings

    alias = getattr(settings, DATABASE_SETTING, "default")
    if not isinstance(alias, str):
        raise TypeError(f"{DATABASE_SETTING} must be a database alias (a str), not {alias!r}")
    return alias


def connection() -> Any:
    """The Django connection of PG_PIPELINE_DATABASE, for enqueue(): `connections[alias]`."""
    from django.db import connections

    return connections[database_alias()]
