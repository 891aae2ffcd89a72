"""The database a benchmark runs against: DATABASE_URL's, or a throwaway embedded one."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from pg_pipeline.embedded import embedded_url, stop_embedded


@contextlib.contextmanager
def benchmark_server(prefix: str) -> Iterator[str]:
    """DATABASE_URL, or an embedded server in a scratch directory (named from `prefix`) that
    is stopped and deleted when the block ends; yields its URL."""
    configured = os.environ.get("DATABASE_URL")
    if configured:
        yield configured
        return
    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield embedded_url(scratch / "pgdata")
    finally:
        stop_embedded(scratch / "pgdata")
        shutil.rmtree(scratch, ignore_errors=True)
