"""A Django project in the test process: one app (pg-pipeline's), its `default` database
pointed at the test's own, before Django has connected to it."""

from __future__ import annotations

from psycopg.conninfo import conninfo_to_dict


def use_database(db_url: str) -> None:
    """Configure Django once per process; point `default` at `db_url`, disconnected."""
    import django
    from django.conf import settings
    from django.db import connections

    params = conninfo_to_dict(db_url)
    database = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": str(params.get("dbname", "")),
        "HOST": str(params.get("host", "")),
        "PORT": str(params.get("port", "")),
        "USER": str(params.get("user", "")),
        "PASSWORD": str(params.get("password", "")),
    }
    if not settings.configured:
        settings.configure(
            DATABASES={"default": database},
            INSTALLED_APPS=["pg_pipeline.contrib.django"],
            USE_TZ=True,
        )
        django.setup()
        return
    connections["default"].close()
    # The wrapper reads this very dict when it next connects.
    connections.settings["default"].update(database)
