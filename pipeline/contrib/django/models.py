"""No models: pg-pipeline's tables are made by its own migrations, not by Django's ORM.

The module exists because Django sends post_migrate only for apps that have one, and that
signal is how `manage.py migrate` brings the schema up to date (see apps.py).
"""
