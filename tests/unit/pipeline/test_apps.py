"""Which apps a process loads: named ones only, from --app, PIPELINE_APP or the config file."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from pg_pipeline.apps import (
    APP_ENV,
    CONFIG_ENV,
    ENTRY_POINT_GROUP,
    AppError,
    app_names,
    app_settings,
    read_config,
)
from pg_pipeline.commands.api import CliError, load_apps
from pg_pipeline.stage import REGISTRY
from tests.support.paths import REPO


@pytest.fixture(autouse=True)
def no_app_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A current directory without config files, and no app settings in the environment."""
    monkeypatch.delenv(APP_ENV, raising=False)
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_flags_and_the_variable_name_the_apps_together_without_repeats(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(APP_ENV, "shop.billing, shop.stages")
    assert app_names(["shop.stages,documents", "shop.mail"]) == [
        "shop.stages",
        "documents",
        "shop.mail",
        "shop.billing",
    ]


def test_the_config_file_names_the_apps_only_when_nothing_else_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pipeline.toml").write_text('apps = ["documents", "shop.stages"]\n')
    assert app_names([]) == ["documents", "shop.stages"]
    assert app_names(["shop.mail"]) == ["shop.mail"]
    monkeypatch.setenv(APP_ENV, "shop.billing")
    assert app_names([]) == ["shop.billing"]


def test_pyproject_holds_the_settings_in_its_tool_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "shop"\n\n[tool.pg-pipeline]\napps = ["shop.stages"]\n'
    )
    config = read_config()
    assert config.apps == ("shop.stages",) and config.source == tmp_path / "pyproject.toml"


def test_an_installed_apps_table_is_its_own_to_read(tmp_path: Path) -> None:
    (tmp_path / "pipeline.toml").write_text('apps = ["documents"]\n[documents.review]\nx = 1\n')
    assert app_settings("documents") == ({"review": {"x": 1}}, tmp_path / "pipeline.toml")
    assert app_settings("shop") == ({}, tmp_path / "pipeline.toml")


def test_a_pyproject_without_the_table_configures_nothing(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "shop"\n')
    assert app_names([]) == []


def test_the_variable_points_at_a_config_file_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "ocr-workers.toml").write_text('apps = ["documents"]\n')
    (tmp_path / "pipeline.toml").write_text('apps = ["shop.stages"]\n')
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "deploy" / "ocr-workers.toml"))
    assert app_names([]) == ["documents"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('apps = ["documents"]\nconcurrency = 4\n', "unknown setting(s) concurrency"),
        ("apps = 3\n", "apps must be a list"),
        ('apps = ["documents", ""]\n', "apps must be a list"),
        ("apps = [", "cannot read"),
        ("documents = 3\n", "documents must be a table"),
    ],
)
def test_a_bad_config_file_is_refused_naming_it(tmp_path: Path, text: str, reason: str) -> None:
    (tmp_path / "pipeline.toml").write_text(text)
    with pytest.raises(AppError, match=r"pipeline\.toml") as caught:
        app_names([])
    assert reason in str(caught.value)


def test_an_installed_app_loads_by_its_entry_point_name() -> None:
    (documents,) = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == "documents"]
    assert load_apps(["documents"]) == ["documents"]
    assert documents.module in sys.modules
    assert {"upload", "ocr", "extract"} <= set(REGISTRY.names())


def test_an_unknown_app_names_the_installed_ones() -> None:
    with pytest.raises(CliError) as caught:
        load_apps(["documentz"])
    assert "cannot import app module 'documentz'" in str(caught.value)
    assert "installed app's name: documents" in str(caught.value)


def test_nothing_named_loads_no_app_not_even_an_installed_one(tmp_path: Path) -> None:
    # In a process of its own: this one may have loaded the documents app already.
    modules = [ep.module for ep in entry_points(group=ENTRY_POINT_GROUP)]
    assert modules
    script = (
        "import sys\n"
        "from pg_pipeline.commands.api import load_apps\n"
        "assert load_apps([]) == []\n"
        f"print([m for m in {modules!r} if m in sys.modules])\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
