"""Where pg-pipeline keeps local state when nothing is configured."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """PIPELINE_HOME, else $XDG_DATA_HOME/pg-pipeline, else ~/.local/share/pg-pipeline.

    Created on first use, readable by this user alone (0700): it holds the documents, the
    database and the logs. An existing directory keeps its mode, because it may be shared on
    purpose, and because as root the embedded server's own user must traverse it (its wheel
    widens it for that)."""
    configured = os.environ.get("PIPELINE_HOME")
    if configured:
        path = Path(configured).expanduser()
    else:
        xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
        path = Path(xdg) / "pg-pipeline"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path.resolve()
