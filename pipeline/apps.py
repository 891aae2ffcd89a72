"""Which apps a process loads, and loading them.

An app is what defines stages: a module of the user's (`shop.stages`), or an installed one named
by its entry point in the `pg_pipeline.apps` group (`documents`, the built-in document pipeline).
Nothing loads unless it is named, so a worker runs the stages it was given and no others:

1. every `--app` and the comma-separated `PIPELINE_APP`, together;
2. when they name none, `apps` in the config file: the file `PIPELINE_CONFIG` names, else
   `pipeline.toml` in the current directory (top-level keys), else the `[tool.pg-pipeline]`
   table of `pyproject.toml` there.

The same file holds an installed app's own settings, in a table named after it (`[documents]`),
which the app reads with `app_settings(name)`: the framework checks only that it is a table.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

from pg_pipeline.extras import MissingExtra, extra_of

__all__ = [
    "APP_ENV",
    "CONFIG_ENV",
    "ENTRY_POINT_GROUP",
    "AppError",
    "Config",
    "app_names",
    "app_settings",
    "load_apps",
    "read_config",
]

APP_ENV = "PIPELINE_APP"
CONFIG_ENV = "PIPELINE_CONFIG"
#: Installed apps announce themselves here; `--app NAME` loads the one called NAME.
ENTRY_POINT_GROUP = "pg_pipeline.apps"
CONFIG_FILE = "pipeline.toml"
PYPROJECT_TABLE = "pg-pipeline"  #: [tool.pg-pipeline] in pyproject.toml
CONFIG_KEYS = frozenset({"apps"})


class AppError(Exception):
    """An app that cannot be found or imported, or a config file that cannot be read."""


@dataclass(frozen=True)
class Config:
    """What the config file says, and where it was read (None: no file)."""

    apps: tuple[str, ...] = ()
    source: Path | None = None
    #: installed app name -> its table of settings (what app_settings returns)
    app_tables: dict[str, dict[str, Any]] = field(default_factory=dict)


def _split(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def read_config(cwd: Path | None = None) -> Config:
    """The config file's settings (see the module's doc for which file), or empty ones."""
    explicit = os.environ.get(CONFIG_ENV, "").strip()
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise AppError(f"{CONFIG_ENV} names {path}, which is not a file")
        return _parse(path, in_pyproject=path.name == "pyproject.toml")
    where = cwd or Path.cwd()
    if (where / CONFIG_FILE).is_file():
        return _parse(where / CONFIG_FILE, in_pyproject=False)
    if (where / "pyproject.toml").is_file():
        return _parse(where / "pyproject.toml", in_pyproject=True)
    return Config()


def _parse(path: Path, *, in_pyproject: bool) -> Config:
    # Imported where a file is read: every command imports this module (pipeline/commands/api.py),
    # and `pipeline status`, which reads no config file, need not pay for the TOML parser.
    import tomllib

    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise AppError(f"cannot read {path}: {exc}") from exc
    table: Any = document.get("tool", {}).get(PYPROJECT_TABLE) if in_pyproject else document
    where = f"{path} [tool.{PYPROJECT_TABLE}]" if in_pyproject else str(path)
    if table is None:  # a pyproject.toml without our table: no settings, not an error
        return Config()
    if not isinstance(table, dict):
        raise AppError(f"{where}: expected a table")
    installed = set(_installed())
    unknown = sorted(set(table) - CONFIG_KEYS - installed)
    if unknown:
        known = [*sorted(CONFIG_KEYS), *(f"[{name}]" for name in sorted(installed))]
        raise AppError(
            f"{where}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(known)}"
        )
    app_tables: dict[str, dict[str, Any]] = {}
    for name in sorted(set(table) & installed):
        if not isinstance(table[name], dict):
            raise AppError(f"{where}: {name} must be a table ([{name}]) of that app's settings")
        app_tables[name] = table[name]
    apps = table.get("apps", [])
    if isinstance(apps, str):
        apps = _split(apps)
    if not isinstance(apps, list) or not all(isinstance(a, str) and a.strip() for a in apps):
        raise AppError(f"{where}: apps must be a list of module or app names")
    return Config(tuple(a.strip() for a in apps), path, app_tables)


def app_settings(name: str) -> tuple[dict[str, Any], Path | None]:
    """The installed app `name`'s table of the config file (empty when there is none) and the
    file it was read from (None: no file), for the app's own errors. AppError for a file that
    cannot be read."""
    config = read_config()
    return config.app_tables.get(name, {}), config.source


def app_names(flags: Sequence[str]) -> list[str]:
    """The apps to load: --app (each may be comma-separated) and PIPELINE_APP, or else the
    config file's, without repeats."""
    names = [n for flag in flags for n in _split(flag)]
    names += _split(os.environ.get(APP_ENV, ""))
    if not names:
        names = list(read_config().apps)
    return list(dict.fromkeys(names))


def _installed() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load_apps(flags: Sequence[str]) -> list[str]:
    """Load the apps `app_names(flags)` names: an installed app by its entry point name, anything
    else as a module. Returns the names loaded."""
    if os.getcwd() not in sys.path:
        # Last, not first: `--app shop.stages` still resolves from the current directory, but a
        # folder there named like an installed package (`stages/` in a user's project,
        # `pipeline/` in a checkout) cannot shadow it.
        sys.path.append(os.getcwd())
    installed = _installed()
    names = app_names(flags)
    for name in names:
        ep = installed.get(name)
        try:
            if ep is not None:
                ep.load()
            else:
                importlib.import_module(name)
        except MissingExtra as exc:  # already the one line to show
            raise AppError(str(exc)) from None
        except ModuleNotFoundError as exc:
            # An app of ours whose extra is not installed: say which, not where it broke.
            extra = extra_of(exc.name)
            if extra is not None and ep is not None:
                raise AppError(str(MissingExtra(f"the {name} app", extra))) from None
            raise AppError(_cannot_import(name, exc, installed)) from exc
        except Exception as exc:
            raise AppError(_cannot_import(name, exc, installed)) from exc
    return names


def _cannot_import(name: str, exc: Exception, installed: dict[str, EntryPoint]) -> str:
    ep = installed.get(name)
    what = f"app {name!r} ({ep.value})" if ep is not None else f"app module {name!r}"
    hint = ""
    if isinstance(exc, ModuleNotFoundError) and exc.name == name.partition(".")[0]:
        known = ", ".join(sorted(installed)) or "none"
        hint = f" (an app is a module path, or an installed app's name: {known})"
    return f"cannot import {what}: {type(exc).__name__}: {exc}{hint}"
