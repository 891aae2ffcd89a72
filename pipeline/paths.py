"""Where pg-pipeline keeps local state when nothing is configured."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """PIPELINE_HOME, else $XDG_DATA_HOME/pg-pipeline, else ~/.local/share/pg-pipeline.

    Created on first use."""
    configured = os.environ.get("PIPELINE_HOME")
    if configured:
        path = Path(configured).expanduser()
    else:
        xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
        path = Path(xdg) / "pg-pipeline"
    path.mkdir(parents=True, exist_ok=True)
    return path.resolve()
